"""Checkpoints and rewind: `_cody/session/checkpoints`, `_cody/session/checkpointDiff`,
`_cody/session/rewind` (docs/protocol.md, "Checkpoints and rewind"; docs/checkpoints.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import WireModel

__all__ = [
    "CheckpointDiffParams",
    "CheckpointDiffResult",
    "CheckpointFile",
    "CheckpointInfo",
    "CheckpointsParams",
    "CheckpointsResult",
    "NotCoveredFile",
    "RewindFailure",
    "RewindParams",
    "RewindResult",
    "RewindStoppedProcess",
]

FileChangeKind = Literal["added", "modified", "deleted"]


class CheckpointsParams(WireModel):
    """`_cody/session/checkpoints {sessionId}` (a live session)."""

    session_id: str


class CheckpointFile(WireModel):
    path: str
    """Relative to the session's cwd, `/`-separated."""
    change: FileChangeKind


class NotCoveredFile(WireModel):
    """A file a checkpoint does not hold (too large, a nested git repository, unreadable,
    not a regular file); ignored files are not listed."""

    path: str
    why: str


class CheckpointInfo(WireModel):
    """One checkpoint: the workspace (and conversation) before a turn, or before a rewind."""

    checkpoint_id: str
    prompt: str
    """The first line of the turn's prompt (a rewind checkpoint says which rewind)."""
    time: str
    """When it was taken (ISO 8601, UTC)."""
    files: list[CheckpointFile]
    """What the turn (or rewind) changed: empty while it runs."""
    turn: int | None = None
    """The prompt's position in the conversation (1 = the first); none for a rewind."""
    reason: Literal["turn", "rewind"] = "turn"
    in_conversation: bool | None = None
    """Whether the conversation still holds this turn's prompt (false after a rewind
    before it); none for a rewind checkpoint."""
    restorable: bool = True
    """False when no snapshot of the files could be taken (`error` says why): only the
    conversation can be rewound to it."""
    error: str | None = None
    interrupted: bool = False
    """The turn never ended (the daemon was killed): who changed its files is not known."""
    not_covered: list[NotCoveredFile] = Field(default_factory=list)


class CheckpointsResult(WireModel):
    checkpoints: list[CheckpointInfo]
    """Newest first."""


class CheckpointDiffParams(WireModel):
    session_id: str
    checkpoint_id: str


class CheckpointDiffResult(WireModel):
    checkpoint_id: str
    diff: str
    """The unified diff of what that turn (or rewind) changed (git's format)."""
    truncated: bool = False
    """True when the diff was longer than 1 MiB and was cut."""
    files: list[CheckpointFile] = Field(default_factory=list)


class RewindParams(WireModel):
    """`_cody/session/rewind`: back to the state before a checkpoint's turn."""

    session_id: str
    checkpoint_id: str
    restore: Literal["files", "conversation", "both"]
    force: bool = False
    """Also overwrite files changed since the checkpoint by someone else (conflicts)."""


class RewindFailure(WireModel):
    path: str
    reason: str


class RewindStoppedProcess(WireModel):
    """A process an undone turn started, stopped by a rewind of its files."""

    process_id: int
    command: str


class RewindResult(WireModel):
    restored: list[str]
    """Paths written back or removed."""
    conflicts: list[str]
    """Paths changed since the checkpoint by someone else, left as they are (none with
    `force`)."""
    conversation_at: str | None = None
    """The id of the last message the conversation keeps (absent when it keeps none)."""
    failed: list[RewindFailure] = Field(default_factory=list)
    """Paths that could not be restored safely (a symlink in the way, inside .git...)."""
    redo_checkpoint_id: str
    """The checkpoint of the state left behind: rewind to it to undo this rewind."""
    stopped_processes: list[RewindStoppedProcess] = Field(default_factory=list)
    """Processes still running that the undone turns started (`restore` "files" or
    "both"): stopped before anything was restored, so none of them changes the files
    again. A redo does not start them again."""
