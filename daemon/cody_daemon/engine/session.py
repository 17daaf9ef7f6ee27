"""A live session: its settings, history, grants, usage, open file and running turn.

Invariants: at most one turn runs at a time (`turn` is set while it runs); every history
item is in the session file before the turn that produced it answers; the file stays
locked while the session is live.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cody_protocol.prompt import StructuredOutput, TokenUsage

from ..core.history import HistoryItem
from ..errors import StorageError
from ..extensions.discovery import Extensions
from ..policy.approval import Grants
from ..store.checkpoint_log import CheckpointLog
from ..store.reader import make_title
from ..store.session_file import SessionFile
from .compaction import Compaction, ContextMark
from .context_items import ContextEntry, latest
from .settings import SessionSettings
from .steering import PromptQueue, SteerInbox
from .subagents.lineage import ChildTotals, Lineage

if TYPE_CHECKING:
    from ..backends.base import AgentBackend
    from ..tools.mcp import McpSessionManager
    from ..tools.processes.table import ProcessTable
    from ..worktrees.worktree import Worktree
    from .hooks import SessionHooks
    from .ports import ClientLink

__all__ = ["Session", "TurnOutcome"]


@dataclass(kw_only=True)
class TurnOutcome:
    stop_reason: str
    turn_id: str
    last: TokenUsage
    turn: TokenUsage
    total: TokenUsage
    cost: tuple[float, float, float] | None = None
    """(last call, this turn, session total) in USD, when the model has a known price."""
    output: StructuredOutput | None = None
    """The final answer of a turn run with an output schema (engine/final_answer.py)."""


@dataclass(kw_only=True, eq=False)
class Session:
    id: str
    cwd: Path
    created: str
    settings: SessionSettings
    file: SessionFile
    history: list[HistoryItem] = field(default_factory=list)
    grants: Grants = field(default_factory=Grants)
    usage_total: TokenUsage = field(default_factory=TokenUsage)
    cost_total_usd: float = 0.0
    title: str | None = None
    turn: asyncio.Task[Any] | None = None
    """The running turn (or `/compact`): one at a time."""
    steering: SteerInbox | None = None
    """The running native turn's inbox for `_cody/session/steer` (engine/steering.py)."""
    queue: PromptQueue = field(default_factory=PromptQueue)
    """Prompts sent with `_meta.cody.queue`, waiting for the running turn."""
    mcp: McpSessionManager | None = None
    """The session's MCP servers (None when it has none)."""
    asker: ClientLink | None = None
    """The link of the client whose prompt runs now: an MCP server's elicitation is
    forwarded to it (None between turns: elicitations are declined)."""
    asks: set[asyncio.Future[Any]] = field(default_factory=set)
    """MCP elicitations waiting for the client's answer (cancelled when the turn ends)."""
    ask_notify: Callable[[str], None] | None = None
    """Tells the running turn's Notification hooks that an MCP server's question waits for
    the user (`elicitation_dialog`, with this message); None between turns."""
    _user_waited_s: float = 0.0
    _waiting_since: float | None = None
    _waits: int = 0
    compaction: Compaction | None = None
    """The latest compaction: the model sees its summary plus the history after it."""
    context: ContextMark | None = None
    """The last model call's reported size and the history length then (for estimates)."""
    context_items: list[ContextEntry] = field(default_factory=list)
    """Project instructions, environment and permissions sent to the model between the
    history items (engine/context_items.py); kept apart from `history`."""
    backend_resume_id: str | None = None
    """The agent CLI's id of this conversation (codex/claude sessions)."""
    agent: AgentBackend | None = None
    """The live agent CLI of a codex/claude session (created at its first prompt)."""
    checkpoints: CheckpointLog = field(default_factory=CheckpointLog)
    """Its checkpoints and rewinds (engine/checkpoints.py, engine/rewind.py)."""
    ephemeral: bool = False
    """Its file is removed when it closes (`_meta.cody.ephemeral`)."""
    processes: ProcessTable | None = None
    """The processes its commands run (tools/processes/): all stopped when it closes."""
    extensions: Extensions = field(default_factory=Extensions)
    """Its custom commands, skills and hooks (found when it became live; native sessions)."""
    hooks: SessionHooks | None = None
    """Runs its hooks (None: it has none)."""
    start_source: str | None = None
    """SessionStart's `source` (`startup`, `resume`) while the hook has yet to run: at the
    start of the next turn."""

    def user_waited_s(self) -> float:
        """Seconds spent so far waiting for the user's answers to MCP elicitations, a wait
        in progress included (a tool call's time limit leaves them out)."""
        if self._waiting_since is None:
            return self._user_waited_s
        return self._user_waited_s + time.monotonic() - self._waiting_since

    def begin_user_wait(self) -> None:
        if self._waits == 0:
            self._waiting_since = time.monotonic()
        self._waits += 1

    def end_user_wait(self) -> None:
        self._waits -= 1
        if self._waits == 0 and self._waiting_since is not None:
            self._user_waited_s += time.monotonic() - self._waiting_since
            self._waiting_since = None

    lineage: Lineage | None = None
    """A child session (a subagent): its parent and agent (engine/subagents/)."""
    children: ChildTotals = field(default_factory=ChildTotals)
    """What its child sessions used (included in `usage_total` and `cost_total_usd`)."""
    worktree: Worktree | None = None
    """The git worktree it runs in, made for it (worktrees/, engine/subagents/isolation.py)."""

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()

    @property
    def project_docs(self) -> list[dict[str, Any]]:
        """The project instruction files the model was given (`_meta.cody.projectDocs`)."""
        entry = latest(self.context_items, "project_docs")
        return list(entry.docs) if entry is not None else []

    def title_from_prompt(self, prompt_text: str) -> str | None:
        """Name an untitled session after its first non-blank prompt (the title is recorded
        in its file); the new title, or None when the session keeps the one it has."""
        if self.title is not None or not prompt_text.strip():
            return None
        self.title = make_title(prompt_text)
        self.file.append("event", {"kind": "title", "title": self.title})
        return self.title

    async def record_turn_end(
        self, turn_id: str, stop_reason: str, failure: BaseException | None
    ) -> BaseException | None:
        """Record that turn `turn_id` ended (with `stop_reason`, or "error" after `failure`) and
        sync the file (every line of the turn is then on disk). Returns what the turn ends with:
        its own `failure`, else the StorageError of a disk that refused the record, else None."""
        record = {
            "kind": "turn_end",
            "turnId": turn_id,
            "stopReason": stop_reason if failure is None else "error",
        }
        try:
            self.file.append("event", record)
            await self.file.sync()
        except StorageError as exc:  # the disk is full: the turn ends with that error
            return failure or exc
        return failure
