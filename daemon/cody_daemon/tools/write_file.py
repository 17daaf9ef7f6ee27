"""`writeFile`: create or overwrite a text file, atomically.

Invariants: the path is resolved (symlinks and `..`) before anything else, and the sandbox
is checked on that real path both before approval (`sandbox_check`) and again right before
writing (the file system may have changed in between), so a symlink cannot carry a write
outside the writable roots. The write is atomic: readers see the old or the new content,
never a mix (temp file in the same directory + `os.replace`); an existing file keeps its
permission bits (and owner, when the daemon may set it).
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from cody_protocol.content import DiffToolCallContent, ToolCallContent
from cody_protocol.updates import ToolCallLocation
from pydantic import BaseModel, ConfigDict, Field

from ..policy.sandbox import resolve_path
from .atomic import write_atomic
from .base import (
    GrantKey,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    first_changed_line,
    location,
)

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
    requires_approval = True
    args_model = WriteFileArgs

    def title(self, args: WriteFileArgs) -> str:
        return f"Write {args.file_path}"

    @staticmethod
    def _path(args: WriteFileArgs, ctx: ToolContext) -> Path:
        return resolve_path(os.path.expanduser(args.file_path), ctx.cwd)

    def grant_key(self, args: WriteFileArgs, ctx: ToolContext) -> GrantKey:
        return ("paths", str(self._path(args, ctx)))

    def sandbox_check(self, args: WriteFileArgs, ctx: ToolContext) -> str | None:
        return ctx.sandbox.check_write(self._path(args, ctx))

    def locations(self, args: WriteFileArgs, cwd: Path) -> list[ToolCallLocation]:
        return [location(resolve_path(os.path.expanduser(args.file_path), cwd))]

    def preview(self, args: WriteFileArgs, ctx: ToolContext) -> list[ToolCallContent]:
        path = self._path(args, ctx)
        return [
            DiffToolCallContent(path=str(path), old_text=_current_text(path), new_text=args.content)
        ]

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._write, args, ctx)

    def _write(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        path = self._path(args, ctx)
        reason = ctx.sandbox.check_write(path)
        if reason is not None:
            raise ToolError(f"the sandbox does not allow writing {path}: {reason}")
        if path.is_dir():
            raise ToolError(f"{path} is a directory; cannot write it as a file")
        old_text = _current_text(path)
        created = not path.exists()
        data = args.content.encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, data)
        except NotADirectoryError:
            raise ToolError(f"cannot write {path}: a parent of it is a file") from None
        except OSError as exc:
            raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from None
        verb = "created new file" if created else "replaced existing file"
        return ToolResult(
            output=f"Wrote {len(data)} bytes to {path} ({verb})",
            raw_output={"path": str(path), "bytes": len(data), "created": created},
            content=[DiffToolCallContent(path=str(path), old_text=old_text, new_text=args.content)],
            locations=[location(path, first_changed_line(old_text, args.content) or 1)],
        )


def _current_text(path: Path) -> str | None:
    """The file's current text for a diff; None when it does not exist (or is unreadable)."""
    try:
        if not path.is_file() or path.stat().st_size > _PREVIEW_MAX_BYTES:
            return None
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `data` atomically, keeping an existing file's mode and owner."""
    try:
        existing: os.stat_result | None = path.stat()
    except FileNotFoundError:
        existing = None
    if existing is None:
        write_atomic(path, data)
    else:
        write_atomic(path, data, stat.S_IMODE(existing.st_mode), (existing.st_uid, existing.st_gid))
