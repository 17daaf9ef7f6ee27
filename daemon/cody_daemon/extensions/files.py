"""Finding and reading extension files (commands, skills, hook files) without trusting them.

A `Place` is one directory to look in, with the rules of its origin: a user's own directory
(`~/.claude/commands`) may be a symlink anywhere; a project's (`.claude/commands` in a cloned
repository) is looked into, and its files read, only where their real paths lie inside the
project root (`Place.root`).

Invariants:
- a listing is bounded (`MAX_ENTRIES` names per directory, in name order, so the same
  directory always gives the same result), and only names are looked at: nothing is opened
  while listing;
- every read goes through core/safe_read.py `read_head`: regular files only, at most the
  given number of bytes, a project's file only inside the project;
- text is UTF-8 without NUL bytes; anything else is an `UnreadableFile` naming why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ..core.safe_read import inside, read_head

__all__ = [
    "MAX_ENTRIES",
    "Origin",
    "Place",
    "Scope",
    "UnreadableFile",
    "list_dir",
    "read_text",
]

MAX_ENTRIES: Final = 1000
"""Names looked at per directory: a repository with more files there gets the first ones."""

Scope = Literal["user", "project"]
Origin = Literal["cody", "claude", "codex", "agents"]
"""Whose format a file is in (which numbering a command's arguments use)."""


class UnreadableFile(Exception):
    """A file that cannot be used: not UTF-8 text, or a read error."""


@dataclass(frozen=True, slots=True)
class Place:
    directory: Path
    scope: Scope
    origin: Origin
    root: str | None = None
    """A project's real root: files outside it are not read (None: a user's directory)."""

    def usable(self) -> bool:
        """The directory exists and (for a project) really lies inside the project."""
        if not self.directory.is_dir():
            return False
        return self.root is None or inside(os.path.realpath(self.directory), self.root)


def list_dir(directory: Path) -> list[os.DirEntry[str]]:
    """The directory's entries, sorted by name, at most `MAX_ENTRIES` (none when it cannot be
    listed)."""
    try:
        with os.scandir(directory) as entries:
            found = []
            for entry in entries:
                found.append(entry)
                if len(found) >= MAX_ENTRIES:
                    break
    except OSError:
        return []
    return sorted(found, key=lambda entry: entry.name)


def read_text(path: Path, limit: int, root: str | None) -> str:
    """At most `limit` bytes of the file as text (a multi-byte character cut at the end is
    dropped). Raises UnreadableFile."""
    try:
        data = read_head(path, limit, root=root)
    except OSError as exc:
        raise UnreadableFile(exc.strerror or type(exc).__name__) from None
    if b"\0" in data:
        raise UnreadableFile("not text (binary)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and len(data) >= limit:
            return data[: exc.start].decode("utf-8", errors="strict")
        raise UnreadableFile("not UTF-8 text") from None
