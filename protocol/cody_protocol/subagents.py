"""Child sessions (subagents) and worktree sessions (docs/subagents.md).

A child session is an ordinary session started by a parent's `task` tool call: it is listed
by `session/list` with `parentSessionId`, and its `session/update` notifications and
`session/request_permission` requests carry `_meta.cody.parentSessionId` (with the parent's
tool call and the agent's name). A worktree session runs in a git worktree of its project
on a branch of its own; `_cody/session/worktree` says where and what changed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import WireModel

__all__ = [
    "ChildSessionMeta",
    "CloseSessionMeta",
    "CloseSessionResult",
    "CodyCloseSessionMeta",
    "CodyUpdateMeta",
    "UpdateMeta",
    "WorktreeChange",
    "WorktreeInfo",
    "WorktreeParams",
    "WorktreeResult",
]


class CodyUpdateMeta(WireModel):
    """`_meta.cody` of a child session's `session/update` (and of its permission requests)."""

    parent_session_id: str
    """The session whose `task` call started this one."""
    parent_tool_call_id: str | None = None
    """That `task` call (clients show the child's activity under it)."""
    agent: str | None = None
    """The agent profile the child runs (`explore`, `general`, a profile's name)."""


class UpdateMeta(WireModel):
    cody: CodyUpdateMeta | None = None


class ChildSessionMeta(WireModel):
    """`_meta.cody` of the parent's `tool_call_update` once its `task` call started a child:
    the child's id, so a client can nest (or open) the child's own updates."""

    child_session_id: str
    agent: str
    background: bool = False


class WorktreeChange(WireModel):
    path: str
    """Relative to the worktree."""
    change: Literal["added", "modified", "deleted", "renamed", "untracked"]


class WorktreeInfo(WireModel):
    """Where a worktree session runs, and what it changed."""

    path: str
    """The worktree (under Cody's data dir)."""
    branch: str
    """The branch it was created on (`cody/<name>`)."""
    base: str
    """The commit it started from."""
    project_root: str
    """The main checkout of the repository."""
    changes: list[WorktreeChange] = Field(default_factory=list)
    """Files that differ from `base` (committed on the branch or not), at most 1,000."""
    commits: int = 0
    """Commits on the branch since `base`."""
    kept: bool | None = None
    """Set when the session closed: True when the worktree (and its branch) were kept because
    something changed, False when they were removed."""


class WorktreeParams(WireModel):
    session_id: str


class WorktreeResult(WireModel):
    worktree: WorktreeInfo | None = None
    """None: the session does not run in a worktree."""


class CodyCloseSessionMeta(WireModel):
    worktree: WorktreeInfo | None = None
    """A worktree session: whether its worktree was kept (and on which branch) or removed."""


class CloseSessionMeta(WireModel):
    cody: CodyCloseSessionMeta | None = None


class CloseSessionResult(WireModel):
    """`session/close`'s answer: `{}`, or what became of a worktree session's worktree."""

    meta: CloseSessionMeta | None = Field(default=None, alias="_meta")
