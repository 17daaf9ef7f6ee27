"""`_cody/session/processes` and `_cody/process/kill`: the processes a session's commands
run (docs/protocol.md "Extensions", "Processes").

A process is listed from its start until the session ends; one the model's call waited
for is dropped when the call returns, one that outlived its call (`exec` with `background`,
or still running after `yieldMs`) stays with its exit code (the latest few ended ones).
"""

from __future__ import annotations

from typing import Literal

from ._base import WireModel

__all__ = [
    "KillProcessParams",
    "KillProcessResult",
    "ProcessInfo",
    "SessionProcessesParams",
    "SessionProcessesResult",
]


class SessionProcessesParams(WireModel):
    session_id: str


class ProcessInfo(WireModel):
    process_id: int
    """The id the model uses (`readOutput`, `writeStdin`, `killProcess`); unique per session."""
    command: str | list[str]
    """As the model gave it: a string (run by bash) or an argv."""
    pid: int
    """The host pid of the command (of bubblewrap, for a sandboxed one)."""
    started_at: str
    """ISO 8601, UTC."""
    running: bool
    exit_code: int | None = None
    """Once it ended: its code (128 + N when signal N killed it)."""
    signal: str | None = None
    """The signal that ended it (`SIGTERM`), when one did."""
    cwd: str
    background: bool
    """Started with `background`: a cancelled turn leaves it running."""
    kept: bool
    """It outlived its call (the model can read, write and stop it)."""
    tty: bool
    sandboxed: bool
    output_bytes: int
    """How much it printed so far (the latest 1 MiB is kept)."""
    tool_call_id: str | None = None
    """The `exec` call that started it (its live output continues that call's)."""
    stopped_by: str | None = None
    """Who stopped it, when someone did (`killProcess`, `_cody/process/kill`, the session's
    end, a cancelled turn)."""


class SessionProcessesResult(WireModel):
    processes: list[ProcessInfo]
    limit: int
    """How many processes that outlive their call may run in this session at once."""


class KillProcessParams(WireModel):
    session_id: str
    process_id: int


class KillProcessResult(WireModel):
    process: ProcessInfo
    """The process after it was stopped."""
    outcome: Literal["stopped", "already ended"]
