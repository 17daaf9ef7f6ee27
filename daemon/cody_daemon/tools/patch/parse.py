"""Parse the Codex `*** Begin Patch` format into file operations (no file system access).

Grammar (Codex's, with the leniencies listed below)::

    Patch      := "*** Begin Patch" { FileOp } "*** End Patch"
    FileOp     := AddFile | DeleteFile | UpdateFile
    AddFile    := "*** Add File: " path { "+" line }
    DeleteFile := "*** Delete File: " path
    UpdateFile := "*** Update File: " path ( MoveTo { Hunk } | Hunk { Hunk } )
    MoveTo     := "*** Move to: " path
    Hunk       := { "@@" [ context ] } { (" " | "-" | "+") line } [ "*** End of File" ]

Invariants:
- Line numbers in errors and on parsed objects are 1-based and count lines of the text the
  model sent (before any heredoc wrapper or blank lines are stripped).
- Patch lines are split on "\\n" only (a trailing "\\r" is dropped), never on other Unicode
  line separators, so a line's content reaches the file exactly as written.
- Every update hunk has at least one body line, and only the first hunk of a file may omit
  its `@@` marker. An Update File has at least one hunk unless it moves the file (a pure
  rename, which Codex rejects).

Leniencies (as Codex, or beyond it where models commonly slip): leading/trailing blank lines
and whitespace around markers; a heredoc wrapper (`<<'EOF'` ... `EOF`, optionally preceded by
`apply_patch`); blank lines between file operations; several `@@ <context>` lines in a row
(each is sought in turn, as Codex's instructions describe); a unified-diff range header
(`@@ -1,3 +1,4 @@ text`) is read as `@@ text`; `\\ No newline at end of file` lines are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "AddFile",
    "DeleteFile",
    "FileOp",
    "Hunk",
    "PatchParseError",
    "UpdateFile",
    "parse_patch",
]

BEGIN_MARKER = "*** Begin Patch"
END_MARKER = "*** End Patch"
ADD_MARKER = "*** Add File:"
DELETE_MARKER = "*** Delete File:"
UPDATE_MARKER = "*** Update File:"
MOVE_MARKER = "*** Move to:"
EOF_MARKER = "*** End of File"

_HEREDOC_START = re.compile(
    r"^\s*(?:apply_?patch\s+)?<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1\s*$"
)
_UNIFIED_RANGE = re.compile(r"^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@\s?(.*)$")
_HEADERS = "'*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>'"


class PatchParseError(ValueError):
    """The patch text is not in the format; `line` is the 1-based line at fault (if any)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"invalid patch: {where}{message}")
        self.message = f"invalid patch: {where}{message}"
        self.line = line


@dataclass(frozen=True, slots=True)
class Hunk:
    """One change inside an Update File: replace `old_lines` by `new_lines`."""

    line: int
    """Patch line where the hunk starts (its first `@@` or body line)."""
    contexts: tuple[str, ...]
    """`@@ <context>` lines, sought in order before `old_lines`; empty for a bare `@@`."""
    old_lines: tuple[str, ...]
    """Context and removed lines, in order: what the file must contain."""
    new_lines: tuple[str, ...]
    """Context and added lines, in order: what replaces `old_lines`."""
    end_of_file: bool
    """`*** End of File` followed: `old_lines` must be the last lines of the file."""
    body: tuple[str, ...]
    """The hunk's body lines as written (with their ' ', '-', '+' markers), for messages."""


@dataclass(frozen=True, slots=True)
class AddFile:
    path: str
    contents: str
    """Every `+` line with a "\\n" after it."""
    line: int


@dataclass(frozen=True, slots=True)
class DeleteFile:
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class UpdateFile:
    path: str
    move_to: str | None
    hunks: tuple[Hunk, ...]
    line: int


FileOp = AddFile | DeleteFile | UpdateFile


def parse_patch(text: str) -> list[FileOp]:
    """Parse `text` into its file operations, in patch order.

    Raises PatchParseError naming the line and what was expected there.
    """
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    bounds = _content_bounds(lines, 0, len(lines))
    if bounds is None:
        raise PatchParseError(
            f"the patch is empty; it must start with '{BEGIN_MARKER}' and end with '{END_MARKER}'"
        )
    first, last = bounds
    if lines[first].strip() != BEGIN_MARKER:
        unwrapped = _unwrap_heredoc(lines, first, last)
        if unwrapped is None:
            raise PatchParseError(
                f"expected '{BEGIN_MARKER}' as the first line, got '{_clip(lines[first])}'",
                first + 1,
            )
        first, last = unwrapped
    if lines[last].strip() != END_MARKER or last == first:
        raise PatchParseError(
            f"expected '{END_MARKER}' as the last line, got '{_clip(lines[last])}'", last + 1
        )
    return _Parser(lines, first + 1, last).parse()


def _content_bounds(lines: list[str], start: int, stop: int) -> tuple[int, int] | None:
    """First and last non-blank line in lines[start:stop], or None if all are blank."""
    filled = [i for i in range(start, stop) if lines[i].strip()]
    return (filled[0], filled[-1]) if filled else None


def _unwrap_heredoc(lines: list[str], first: int, last: int) -> tuple[int, int] | None:
    """Bounds of the patch inside `<<'EOF'` ... `EOF`, or None when there is no wrapper."""
    match = _HEREDOC_START.match(lines[first])
    if match is None or last == first or lines[last].strip() != match.group(2):
        return None
    inner = _content_bounds(lines, first + 1, last)
    if inner is None or lines[inner[0]].strip() != BEGIN_MARKER:
        return None
    return inner


def _clip(line: str, limit: int = 80) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _path_after(marker: str, line: str, number: int) -> str:
    path = line.strip()[len(marker) :].strip()
    if not path:
        raise PatchParseError(f"'{marker}' needs a path after it", number)
    return path


class _Parser:
    """Walks the lines between the Begin and End markers (indices [pos, stop))."""

    def __init__(self, lines: list[str], pos: int, stop: int) -> None:
        self.lines = lines
        self.pos = pos
        self.stop = stop

    def parse(self) -> list[FileOp]:
        ops: list[FileOp] = []
        while self.pos < self.stop:
            line = self.lines[self.pos]
            stripped = line.strip()
            number = self.pos + 1
            if not stripped:
                self.pos += 1
            elif stripped.startswith(ADD_MARKER):
                ops.append(self._add(_path_after(ADD_MARKER, line, number), number))
            elif stripped.startswith(DELETE_MARKER):
                ops.append(DeleteFile(_path_after(DELETE_MARKER, line, number), number))
                self.pos += 1
            elif stripped.startswith(UPDATE_MARKER):
                ops.append(self._update(_path_after(UPDATE_MARKER, line, number), number))
            else:
                hint = ""
                if line.startswith(("+", "-", " ", "@@")):
                    hint = (
                        " (a hunk line outside an Update File section; every line of an added"
                        " file must start with '+')"
                    )
                raise PatchParseError(
                    f"expected a file operation ({_HEADERS}), got '{_clip(line)}'{hint}", number
                )
        return ops

    def _add(self, path: str, number: int) -> AddFile:
        self.pos += 1
        contents: list[str] = []
        while self.pos < self.stop and self.lines[self.pos].startswith("+"):
            contents.append(self.lines[self.pos][1:] + "\n")
            self.pos += 1
        return AddFile(path=path, contents="".join(contents), line=number)

    def _update(self, path: str, number: int) -> UpdateFile:
        self.pos += 1
        move_to: str | None = None
        if self.pos < self.stop and self.lines[self.pos].strip().startswith(MOVE_MARKER):
            move_to = _path_after(MOVE_MARKER, self.lines[self.pos], self.pos + 1)
            self.pos += 1
        hunks: list[Hunk] = []
        while self.pos < self.stop:
            line = self.lines[self.pos]
            if not line.strip():
                self.pos += 1  # blank lines between hunks
                continue
            if line.startswith("*"):
                break  # the next file operation (or a stray marker the caller reports)
            hunks.append(self._hunk(path, first=not hunks))
        if not hunks and move_to is None:
            raise PatchParseError(
                f"'{UPDATE_MARKER} {path}' has no hunks; add '@@' followed by lines starting "
                "with ' ' (context), '-' (removed) or '+' (added)",
                number,
            )
        return UpdateFile(path=path, move_to=move_to, hunks=tuple(hunks), line=number)

    def _hunk(self, path: str, *, first: bool) -> Hunk:
        start = self.pos + 1
        contexts: list[str] = []
        marked = False
        while self.pos < self.stop and self.lines[self.pos].startswith("@@"):
            marked = True
            context = _context_of(self.lines[self.pos])
            if context is not None:
                contexts.append(context)
            self.pos += 1
        if not marked and not first:
            raise PatchParseError(
                f"expected '@@' to start the next hunk of {path}, got "
                f"'{_clip(self.lines[self.pos])}'",
                start,
            )
        old: list[str] = []
        new: list[str] = []
        body: list[str] = []
        end_of_file = False
        while self.pos < self.stop:
            line = self.lines[self.pos]
            if line.strip() == EOF_MARKER:
                if not body:
                    raise PatchParseError(
                        f"'{EOF_MARKER}' must follow the lines of a hunk", self.pos + 1
                    )
                end_of_file = True
                self.pos += 1
                break
            marker, text = line[:1], line[1:]
            if marker in ("", " "):
                old.append(text)
                new.append(text)
            elif marker == "-":
                old.append(text)
            elif marker == "+":
                new.append(text)
            elif line.startswith("\\"):
                self.pos += 1  # "\ No newline at end of file" from a unified diff
                continue
            elif not body:
                raise PatchParseError(
                    f"unexpected line in a hunk of {path}: '{_clip(line)}'; every hunk line "
                    "must start with ' ' (context), '-' (removed) or '+' (added)",
                    self.pos + 1,
                )
            else:
                break  # the next hunk or file operation
            body.append(line)
            self.pos += 1
        if not body:
            raise PatchParseError(f"a hunk of {path} has no lines after its '@@'", start)
        return Hunk(
            line=start,
            contexts=tuple(contexts),
            old_lines=tuple(old),
            new_lines=tuple(new),
            end_of_file=end_of_file,
            body=tuple(body),
        )


def _context_of(line: str) -> str | None:
    """The context of an `@@` line: None for a bare `@@` (or a bare unified range header)."""
    rest = line[2:]
    rest = rest.removeprefix(" ")
    unified = _UNIFIED_RANGE.match(rest)
    if unified is not None:
        rest = unified.group(1)
    return rest if rest.strip() else None
