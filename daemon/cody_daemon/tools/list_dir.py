"""`listDir`: a directory tree, a few levels deep.

Invariants: entries are sorted by name within each directory, directories end with `/`,
each level is indented two more spaces; VCS metadata directories (`.git`, ...) are never
listed; symlinks are shown (`name -> target`) but never followed, so the walk cannot loop.
At most `MAX_ENTRIES` entries are shown, chosen breadth-first (every top-level entry comes
before anything deeper), and the output says when entries were left out.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..policy.sandbox import resolve_path
from .base import PathRead, Tool, ToolContext, ToolError, ToolResult

__all__ = ["ListDirArgs", "ListDirTool"]

DEFAULT_DEPTH = 2
MAX_DEPTH = 5
MAX_ENTRIES = 1000
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", "CVS"})


class ListDirArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    dir_path: str = Field(
        alias="dirPath",
        min_length=1,
        description="Directory to list; relative paths are resolved against the session's "
        'working directory ("." for the working directory itself).',
    )
    depth: Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_DEPTH})
    ] = Field(
        default=None,
        ge=1,
        le=MAX_DEPTH,
        description=f"How many levels to descend (default {DEFAULT_DEPTH}; 1 lists only the "
        "directory's own entries).",
    )


@dataclass
class _Node:
    name: str
    path: Path
    level: int
    is_dir: bool
    link: str | None = None
    note: str | None = None
    children: list[_Node] = field(default_factory=list)


class ListDirTool(Tool[ListDirArgs]):
    name = "listDir"
    description = (
        "List a directory as an indented tree (directories end with `/`), sorted by name, "
        f"{DEFAULT_DEPTH} levels deep by default (at most {MAX_DEPTH}). Skips .git and other "
        f"version-control directories; shows at most {MAX_ENTRIES} entries."
    )
    kind = "read"
    requires_approval = False
    args_model = ListDirArgs

    def title(self, args: ListDirArgs) -> str:
        return f"List {args.dir_path}"

    def path_reads(self, args: ListDirArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        return (PathRead(resolve_path(os.path.expanduser(args.dir_path), ctx.cwd)),)

    async def run(self, args: ListDirArgs, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(_list, args, ctx.cwd)


def _list(args: ListDirArgs, cwd: Path) -> ToolResult:
    root = resolve_path(os.path.expanduser(args.dir_path), cwd)
    if not root.exists():
        raise ToolError(f"directory not found: {args.dir_path} ({root})")
    if not root.is_dir():
        raise ToolError(f"{root} is not a directory (use readFile to read a file)")
    depth = args.depth or DEFAULT_DEPTH

    top = _Node(name=str(root), path=root, level=0, is_dir=True)
    shown = 0
    omitted = 0
    level_nodes = [top]
    for _ in range(depth):
        next_level: list[_Node] = []
        for parent in level_nodes:
            entries = _entries(parent)
            room = MAX_ENTRIES - shown
            parent.children = entries[: max(room, 0)]
            omitted += len(entries) - len(parent.children)
            shown += len(parent.children)
            next_level += [child for child in parent.children if child.is_dir and not child.link]
        level_nodes = next_level
        if top.note is not None:
            raise ToolError(f"cannot list {root}: {top.note}")

    lines: list[str] = [f"{root}/"]
    _render(top, lines)
    if not top.children:
        lines.append("  (empty)")
    if omitted:
        lines.append(
            f"\n[Showing {shown} entries (the limit); at least {omitted} more not shown. "
            "List a subdirectory or use a smaller depth.]"
        )
    return ToolResult(
        output="\n".join(lines),
        raw_output={"path": str(root), "entries": shown, "truncated": omitted > 0},
    )


def _entries(parent: _Node) -> list[_Node]:
    """The sorted children of `parent` (VCS dirs skipped); a read failure becomes a note."""
    try:
        with os.scandir(parent.path) as it:
            found = [entry for entry in it if entry.name not in VCS_DIRS]
    except OSError as exc:
        parent.note = str(exc.strerror or exc)
        return []
    nodes = []
    for entry in sorted(found, key=lambda e: (e.name.lower(), e.name)):
        link = None
        try:
            is_dir = entry.is_dir()  # follows symlinks: a link to a directory ends with `/`
            if entry.is_symlink():
                link = os.readlink(entry.path)
        except OSError:
            is_dir = False
        nodes.append(
            _Node(
                name=entry.name,
                path=Path(entry.path),
                level=parent.level + 1,
                is_dir=is_dir,
                link=link,
            )
        )
    return nodes


def _render(node: _Node, lines: list[str]) -> None:
    for child in node.children:
        text = "  " * child.level + child.name + ("/" if child.is_dir else "")
        if child.link is not None:
            text += f" -> {child.link}"
        if child.note:
            text += f" [cannot list: {child.note}]"
        lines.append(text)
        _render(child, lines)
