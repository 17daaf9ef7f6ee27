"""The client's file I/O as the tools see it: `tools.editor_files.EditorFiles` over the link.

Built per tool call when the client declared `fs.readTextFile` and/or `fs.writeTextFile`;
tools never see the link (nor pygls), only this.
"""

from __future__ import annotations

from pathlib import Path

from .ports import ClientLink

__all__ = ["LinkEditorFiles", "editor_files_for"]


class LinkEditorFiles:
    def __init__(self, link: ClientLink, session_id: str, *, reads: bool, writes: bool) -> None:
        self._link = link
        self._session_id = session_id
        self.reads = reads
        self.writes = writes

    async def read_text(self, path: Path) -> str:
        return await self._link.read_text_file(self._session_id, str(path))

    async def write_text(self, path: Path, text: str) -> None:
        await self._link.write_text_file(self._session_id, str(path), text)


def editor_files_for(link: ClientLink, session_id: str) -> LinkEditorFiles | None:
    """The client's file access for one session, or None when it offers none."""
    access = link.file_access()
    if not (access.read or access.write):
        return None
    return LinkEditorFiles(link, session_id, reads=access.read, writes=access.write)
