"""Reading the project's files for the language servers (and the `symbols` answers).

A file a server holds, the model names or a server's answer points to is project content: a
command or a cloned repository may have made it a FIFO, a link to `/dev/zero` or a huge file.
Every read here goes through core/safe_read.py: regular files only, opened without blocking,
and at most `SOURCE_LIMIT` bytes (a larger file is not sent to a server). Refusals are
`OSError`s whose `strerror` says what was found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ..core.safe_read import open_regular, read_regular

__all__ = ["SOURCE_LIMIT", "line_of", "read_source"]

SOURCE_LIMIT: Final = 4 * 1024 * 1024
"""The largest file sent to a language server (source files are a few hundred KiB at most)."""


def read_source(path: Path) -> str:
    """The file's text (undecodable bytes replaced); OSError when it cannot be read here."""
    return read_regular(path, SOURCE_LIMIT).decode("utf-8", "replace")


def line_of(path: Path, line: int) -> str:
    """Line `line` (0-based) of the file, stripped and cut to 200 characters; "" when the
    file cannot be read or is shorter (at most its first `SOURCE_LIMIT` characters are read)."""
    try:
        fd = open_regular(path)
    except OSError:
        return ""
    with open(fd, encoding="utf-8", errors="replace", closefd=True) as handle:
        lines = handle.read(SOURCE_LIMIT).splitlines()
    return lines[line].strip()[:200] if 0 <= line < len(lines) else ""
