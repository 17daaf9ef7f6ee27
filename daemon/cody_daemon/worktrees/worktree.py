"""A git worktree made for one session: created on a branch of its own, inspected, removed.

Layout: `<data dir>/worktrees/<repository name>-<hash of its path>/<name>`, on the branch
`cody/<name>`, checked out at the commit the project's HEAD was at (`base`). The session
runs in the same subdirectory of the worktree as its `cwd` was of the project.

Invariants:
- git runs through `WorktreeGit` only (worktrees/git.py): never where the repository's
  configuration names a filter driver or an include, always with hooks and fsmonitor off;
- `Worktree.from_record` accepts a recorded worktree (a session file is hostile) only when
  its path lies inside the worktrees directory and its branch and base are well formed;
  `remove` also asks git that the path is one of the repository's worktrees first;
- `remove` removes the branch only while it still points at `base` (nothing was committed).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import Any, Final, Literal

from .git import GitFailed, WorktreeGit

__all__ = [
    "MAX_CHANGES",
    "WORKTREES_DIR",
    "Change",
    "Inspection",
    "Worktree",
    "WorktreeRefused",
    "create_worktree",
    "inspect_worktree",
    "remove_worktree",
    "valid_name",
]

WORKTREES_DIR: Final = "worktrees"
"""The worktrees' directory under Cody's data dir."""
BRANCH_PREFIX: Final = "cody/"
MAX_CHANGES: Final = 1000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")

ChangeKind = Literal["added", "modified", "deleted", "renamed", "untracked"]


class WorktreeRefused(Exception):
    """No worktree can be made (or used) here; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    change: ChangeKind


@dataclass(frozen=True, slots=True, kw_only=True)
class Worktree:
    path: Path
    branch: str
    base: str
    project_root: Path
    subdir: str = ""
    """Where in the worktree the session runs (its cwd relative to the project root)."""

    @property
    def cwd(self) -> Path:
        inner = self.path / self.subdir if self.subdir else self.path
        return inner if inner.is_dir() else self.path

    def record(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "branch": self.branch,
            "base": self.base,
            "projectRoot": str(self.project_root),
            "subdir": self.subdir,
        }

    @classmethod
    def from_record(cls, value: Any, root: Path) -> Worktree | None:
        """A recorded worktree, when it is one Cody could have made under `root`."""
        if not isinstance(value, dict):
            return None
        fields = [value.get(key, "") for key in ("path", "branch", "base", "projectRoot", "subdir")]
        if not all(isinstance(v, str) for v in fields):
            return None
        path, branch, base, project, subdir = (str(v) for v in fields)
        real = Path(os.path.realpath(path))
        real_root = Path(os.path.realpath(root))
        if real_root not in real.parents or not os.path.isabs(project):
            return None
        if not branch.startswith(BRANCH_PREFIX) or not valid_name(branch[len(BRANCH_PREFIX) :]):
            return None
        if not _COMMIT.match(base) or ".." in Path(subdir).parts or os.path.isabs(subdir):
            return None
        return cls(path=real, branch=branch, base=base, project_root=Path(project), subdir=subdir)


@dataclass(slots=True)
class Inspection:
    changes: list[Change] = field(default_factory=list)
    commits: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.changes) or self.commits > 0


def valid_name(name: str) -> bool:
    return bool(_NAME.match(name)) and ".." not in name and not name.endswith(".lock")


async def create_worktree(git: WorktreeGit, cwd: Path, root: Path, name: str | None) -> Worktree:
    """A new worktree of the repository `cwd` is in (see the module docstring). Raises
    WorktreeRefused (with what to do) or GitFailed."""
    if name is not None and not valid_name(name):
        raise WorktreeRefused(
            f"{name!r} is not a usable worktree name: letters, digits, '.', '_' and '-' only "
            "(at most 63), not starting with '.' or '-'"
        )
    hazard = await _hazard(git, cwd)
    if hazard is not None:
        raise WorktreeRefused(
            f"Cody runs no git command in this repository, whose configuration could make git "
            f"run a program ({hazard}); start the session without a worktree"
        )
    try:
        top = Path(os.fsdecode((await git.run(cwd, "rev-parse", "--show-toplevel")).strip()))
    except GitFailed:
        raise WorktreeRefused(f"{cwd} is not inside a git work tree") from None
    head = await git.run(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=(0, 1))
    base = head.decode("ascii", "replace").strip()
    if not _COMMIT.match(base):
        raise WorktreeRefused(f"the repository at {top} has no commit yet to start a worktree from")
    real_top, subdir, home = await asyncio.to_thread(_layout, top, cwd, root)
    for attempt in range(5):
        chosen = name or _generated_name()
        path = home / chosen
        branch = BRANCH_PREFIX + chosen
        taken = await git.run(
            top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", ok=(0, 1)
        )
        if not taken.strip() and not await asyncio.to_thread(os.path.lexists, path):
            break
        if name is not None or attempt == 4:
            raise WorktreeRefused(
                f"the branch {branch} or the directory {path} exists already; choose another "
                "worktree name"
            )
    await git.run(top, "worktree", "add", "--quiet", "-b", branch, str(path), base)
    return Worktree(
        path=Path(await asyncio.to_thread(os.path.realpath, path)),
        branch=branch,
        base=base,
        project_root=real_top,
        subdir=subdir,
    )


def _layout(top: Path, cwd: Path, root: Path) -> tuple[Path, str, Path]:
    """The project's real root, the cwd's place in it, and the directory (made) that holds
    the project's worktrees."""
    real_top, real_cwd = os.path.realpath(top), os.path.realpath(cwd)
    subdir = os.path.relpath(real_cwd, real_top) if real_cwd != real_top else ""
    home = root / f"{_safe(top.name)}-{sha256(real_top.encode()).hexdigest()[:8]}"
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    return Path(real_top), "" if subdir == "." else subdir, home


async def inspect_worktree(git: WorktreeGit, worktree: Worktree) -> Inspection:
    """What changed in the worktree since `base`: files (committed or not) and commits."""
    hazard = await _hazard(git, worktree.path)
    if hazard is not None:
        raise GitFailed(f"git is not run in {worktree.path}: {hazard}")
    found: dict[str, ChangeKind] = {}
    status = await git.run(
        worktree.path,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignore-submodules=all",
    )
    entries = status.split(b"\0")
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2].decode("ascii", "replace"), os.fsdecode(entry[3:])
        if "R" in code or "C" in code:
            index += 1  # the rename's source follows
        found[path] = _status_kind(code)
    count = await git.run(worktree.path, "rev-list", "--count", f"{worktree.base}..HEAD")
    commits = int(count.strip() or b"0")
    if commits:
        diff = await git.run(
            worktree.path,
            "diff",
            "--name-status",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            worktree.base,
            "HEAD",
        )
        fields = diff.split(b"\0")
        for kind, name in zip(fields[0::2], fields[1::2], strict=False):
            if name:
                found.setdefault(os.fsdecode(name), _diff_kind(kind.decode("ascii", "replace")))
    changes = [Change(name, kind) for name, kind in sorted(found.items())[:MAX_CHANGES]]
    return Inspection(changes=changes, commits=commits)


async def remove_worktree(git: WorktreeGit, worktree: Worktree) -> None:
    """Remove the worktree, and its branch while that still points at `base`."""
    listing = await git.run(worktree.project_root, "worktree", "list", "--porcelain", "-z")
    if str(worktree.path) not in await asyncio.to_thread(_registered, listing):
        raise GitFailed(f"{worktree.path} is not a worktree of {worktree.project_root}")
    await git.run(worktree.project_root, "worktree", "remove", str(worktree.path))
    await git.run(
        worktree.project_root,
        "update-ref",
        "-d",
        f"refs/heads/{worktree.branch}",
        worktree.base,
        ok=(0, 1, 128),
    )


def _registered(listing: bytes) -> set[str]:
    """The real paths of the worktrees `git worktree list --porcelain -z` names."""
    return {
        os.path.realpath(os.fsdecode(line[len(b"worktree ") :]))
        for line in listing.split(b"\0")
        if line.startswith(b"worktree ")
    }


async def _hazard(git: WorktreeGit, cwd: Path) -> str | None:
    return await asyncio.to_thread(git.hazard, cwd)


def _status_kind(code: str) -> ChangeKind:
    if code == "??":
        return "untracked"
    if "D" in code:
        return "deleted"
    if "R" in code:
        return "renamed"
    if "A" in code:
        return "added"
    return "modified"


def _diff_kind(kind: str) -> ChangeKind:
    return {"A": "added", "D": "deleted"}.get(kind[:1], "modified")  # type: ignore[return-value]


def _generated_name() -> str:
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def _safe(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40].lstrip(".-")
    return cleaned or "repo"
