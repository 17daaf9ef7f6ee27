"""The stderr of the daemons a test started, shown in the report when the test fails.

`tests/support/daemon.py` (`Daemon`) and `warm_daemon.py` (`WarmDaemon`) register the list
their daemon's stderr lines go to (`watch`); the hook in tests/conftest.py adds the last
`TAIL_LINES` of each to a failing test's report ("daemon stderr (pid N)"), so an error such
as "Internal error (KeyError); see the daemon log" comes with that log. The list is emptied
around every test.
"""

from __future__ import annotations

__all__ = ["TAIL_LINES", "forget", "sections", "watch"]

TAIL_LINES = 80

_watched: list[tuple[str, list[str]]] = []


def watch(label: str, lines: list[str]) -> None:
    """Show `lines` (kept growing by the caller) if the running test fails."""
    _watched.append((label, lines))


def forget() -> None:
    _watched.clear()


def sections() -> list[tuple[str, str]]:
    """(title, text) per watched daemon that wrote anything: its last TAIL_LINES lines."""
    found = []
    for label, lines in _watched:
        if not lines:
            continue
        tail = lines[-TAIL_LINES:]
        cut = f"(last {len(tail)} of {len(lines)} lines)" if len(lines) > len(tail) else ""
        found.append((f"{label} stderr {cut}".rstrip(), "\n".join(tail)))
    return found
