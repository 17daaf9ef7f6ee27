"""Client-side files: `fs/read_text_file` and `fs/write_text_file` (agent -> client requests).

Sent only when the client declared `clientCapabilities.fs.readTextFile` / `writeTextFile`.
The daemon decides (approval, sandbox, paths resolved to real paths); the client only does
the I/O, so an editor's unsaved buffers are read and its undo history owns the writes.
"""

from __future__ import annotations

from ._base import WireModel

__all__ = ["ReadTextFileParams", "ReadTextFileResult", "WriteTextFileParams"]


class ReadTextFileParams(WireModel):
    session_id: str
    path: str
    """Absolute path (Cody sends the real path it resolved and checked)."""
    line: int | None = None
    limit: int | None = None


class ReadTextFileResult(WireModel):
    content: str


class WriteTextFileParams(WireModel):
    session_id: str
    path: str
    content: str
