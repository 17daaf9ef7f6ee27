"""`writeFile`: create or overwrite a text file, atomically.

Invariants: the path is resolved (symlinks and `..`) before anything else, and the sandbox
is checked on that real path both before approval (`escalation`: a write outside the
writable roots asks, or is refused under policy `never`) and again right before writing
(the file system may have changed in between), so a symlink cannot carry a write outside
the writable roots; only the very real path the user approved (`ctx.write_anywhere`) may
be written outside them. The write is atomic: readers see the old or the new content,
never a mix (temp file in the same directory + `os.replace`); an existing file keeps its
permission bits (and owner, when the daemon may set it).

Through an editor that writes files for us (`ctx.files`, tools/editor_files.py) the same
checks run on the same real path, missing parent directories are created on disk (inside the
checked path's writable root), and the content goes to the editor in one `fs/write_text_file`
(the editor saves it, reloads its buffer and owns the undo). The diff's old text is the
editor's when it also reads for us (unsaved changes included).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from cody_protocol.content import DiffToolCallContent, ToolCallContent
from cody_protocol.updates import ToolCallLocation
from pydantic import BaseModel, ConfigDict, Field

from ..core.atomic_write import replace_file
from ..policy.approval import Escalation
from ..policy.rules import PathSubject, RuleSubject
from ..policy.sandbox import resolve_path
from .base import (
    GrantKey,
    Tool,
    ToolContext,
    ToolError,
    ToolFacts,
    ToolResult,
    check_write_target,
    first_changed_line,
    location,
)
from .editor_files import ClientFileError, EditorFiles, editor_reads, editor_writes

__all__ = ["WriteFileArgs", "WriteFileTool"]

_PREVIEW_MAX_BYTES = 10 * 1024 * 1024
"""A current file larger than this is not read for the diff preview."""


class WriteFileArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    file_path: str = Field(
        alias="filePath",
        min_length=1,
        description="Path of the file to write; relative paths are resolved against the "
        "session's working directory. Missing parent directories are created.",
    )
    content: str = Field(description="The complete new content of the file.")


class WriteFileTool(Tool[WriteFileArgs]):
    name = "writeFile"
    description = (
        "Create a file, or replace an existing file's entire content, with the given text. "
        "Parent directories are created as needed. Prefer applyPatch for small changes to "
        "existing files."
    )
    kind = "edit"
    facts = ToolFacts(changes="files", files="write")
    file_effects = "declared"
    args_model = WriteFileArgs

    def title(self, args: WriteFileArgs) -> str:
        return f"Write {args.file_path}"

    @staticmethod
    def _path(args: WriteFileArgs, ctx: ToolContext) -> Path:
        return resolve_path(os.path.expanduser(args.file_path), ctx.cwd)

    def grant_key(self, args: WriteFileArgs, ctx: ToolContext) -> GrantKey:
        return ("paths", str(self._path(args, ctx)))

    def escalation(self, args: WriteFileArgs, ctx: ToolContext) -> tuple[Escalation, str] | None:
        reason = ctx.sandbox.check_write(self._path(args, ctx))
        return ("write", reason) if reason is not None else None

    def path_writes(self, args: WriteFileArgs, ctx: ToolContext) -> tuple[Path, ...]:
        return (self._path(args, ctx),)

    def permission_subject(self, args: WriteFileArgs, ctx: ToolContext) -> RuleSubject:
        return PathSubject(self.path_writes(args, ctx))

    def locations(self, args: WriteFileArgs, cwd: Path) -> list[ToolCallLocation]:
        return [location(resolve_path(os.path.expanduser(args.file_path), cwd))]

    def preview(self, args: WriteFileArgs, ctx: ToolContext) -> list[ToolCallContent]:
        path = self._path(args, ctx)
        return [
            DiffToolCallContent(path=str(path), old_text=_current_text(path), new_text=args.content)
        ]

    async def preview_async(self, args: WriteFileArgs, ctx: ToolContext) -> list[ToolCallContent]:
        path = self._path(args, ctx)
        old_text = await _editor_text(path, editor_reads(ctx.files))
        return [DiffToolCallContent(path=str(path), old_text=old_text, new_text=args.content)]

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        editor = editor_writes(ctx.files)
        if editor is not None:
            return await self._write_through_editor(args, ctx, editor)
        return await asyncio.to_thread(self._write, args, ctx)

    async def _write_through_editor(
        self, args: WriteFileArgs, ctx: ToolContext, editor: EditorFiles
    ) -> ToolResult:
        path = self._path(args, ctx)
        created = await asyncio.to_thread(self._check_target, path, ctx)
        old_text = await _editor_text(path, editor_reads(ctx.files))
        try:
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
        except NotADirectoryError:
            raise ToolError(f"cannot write {path}: a parent of it is a file") from None
        except OSError as exc:
            raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from None
        try:
            await editor.write_text(path, args.content)
        except ClientFileError as exc:
            raise ToolError(f"the editor could not write {path}: {exc.message}") from None
        return self._result(path, args.content, old_text, created, editor=True)

    def _check_target(self, path: Path, ctx: ToolContext) -> bool:
        """Checks right before writing; returns whether the file is new."""
        reason = check_write_target(path, ctx)
        if reason is not None:
            raise ToolError(f"the sandbox does not allow writing {path}: {reason}")
        if path.is_dir():
            raise ToolError(f"{path} is a directory; cannot write it as a file")
        return not path.exists()

    @staticmethod
    def _result(
        path: Path, content: str, old_text: str | None, created: bool, *, editor: bool
    ) -> ToolResult:
        size = len(content.encode("utf-8"))
        verb = "created new file" if created else "replaced existing file"
        raw: dict[str, Any] = {"path": str(path), "bytes": size, "created": created}
        if editor:
            raw["editor"] = True
        return ToolResult(
            output=f"Wrote {size} bytes to {path} ({verb})",
            raw_output=raw,
            content=[DiffToolCallContent(path=str(path), old_text=old_text, new_text=content)],
            locations=[location(path, first_changed_line(old_text, content) or 1)],
        )

    def _write(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        path = self._path(args, ctx)
        created = self._check_target(path, ctx)
        old_text = _current_text(path)
        data = args.content.encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(path, data)
        except NotADirectoryError:
            raise ToolError(f"cannot write {path}: a parent of it is a file") from None
        except OSError as exc:
            raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from None
        return self._result(path, args.content, old_text, created, editor=False)


async def _editor_text(path: Path, editor: EditorFiles | None) -> str | None:
    """The current text for a diff: the editor's when it reads for us (None when it cannot:
    a new file), else the disk's."""
    if editor is None:
        return await asyncio.to_thread(_current_text, path)
    exists = await asyncio.to_thread(path.is_file)
    if not exists:
        return None  # no editor buffer is asked about a file that is not there
    try:
        return await editor.read_text(path)
    except ClientFileError:
        return await asyncio.to_thread(_current_text, path)


def _current_text(path: Path) -> str | None:
    """The file's current text for a diff; None when it does not exist (or is unreadable)."""
    try:
        if not path.is_file() or path.stat().st_size > _PREVIEW_MAX_BYTES:
            return None
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
