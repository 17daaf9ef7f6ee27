"""Which diagnostics an edit introduced: the delta against the file's diagnostics before it.

Invariants:
- Only errors and warnings count; information and hints are never reported.
- A diagnostic is "the same" before and after when its severity, code, message and source
  match and so does the text of the line it starts on (not its line number: an edit above
  it moves it, it does not make it new). Matching is by count, so a second identical error
  on an identical line is new.
- Without a baseline (the servers' diagnostics before the edit did not come in time) only
  the diagnostics on lines the edit added or changed are reported: a pre-existing warning
  elsewhere in the file is never reported as new.
- The result is ordered errors first, then by path, line and column.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence

from ..core.code_intel import Diagnostic

__all__ = ["changed_lines", "new_diagnostics", "ordered"]

_REPORTED = ("error", "warning")
_KeyLine = tuple[str, str | None, str, str | None, str]


def new_diagnostics(
    before: Sequence[Diagnostic] | None,
    after: Sequence[Diagnostic],
    before_text: str | None,
    after_text: str,
) -> list[Diagnostic]:
    """The errors and warnings in `after` that `before` did not have (see the module doc)."""
    current = [d for d in after if d.severity in _REPORTED]
    if before is None and before_text is not None:
        touched = changed_lines(before_text, after_text)
        return ordered(d for d in current if d.line in touched)
    lines_before = (before_text or "").split("\n")
    lines_after = after_text.split("\n")
    remaining = Counter(_key(d, lines_before) for d in before or () if d.severity in _REPORTED)
    found: list[Diagnostic] = []
    for diagnostic in current:
        key = _key(diagnostic, lines_after)
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            found.append(diagnostic)
    return ordered(found)


def changed_lines(before_text: str, after_text: str) -> set[int]:
    """1-based lines of `after_text` that the edit added or changed."""
    matcher = difflib.SequenceMatcher(
        None, before_text.split("\n"), after_text.split("\n"), autojunk=False
    )
    touched: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            touched.update(range(j1 + 1, j2 + 1))
    return touched


def ordered(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    rank = {"error": 0, "warning": 1, "information": 2, "hint": 3}
    return sorted(diagnostics, key=lambda d: (rank[d.severity], d.path, d.line, d.column))


def _key(diagnostic: Diagnostic, lines: list[str]) -> _KeyLine:
    index = diagnostic.line - 1
    text = lines[index].strip() if 0 <= index < len(lines) else ""
    return (diagnostic.severity, diagnostic.code, diagnostic.message, diagnostic.source, text)
