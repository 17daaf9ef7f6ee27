"""The editor's files: how file tools read and write through the client (ACP `fs/*`).

When the client declared `fs.readTextFile` / `fs.writeTextFile`, the engine puts an
`EditorFiles` in `ToolContext.files`; readFile, writeFile and applyPatch then read the
editor's view of a file (unsaved buffers included) and write through it (the editor owns
undo and reloads). Every decision stays the daemon's: paths are resolved to real paths and
checked (sandbox, login files, approval) exactly as for the disk, and only then is the I/O
asked of the client. Without the capability (`ctx.files` None) the tools use the disk.

A client's failure arrives as `ClientFileError` and becomes a tool error naming the path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..errors import ClientFileError

__all__ = ["ClientFileError", "EditorFiles", "editor_reads", "editor_writes"]


class EditorFiles(Protocol):
    reads: bool
    """The client reads files for us (`fs/read_text_file`)."""
    writes: bool
    """The client writes files for us (`fs/write_text_file`)."""

    async def read_text(self, path: Path) -> str:
        """The file's text as the editor has it; raises ClientFileError."""
        ...

    async def write_text(self, path: Path, text: str) -> None:
        """Replace the file's text (creating it); raises ClientFileError."""
        ...


def editor_reads(files: EditorFiles | None) -> EditorFiles | None:
    """`files` when reads go through the editor, else None (read the disk)."""
    return files if files is not None and files.reads else None


def editor_writes(files: EditorFiles | None) -> EditorFiles | None:
    """`files` when writes go through the editor, else None (write the disk)."""
    return files if files is not None and files.writes else None
