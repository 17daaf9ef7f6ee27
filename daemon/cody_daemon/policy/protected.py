"""What stays read-only inside the writable roots: git metadata, `.cody`, Cody's own files.

A sandboxed command that could write these could run code outside the sandbox later (a git
hook runs when the user next commits; `.git/config` can name programs) or lift the next
session's sandbox (`.cody/config.toml` of a trusted project). So, under every writable root:

- every entry named `.git` (a git directory, or a `.git` file of a worktree or submodule) and
  the git directory such a file points to;
- every directory that *is* a git directory whatever its name (bare repositories, separate
  git dirs): it holds `HEAD` and either both `objects/` and `refs/`, or a `commondir` file
  (a worktree's private dir), the same test git itself uses;
- every entry named `.cody`;
- Cody's own config and data directories (user config, session files with their grants),
  except, for a writable root inside one of their `OWN_WORKSPACES` directories (a git
  worktree Cody made for a session under its data dir), that root itself: the session
  works there, and everything else of Cody's own stays protected (outside the root).

Invariants:
- `is_protected_path` decides for one path (file tools); it looks only at the path's own
  components and ancestors, so it never walks a tree.
- `scan` walks a tree breadth first without following symlinks and without descending into
  what it protects, and stops after `budget` entries (`ScanResult.complete` says whether it
  got through); a symlink named `.git`/`.cody` yields its target when that is inside a root.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.safe_read import open_regular, read_regular_text

__all__ = [
    "OWN_WORKSPACES",
    "PROTECTED_NAMES",
    "SCAN_BUDGET",
    "ScanResult",
    "gitfile_targets",
    "is_git_dir",
    "is_protected_path",
    "is_within",
    "looks_like_git_dir",
    "outermost",
    "own_workspace",
    "scan",
]

PROTECTED_NAMES = frozenset({".git", ".cody"})
OWN_WORKSPACES = "worktrees"
"""The directory under Cody's data dir holding the worktrees it makes for sessions
(worktrees/): a session's writable root inside it is the session's to write."""
SCAN_BUDGET = 200_000
"""Directory entries `scan` looks at per root (about 0.3 s on a warm cache)."""


def is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def looks_like_git_dir(names: Iterable[str]) -> bool:
    present = set(names)
    return "HEAD" in present and ({"objects", "refs"} <= present or "commondir" in present)


def is_git_dir(path: Path) -> bool:
    """Whether `path` is a git directory (git's own test: HEAD plus objects+refs or commondir).

    A few `stat`s, never a listing: it runs for every ancestor of every file-tool write.
    """
    try:
        return os.path.lexists(path / "HEAD") and (
            (os.path.isdir(path / "objects") and os.path.isdir(path / "refs"))
            or os.path.lexists(path / "commondir")
        )
    except OSError:
        return False


def gitfile_targets(gitfile: Path) -> list[Path]:
    """The git directory a `.git` file points to (`gitdir: ...`) and its `commondir`, resolved."""
    try:  # a FIFO or a device named `.git` (an unpacked archive) is no gitfile: no hang
        with open(open_regular(gitfile), "rb", closefd=True) as handle:
            first = handle.read(4096).split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    except OSError:
        return []
    if not first.startswith("gitdir:"):
        return []
    target = Path(os.path.realpath(gitfile.parent / first[len("gitdir:") :].strip()))
    found = [target]
    try:
        common = read_regular_text(target / "commondir", 4096).strip()
    except (OSError, UnicodeDecodeError):
        return found
    if common:
        found.append(Path(os.path.realpath(target / common)))
    return found


def is_protected_path(real: Path, root: Path, extra: Iterable[Path] = ()) -> str | None:
    """Why `real` (resolved, inside `root`) may not be written, or None.

    `extra` are further protected directories (Cody's own config and data dirs).
    """
    for protected in extra:
        if is_within(real, protected) and not own_workspace(root, protected):
            return f"{real} is inside Cody's own files ({protected}), which the sandbox protects"
    relative = real.relative_to(root)
    if ".git" in relative.parts:
        return f"{real} is git metadata, which the sandbox protects"
    if ".cody" in relative.parts:
        return f"{real} is Cody project configuration (.cody), which the sandbox protects"
    ancestor = real
    while ancestor != root:
        ancestor = ancestor.parent
        if is_git_dir(ancestor):
            return f"{real} is inside the git directory {ancestor}, which the sandbox protects"
    if is_git_dir(real):
        return f"{real} is a git directory, which the sandbox protects"
    return None


def own_workspace(root: Path, own: Path) -> bool:
    """`root` is a session's workspace inside Cody's own directory `own` (a worktree Cody made
    for it: `<own>/worktrees/<...>/<name>`), not `own`'s own files."""
    workspaces = own / OWN_WORKSPACES
    return root != workspaces and workspaces in root.parents


@dataclass
class ScanResult:
    paths: list[Path] = field(default_factory=list)
    """Protected paths found (absolute; dirs and files; not nested in one another)."""
    complete: bool = True
    entries: int = 0


def scan(root: Path, roots: Iterable[Path], budget: int | None = None) -> ScanResult:
    """Every protected path under `root` (see the module docstring).

    `roots` are all writable roots: a `.git` file's target, or a symlink's, is only kept
    when it lies inside one of them (outside, it is read-only anyway).
    """
    writable = tuple(roots)
    limit = SCAN_BUDGET if budget is None else budget
    result = ScanResult()
    found: set[Path] = set()

    def keep(path: Path) -> None:
        if any(is_within(path, r) for r in writable):
            found.add(path)

    queue: deque[Path] = deque([root])
    while queue:
        directory = queue.popleft()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        result.entries += len(entries)
        if directory != root and looks_like_git_dir(entry.name for entry in entries):
            found.add(directory)
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if entry.name in PROTECTED_NAMES:
                if is_link:
                    keep(Path(os.path.realpath(path)))
                    continue
                found.add(path)
                if entry.name == ".git" and not is_dir:
                    for target in gitfile_targets(path):
                        keep(target)
                continue
            if is_dir:
                queue.append(path)
        if result.entries >= limit and queue:
            result.complete = False
            break
    result.paths = outermost(found)
    return result


def outermost(paths: Iterable[Path]) -> list[Path]:
    """`paths` without those inside another one, shallowest first."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: (len(p.parts), str(p))):
        if not any(is_within(path, other) for other in kept):
            kept.append(path)
    return kept
