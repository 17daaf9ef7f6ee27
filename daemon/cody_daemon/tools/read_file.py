"""`readFile`: numbered lines of a text file, paged with `offset` / `limit`.

Reads are allowed anywhere (no sandbox check) and need no approval. Invariants: output
lines are `{n:>6}\\t{line}` with 1-based numbers as an editor shows them (split on `\\n`
only); a line longer than `MAX_LINE_CHARS` is cut; the output never exceeds
`MAX_OUTPUT_CHARS` plus a footer, which says how to read the next page whenever lines remain.
Binary files (NUL bytes) and files over `MAX_FILE_BYTES` are refused with a clear error.

Through an editor that reads files for us (`ctx.files`, tools/editor_files.py) the text is the
editor's (unsaved changes included); the path is the same resolved real path, a directory or
a special file on disk is refused before the client is asked (an editor must never be made to
open a FIFO or a device), and the numbering, paging and limits are the same.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Annotated

from cody_protocol.updates import ToolCallLocation
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..policy.sandbox import resolve_path
from .base import PathRead, Tool, ToolContext, ToolError, ToolFacts, ToolResult, location
from .editor_files import ClientFileError, EditorFiles, editor_reads

__all__ = ["ReadFileArgs", "ReadFileTool"]

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 100_000
MAX_FILE_BYTES = 10 * 1024 * 1024


class ReadFileArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    file_path: str = Field(
        alias="filePath",
        min_length=1,
        description="Path of the file to read; relative paths are resolved against the "
        "session's working directory.",
    )
    offset: Annotated[int | None, WithJsonSchema({"type": "integer", "minimum": 1})] = Field(
        default=None,
        ge=1,
        description="1-based number of the first line to return (default 1). Use it to page "
        "through long files.",
    )
    limit: Annotated[int | None, WithJsonSchema({"type": "integer", "minimum": 1})] = Field(
        default=None,
        ge=1,
        description=f"Maximum number of lines to return (default {DEFAULT_LIMIT}).",
    )


class ReadFileTool(Tool[ReadFileArgs]):
    name = "readFile"
    description = (
        "Read a text file. Returns its lines numbered from 1 (`number<TAB>line`), up to "
        f"{DEFAULT_LIMIT} lines by default; use offset and limit to read other parts of long "
        f"files. Lines longer than {MAX_LINE_CHARS} characters are cut. Binary files are refused."
    )
    kind = "read"
    facts = ToolFacts(changes="nothing", files="read")
    args_model = ReadFileArgs

    def title(self, args: ReadFileArgs) -> str:
        return f"Read {args.file_path}"

    def path_reads(self, args: ReadFileArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        return (PathRead(resolve_path(os.path.expanduser(args.file_path), ctx.cwd)),)

    def locations(self, args: ReadFileArgs, cwd: Path) -> list[ToolCallLocation]:
        return [location(resolve_path(os.path.expanduser(args.file_path), cwd), args.offset or 1)]

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        editor = editor_reads(ctx.files)
        if editor is not None:
            return await _read_through_editor(args, ctx.cwd, editor)
        return await asyncio.to_thread(_read_file, args, ctx.cwd)


async def _read_through_editor(args: ReadFileArgs, cwd: Path, editor: EditorFiles) -> ToolResult:
    path, on_disk = await asyncio.to_thread(_check_on_disk, args.file_path, cwd)
    try:
        text = await editor.read_text(path)
    except ClientFileError as exc:
        if not on_disk:
            raise ToolError(
                f"file not found: {args.file_path} ({path}); the editor could not read it "
                f"either: {exc.message}"
            ) from None
        raise ToolError(f"the editor could not read {path}: {exc.message}") from None
    if len(text) > MAX_FILE_BYTES:
        raise ToolError(
            f"{path} is too large to read ({len(text)} characters in the editor; the limit is "
            f"{MAX_FILE_BYTES}); use exec with grep, head or sed to look at parts of it"
        )
    if "\0" in text:
        raise ToolError(f"{path} is a binary file (it contains NUL bytes); not reading it")
    result = _numbered(args, path, text)
    assert result.raw_output is not None
    result.raw_output["editor"] = True
    return result


def _check_on_disk(given: str, cwd: Path) -> tuple[Path, bool]:
    """The real path, and whether it exists on disk; raises ToolError for what must not be
    read (a directory, a device or pipe, a file over the size limit)."""
    path = resolve_path(os.path.expanduser(given), cwd)
    try:
        info = os.stat(path)
    except OSError:
        return path, False
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{path} is a directory, not a file (use listDir to list it)")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{path} is not a regular file (a device, socket or pipe)")
    if info.st_size > MAX_FILE_BYTES:
        raise ToolError(
            f"{path} is too large to read ({info.st_size} bytes; the limit is {MAX_FILE_BYTES}); "
            "use exec with grep, head or sed to look at parts of it"
        )
    return path, True


def _read_file(args: ReadFileArgs, cwd: Path) -> ToolResult:
    path = resolve_path(os.path.expanduser(args.file_path), cwd)
    data = _read_bytes(args.file_path, path)
    if b"\0" in data:
        raise ToolError(f"{path} is a binary file (it contains NUL bytes); not reading it")
    return _numbered(args, path, data.decode("utf-8", errors="replace"))


def _numbered(args: ReadFileArgs, path: Path, text: str) -> ToolResult:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline at the end of the last line does not start a new one
    total = len(lines)
    start = args.offset or 1
    limit = args.limit or DEFAULT_LIMIT
    if total == 0:
        return _result("(empty file)", path, total, 0, 0)
    if start > total:
        raise ToolError(f"offset {start} is past the end of {path}, which has {total} lines")

    out: list[str] = []
    size = 0
    end = start - 1  # last line number included
    for number in range(start, min(total, start + limit - 1) + 1):
        line = lines[number - 1].removesuffix("\r")
        if len(line) > MAX_LINE_CHARS:
            cut = len(line) - MAX_LINE_CHARS
            line = f"{line[:MAX_LINE_CHARS]}... [line cut: {cut} more characters]"
        rendered = f"{number:>6}\t{line}"
        if out and size + len(rendered) + 1 > MAX_OUTPUT_CHARS:
            break
        out.append(rendered)
        size += len(rendered) + 1
        end = number
    if end < total:
        out.append(
            f"\n[Showing lines {start}-{end} of {total}. Use offset={end + 1} to read more.]"
        )
    return _result("\n".join(out), path, total, start, end)


def _read_bytes(shown: str, path: os.PathLike[str]) -> bytes:
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{path} is a directory, not a file (use listDir to list it)")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{path} is not a regular file (a device, socket or pipe)")
        size = info.st_size
        if size > MAX_FILE_BYTES:
            raise ToolError(
                f"{path} is too large to read ({size} bytes; the limit is {MAX_FILE_BYTES}); "
                "use exec with grep, head or sed to look at parts of it"
            )
        with open(path, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ToolError(f"file not found: {shown} ({path})") from None
    except PermissionError:
        raise ToolError(f"permission denied: cannot read {path}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None


def _result(text: str, path: os.PathLike[str], total: int, start: int, end: int) -> ToolResult:
    return ToolResult(
        output=text,
        locations=[location(path, start)],
        raw_output={
            "path": os.fspath(path),
            "totalLines": total,
            "startLine": start,
            "endLine": end,
            "truncated": end < total,
        },
    )
