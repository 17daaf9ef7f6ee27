"""Sessions in a git worktree of their own (`_meta.cody.worktree`, `task` with isolation).

`place` makes the worktree before the session exists (the session then runs in it);
`finish`, when the session closes, keeps the worktree and its branch when anything changed
there (files, committed or not, or commits) and removes both otherwise; `describe` answers
`_cody/session/worktree`. The git work itself is worktrees/ (run so that the repository can
make git run nothing).

Invariants: a worktree that cannot be made fails `session/new` (or the `task` call) with
-32602 saying why, and leaves nothing behind; when git cannot tell whether a worktree
changed, it is kept (never a worktree with work in it removed).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cody_protocol.subagents import WorktreeChange, WorktreeInfo

from ..errors import InvalidParams, Issue
from ..worktrees.git import GitFailed, WorktreeGit
from ..worktrees.worktree import (
    Inspection,
    Worktree,
    WorktreeRefused,
    create_worktree,
    inspect_worktree,
    remove_worktree,
)
from .loading import check_cwd
from .session import Session

__all__ = ["Placement", "WorktreeSessions"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Placement:
    cwd: str
    """Where the session runs."""
    worktree: Worktree | None = None


class WorktreeSessions:
    def __init__(self, root: Path, env: Mapping[str, str]) -> None:
        self.root = root
        """`<data dir>/worktrees`."""
        self._env = env
        self._git: WorktreeGit | None = None

    def _need_git(self) -> WorktreeGit:
        if self._git is None:
            self._git = WorktreeGit.find(self._env)
        if self._git is None:
            raise InvalidParams(
                "A worktree session needs git, which is not on the daemon's PATH.",
                [Issue(key="_meta.cody.worktree", message="git not found", source="_meta.cody")],
            )
        return self._git

    async def place(self, cwd: str, request: bool | str | None) -> Placement:
        """Where a new session runs: `cwd`, or a new worktree of its repository."""
        if request is None or request is False:
            return Placement(cwd)
        git = self._need_git()
        directory = check_cwd(cwd)
        name = request if isinstance(request, str) else None
        try:
            worktree = await create_worktree(git, directory, self.root, name)
        except (WorktreeRefused, GitFailed) as exc:
            raise InvalidParams(
                f"No worktree for the session: {exc}.",
                [
                    Issue(
                        key="_meta.cody.worktree",
                        message=str(exc),
                        value=request,
                        source="_meta.cody",
                    )
                ],
            ) from None
        logger.info("session worktree made on branch %s", worktree.branch)
        return Placement(str(worktree.cwd), worktree)

    async def discard(self, place: Placement) -> None:
        """Undo `place` (the session could not be created)."""
        if place.worktree is not None and self._git is not None:
            try:
                await remove_worktree(self._git, place.worktree)
            except GitFailed as exc:
                logger.warning("could not remove an unused worktree: %s", exc)

    async def describe(self, session: Session) -> WorktreeInfo | None:
        """Where the session's worktree is and what changed in it (None: it has none)."""
        worktree = session.worktree
        if worktree is None:
            return None
        inspection = await self._inspect(worktree)
        return _info(worktree, inspection)

    async def finish(self, session: Session) -> WorktreeInfo | None:
        """The session closed: keep its worktree if anything changed, else remove it."""
        worktree = session.worktree
        if worktree is None:
            return None
        if not worktree.path.is_dir():
            return _info(worktree, Inspection(), kept=False)
        try:
            inspection = await self._inspect(worktree)
        except GitFailed as exc:
            logger.warning("kept a worktree whose changes git could not list: %s", exc)
            return _info(worktree, Inspection(), kept=True)
        if inspection.changed:
            logger.info("kept the worktree on branch %s (it has changes)", worktree.branch)
            return _info(worktree, inspection, kept=True)
        try:
            await remove_worktree(self._need_git(), worktree)
        except (GitFailed, InvalidParams) as exc:
            logger.warning("could not remove an unchanged worktree: %s", exc)
            return _info(worktree, inspection, kept=True)
        return _info(worktree, inspection, kept=False)

    async def _inspect(self, worktree: Worktree) -> Inspection:
        try:
            git = self._need_git()
        except InvalidParams as exc:
            raise GitFailed(str(exc)) from None
        return await inspect_worktree(git, worktree)


def _info(worktree: Worktree, inspection: Inspection, *, kept: bool | None = None) -> WorktreeInfo:
    return WorktreeInfo(
        path=str(worktree.path),
        branch=worktree.branch,
        base=worktree.base,
        project_root=str(worktree.project_root),
        changes=[WorktreeChange(path=c.path, change=c.change) for c in inspection.changes],
        commits=inspection.commits,
        kept=kept,
    )
