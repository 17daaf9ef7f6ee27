"""Apply parsed hunks to text, in memory only (the file system is never touched here).

Locating a hunk (`seek`) tries four passes, in Codex's order, each over every candidate
position before the next, looser, pass: exact; ignoring trailing whitespace; ignoring
leading and trailing whitespace; and finally with typographic punctuation normalised (curly
quotes, Unicode dashes and non-breaking/odd spaces compared as their ASCII forms).

Invariants:
- Hunks apply in patch order. Each search starts where the previous hunk's old lines ended
  (or after its last `@@` context line), so a repeated block resolves to the occurrence the
  preceding context and order point to, and two hunks never overlap.
- `*** End of File` anchors the old lines at the end of the file (trailing blank lines of
  the file may follow them).
- An `@@ <context>` line is sought like one old line and, failing that (beyond Codex), as
  the start of a line (`@@ def f` finds `def f(x):`); the hunk's lines must come after it.
- A hunk without old lines inserts right after its `@@` context, or at the end of the file
  when it has none (as Codex).
- Line endings are kept: a file whose every newline is CRLF is split and joined on CRLF; a
  UTF-8 BOM is kept; a file without a trailing newline keeps lacking one (the text is the
  lines joined by the newline, so a patch adds one only by making the last line empty).
- Lines a hunk keeps as context are written as they are in the file, never as the patch
  spells them (so a fuzzy match cannot rewrite curly quotes or whitespace of unchanged
  lines); when the old lines matched only with a consistent indentation shift, added lines
  get the same shift. Both go beyond Codex, which writes the patch's text as is.
- On failure `HunkError` says which hunk did not match, why, and the likeliest cause (the
  lines exist earlier, the change looks already applied, or where the closest match
  diverges), so the model can correct its patch instead of retrying blindly.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .parse import Hunk

__all__ = ["HunkError", "TextLayout", "apply_hunks", "join_lines", "seek", "split_lines"]

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000",
            " ",
        ),
    }
)


def _normalise(line: str) -> str:
    return line.strip().translate(_PUNCTUATION).strip()


_PASSES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exact", lambda line: line),
    ("ignoring trailing whitespace", str.rstrip),
    ("ignoring leading and trailing whitespace", str.strip),
    ("with normalised punctuation", _normalise),
)
_SHOWN_LINES = 3


class HunkError(ValueError):
    """A hunk could not be located; `message` is written for the model."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class TextLayout:
    """How a file's lines were delimited, so joining restores the same bytes."""

    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False


def split_lines(text: str) -> tuple[list[str], TextLayout]:
    """Lines of `text` (without terminators) and the layout `join_lines` needs."""
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    if not text:
        return [], TextLayout(bom=bom)
    newlines = text.count("\n")
    newline = "\r\n" if newlines and text.count("\r\n") == newlines else "\n"
    lines = text.split(newline)
    final_newline = lines[-1] == ""
    if final_newline:
        lines.pop()
    return lines, TextLayout(newline=newline, final_newline=final_newline, bom=bom)


def join_lines(lines: Sequence[str], layout: TextLayout) -> str:
    text = layout.newline.join(lines)
    if lines and layout.final_newline:
        text += layout.newline
    return ("\ufeff" if layout.bom else "") + text


def seek(
    lines: Sequence[str], pattern: Sequence[str], start: int, *, end_of_file: bool = False
) -> tuple[int, str] | None:
    """Index of the first match of `pattern` in lines[start:] and the pass that found it.

    With `end_of_file`, only positions that end the file (but for trailing blank lines) are
    candidates. An empty pattern matches at `start`.
    """
    count = len(pattern)
    if count == 0:
        return start, "exact"
    last = len(lines) - count
    if end_of_file:
        tail = len(lines)
        while tail > 0 and not lines[tail - 1].strip():
            tail -= 1
        candidates = range(last, max(start, tail - count) - 1, -1)
    else:
        candidates = range(start, last + 1)
    for name, key in _PASSES:
        wanted = [key(line) for line in pattern]
        for index in candidates:
            if all(key(lines[index + offset]) == wanted[offset] for offset in range(count)):
                return index, name
    return None


def _seek_context(lines: Sequence[str], context: str, start: int) -> tuple[int, str] | None:
    """An `@@` context line: a whole line by the four passes, else the first line that
    starts with it (models often write `@@ def f` for `def f(x):`)."""
    found = seek(lines, [context], start)
    if found is None:
        prefix = _normalise(context)
        for index in range(start, len(lines)):
            if _normalise(lines[index]).startswith(prefix):
                return index, "as a line prefix"
    return found


def apply_hunks(text: str, hunks: Sequence[Hunk], label: str) -> str:
    """`text` with every hunk applied; raises HunkError (naming `label`) if one fails."""
    lines, layout = split_lines(text)
    edits: list[tuple[int, int, Sequence[str]]] = []
    cursor = 0
    for number, hunk in enumerate(hunks, start=1):
        where = (hunk, number, len(hunks), label)
        for context in hunk.contexts:
            found = _seek_context(lines, context, cursor)
            if found is None:
                raise _failure(
                    *where,
                    f"the context line '@@ {context}' was not found {_after(cursor)}."
                    + _hint_context(lines, context, cursor),
                )
            cursor = found[0] + 1
        body = list(hunk.body)
        old = _old_of(body)
        if not old:
            at = cursor if hunk.contexts and not hunk.end_of_file else len(lines)
            edits.append((at, 0, [line[1:] for line in body]))
            continue
        found = seek(lines, old, cursor, end_of_file=hunk.end_of_file)
        while found is None and len(old) > 1 and _is_blank_context(body[-1]):
            # A blank line closing the hunk (often just the patch's own spacing) may be absent.
            body.pop()
            old = _old_of(body)
            found = seek(lines, old, cursor, end_of_file=hunk.end_of_file)
        if found is None:
            raise _failure(
                *where,
                f"its context and removed lines were not found {_after(cursor)}"
                f"{' at the end of the file' if hunk.end_of_file else ''}."
                + _hint_hunk(lines, hunk, cursor),
            )
        at = found[0]
        edits.append((at, len(old), _replacement(body, lines[at : at + len(old)], old)))
        cursor = at + len(old)
    edits.sort(key=lambda edit: edit[0])
    result: list[str] = []
    position = 0
    for at, removed, added in edits:
        result.extend(lines[position:at])
        result.extend(added)
        position = max(position, at + removed)
    result.extend(lines[position:])
    return join_lines(result, layout)


def _old_of(body: Sequence[str]) -> list[str]:
    """The lines a hunk body expects in the file: its context and removed lines."""
    return [line[1:] for line in body if not line.startswith("+")]


def _is_blank_context(line: str) -> bool:
    return not line.startswith(("+", "-")) and not line.strip()


def _replacement(body: Sequence[str], matched: Sequence[str], old: Sequence[str]) -> list[str]:
    """The lines replacing `matched` (the file's lines that `old` was found at).

    Context lines keep the file's own text (a fuzzy match never rewrites unchanged lines);
    added lines get the indentation shift, if any, that turns `old` into `matched`.
    """
    shift = _indent_shift(old, matched)
    result: list[str] = []
    index = 0
    for line in body:
        if line.startswith("+"):
            result.append(shift(line[1:]))
        else:
            if not line.startswith("-"):
                result.append(matched[index])
            index += 1
    return result


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _indent_shift(old: Sequence[str], matched: Sequence[str]) -> Callable[[str], str]:
    """A re-indenter for added lines when every non-blank matched line differs from the
    patch's line by the same leading prefix (added or removed); else the identity."""
    pairs = [(_leading(o), _leading(m)) for o, m in zip(old, matched, strict=True) if o.strip()]
    if not pairs or all(o == m for o, m in pairs):
        return lambda line: line
    if all(m.endswith(o) for o, m in pairs):
        extras = {m[: len(m) - len(o)] for o, m in pairs}
        if len(extras) == 1:
            extra = extras.pop()
            return lambda line: extra + line if line.strip() else line
    if all(o.endswith(m) for o, m in pairs):
        surplus = {o[: len(o) - len(m)] for o, m in pairs}
        if len(surplus) == 1:
            cut = surplus.pop()
            return lambda line: line.removeprefix(cut)
    return lambda line: line


def _failure(hunk: Hunk, number: int, total: int, label: str, reason: str) -> HunkError:
    """The error for a hunk that did not apply: which one, why, and how it starts."""
    old_body = [line for line in hunk.body if not line.startswith("+")] or list(hunk.body)
    shown = [f"@@ {context}" for context in hunk.contexts] + old_body[:_SHOWN_LINES]
    if len(old_body) > _SHOWN_LINES:
        shown.append("...")
    excerpt = "\n".join(f"    {line}" for line in shown)
    return HunkError(
        f"{label}: hunk {number} of {total} (patch line {hunk.line}) did not apply: {reason}\n"
        f"  The hunk starts:\n{excerpt}\n"
        "  Re-read the file and send a corrected patch; no file was changed."
    )


def _after(cursor: int) -> str:
    return "in the file" if cursor == 0 else f"after line {cursor} of the file"


def _hint_context(lines: Sequence[str], context: str, cursor: int) -> str:
    earlier = _seek_context(lines[:cursor], context, 0)
    if earlier is not None:
        return (
            f" It appears at line {earlier[0] + 1}, before the previous hunk: hunks must be "
            "in file order."
        )
    return _closest_line(lines, context)


def _hint_hunk(lines: Sequence[str], hunk: Hunk, cursor: int) -> str:
    old, new = list(hunk.old_lines), list(hunk.new_lines)
    if hunk.end_of_file:
        elsewhere = seek(lines, old, cursor)
        if elsewhere is not None:
            return (
                f" They are at line {elsewhere[0] + 1}, which is not the end of the file; "
                "drop '*** End of File' or extend the hunk to the end."
            )
    earlier = seek(lines, old, 0)
    if earlier is not None and earlier[0] < cursor:
        return (
            f" They appear at line {earlier[0] + 1}, before the previous hunk or '@@' "
            "context: hunks must be in file order, and an '@@' line must come before its "
            "lines."
        )
    distinctive = len(new) >= 2 or (len(new) == 1 and len(new[0].strip()) >= 8)
    applied = seek(lines, new, 0) if new != old and distinctive else None
    if applied is not None:
        return (
            f" The hunk's new lines are already present at line {applied[0] + 1}: this "
            "change may have been applied already."
        )
    return _divergence(lines, old, cursor)


def _divergence(lines: Sequence[str], old: Sequence[str], cursor: int) -> str:
    """Where the longest partial match of `old` (whitespace-insensitive) stops matching."""
    best_at, best_len = -1, 0
    wanted = [_normalise(line) for line in old]
    have = [_normalise(line) for line in lines]
    for at in range(cursor, len(lines)):
        length = 0
        while (
            length < len(old) and at + length < len(lines) and have[at + length] == wanted[length]
        ):
            length += 1
        if length > best_len:
            best_at, best_len = at, length
    if best_len >= len(old):
        return ""
    if best_len == 0 or (best_len == 1 and not wanted[0]):
        first = next((line for line in old if line.strip()), None)
        return _closest_line(lines, first) if first is not None else ""
    expected = old[best_len]
    mismatch = best_at + best_len
    found = (
        f"line {mismatch + 1} is '{lines[mismatch]}'"
        if mismatch < len(lines)
        else ("the file ends there")
    )
    return (
        f" Its first {best_len} line(s) match at line {best_at + 1}, but then the hunk "
        f"expects '{expected}' where {found}."
    )


def _closest_line(lines: Sequence[str], wanted: str) -> str:
    best_at, best_ratio = -1, 0.6
    target = wanted.strip()
    for at, line in enumerate(lines):
        candidate = line.strip()
        if not candidate:
            continue
        matcher = difflib.SequenceMatcher(None, target, candidate, autojunk=False)
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_at, best_ratio = at, ratio
    if best_at < 0:
        return ""
    return f" The closest line to '{target}' is line {best_at + 1}: '{lines[best_at]}'."
