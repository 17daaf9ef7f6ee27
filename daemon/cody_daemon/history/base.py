"""What every source parser implements (one module per source, see `parsers.py`).

A parser is fed one decoded JSON line at a time and appends the messages it makes to the
current chunk's list. Invariants the paging relies on (paging.py):
- feeding the same lines after `restore(snapshot())` produces the same messages, so a page
  can restart at any chunk start with only that small state;
- messages in the current chunk may still be changed (usage attached, split lines merged)
  until `end_chunk`; after it the parser holds no reference to them;
- `feed` returns False for a line it could not use (unknown type, wrong shape): the caller
  counts it as skipped. Known lines that carry no message return True.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .model import Msg

__all__ = ["Parser"]


class Parser(ABC):
    agent: str
    format: str

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.started_at: str | None = None
        self.title: str | None = None
        """A title the source itself stores (Claude Code `summary` / `custom-title` lines)."""

    @abstractmethod
    def feed(self, line: int, obj: dict[str, Any], out: list[Msg]) -> bool:
        """Use one line; False when it was not understood (counted as skipped)."""

    def boundary(self, obj: dict[str, Any]) -> bool:
        """Whether a new turn starts at this line (a chunk may end just before it)."""
        return False

    def settled(self) -> bool:
        """Whether a chunk may end here without splitting something still being assembled."""
        return True

    def end_chunk(self, out: list[Msg], *, eof: bool) -> None:  # noqa: B027 - optional hook
        """Finish what is pending into `out` and forget the chunk's messages."""

    def snapshot(self) -> dict[str, Any]:
        """The small state a chunk start needs (JSON-ready)."""
        return {}

    def restore(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Resume from `snapshot()`."""

    def note_time(self, timestamp: Any) -> None:
        if self.started_at is None and isinstance(timestamp, str):
            self.started_at = timestamp


def text_of(value: Any) -> str:
    """A string value, or "" for anything else."""
    return value if isinstance(value, str) else ""
