"""`listDir`: a directory tree, a few levels deep.

Invariants: entries are sorted by name within each directory, directories end with `/`,
each level is indented two more spaces; VCS metadata directories (`.git`, ...) are never
listed; symlinks are shown (`name -> target`) but never followed, so the walk cannot loop.
Directories git ignores (`node_modules/`, `.venv/`, build output) are left out unless
`includeIgnored` is true, or the listed directory is itself ignored (the caller asked for
it); the output names the ones left out. Git decides (`git check-ignore`, run with
`core.fsmonitor` off so a repository's config cannot make it run a command); outside a git
work tree, or without git, nothing is left out.
At most `MAX_ENTRIES` entries are shown, chosen breadth-first (every top-level entry comes
before anything deeper), and the output says when entries were left out.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from cody_protocol.updates import ToolCallLocation
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..policy.sandbox import resolve_path
from .base import PathRead, Tool, ToolContext, ToolError, ToolFacts, ToolResult, location

__all__ = ["ListDirArgs", "ListDirTool"]

DEFAULT_DEPTH = 2
MAX_DEPTH = 5
MAX_ENTRIES = 1000
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", "CVS"})
SHOWN_IGNORED = 10
"""How many left-out ignored directories the output names."""
GIT_TIMEOUT_S = 10.0


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
    include_ignored: bool = Field(
        default=False,
        alias="includeIgnored",
        description="Also list directories git ignores, such as node_modules/ or .venv/ "
        "(default false: they are named in a note but not listed).",
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
        "version-control directories, and git-ignored directories unless includeIgnored is "
        f"true; shows at most {MAX_ENTRIES} entries."
    )
    kind = "read"
    facts = ToolFacts(changes="nothing", files="read")
    args_model = ListDirArgs

    def title(self, args: ListDirArgs) -> str:
        return f"List {args.dir_path}"

    def path_reads(self, args: ListDirArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        return (PathRead(resolve_path(os.path.expanduser(args.dir_path), ctx.cwd)),)

    def locations(self, args: ListDirArgs, cwd: Path) -> list[ToolCallLocation]:
        return [location(resolve_path(os.path.expanduser(args.dir_path), cwd))]

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
    ignored: list[Path] = []
    git = None if args.include_ignored else _GitIgnore.open(root)
    level_nodes = [top]
    for _ in range(depth):
        next_level: list[_Node] = []
        listed = [(parent, _entries(parent)) for parent in level_nodes]
        if git is not None:
            dirs = [
                child.path for _, es in listed for child in es if child.is_dir and not child.link
            ]
            left_out = git.ignored(dirs)
            ignored += [path for path in dirs if path in left_out]
            listed = [(parent, [c for c in es if c.path not in left_out]) for parent, es in listed]
        for parent, entries in listed:
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
    if ignored:
        names = ", ".join(f"{path.relative_to(root)}/" for path in ignored[:SHOWN_IGNORED])
        more = f" and {len(ignored) - SHOWN_IGNORED} more" if len(ignored) > SHOWN_IGNORED else ""
        lines.append(
            f"\n[Not listed, git-ignored: {names}{more}. Pass includeIgnored: true to list them.]"
        )
    if omitted:
        lines.append(
            f"\n[Showing {shown} entries (the limit); at least {omitted} more not shown. "
            "List a subdirectory or use a smaller depth.]"
        )
    raw: dict[str, object] = {"path": str(root), "entries": shown, "truncated": omitted > 0}
    if ignored:
        raw["ignoredDirs"] = len(ignored)
    return ToolResult(output="\n".join(lines), raw_output=raw, locations=[location(root)])


class _GitIgnore:
    """Asks git which paths under one directory it ignores."""

    def __init__(self, git: str, root: Path) -> None:
        self.git = git
        self.root = root

    @classmethod
    def open(cls, root: Path) -> _GitIgnore | None:
        """None when git is missing, `root` is not in a work tree, or `root` is ignored."""
        git = shutil.which("git")
        if git is None:
            return None
        checker = cls(git, root)
        answer = checker._check([root])
        if answer is None or root in answer:
            return None
        return checker

    def ignored(self, paths: list[Path]) -> set[Path]:
        if not paths:
            return set()
        return self._check(paths) or set()

    def _check(self, paths: list[Path]) -> set[Path] | None:
        """The ignored ones among `paths` (absolute), or None when git cannot tell."""
        try:
            done = subprocess.run(
                [self.git, "-c", "core.fsmonitor=false", "check-ignore", "-z", "--stdin"],
                cwd=self.root,
                input=b"".join(os.fsencode(path) + b"\0" for path in paths),
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode not in (0, 1):  # 128: not a work tree, or another failure
            return None
        return {Path(os.fsdecode(name)) for name in done.stdout.split(b"\0") if name}


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
