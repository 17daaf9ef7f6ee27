"""The interface of an agent backend, and what it reports to the engine.

A backend owns one external agent CLI process for one live session. The engine calls
`run_turn` once per prompt (never two at a time); the backend reports what happens as
`BackendEvent`s through `emit`, in the order the CLI reported it, and asks the engine about
each approval the CLI requests through `approve` (the engine applies Cody's policy, grants
and allowlist, and asks the client when needed).

Invariants every backend keeps:
- `run_turn` returns a stop reason (`end_turn`, `cancelled`, `max_tokens`,
  `max_turn_requests`, `refusal`) or raises `ProviderError` classified by failures.py; it
  never raises anything else for something the CLI did (exit, garbage, protocol error);
- cancelling the task that awaits `run_turn` leaves the CLI running: the caller then calls
  `stop()`, which asks the CLI to interrupt the turn and, after a short grace, kills the CLI
  and everything it started (process.py); the next `run_turn` starts a new CLI that resumes
  the same conversation by `resume_id`;
- `resume_id` is reported (`ResumeIdAssigned`) as soon as the CLI assigns it, before any
  model output, so a daemon killed mid-turn can still resume the conversation;
- `dry_run` runs nothing and reports only names of environment variables, never values.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from cody_protocol.content import ToolCallContent
from cody_protocol.prompt import DryRunReport
from cody_protocol.settings import ApprovalPolicy, ReasoningEffort, SandboxMode
from cody_protocol.updates import ToolKind

from ..core.tooling import GrantKey, ToolFacts
from .info import BackendInfo, BackendKind
from .peer import AnswerId, CliEnded, JsonLinePeer, Message

__all__ = [
    "DENIED",
    "AgentBackend",
    "Answer",
    "ApprovalAsk",
    "Approver",
    "BackendEvent",
    "BackendKind",
    "BackendSettings",
    "CostReported",
    "Decision",
    "FileRead",
    "Launch",
    "PeerBackend",
    "PlanStatus",
    "PlanUpdated",
    "ResumeIdAssigned",
    "StopReason",
    "TextDelta",
    "ThoughtDelta",
    "TokenCounts",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
    "TurnIO",
    "UsageReported",
]

StopReason = Literal["end_turn", "cancelled", "max_tokens", "max_turn_requests", "refusal"]
Decision = Literal["allow_once", "allow_session", "reject_once", "reject_session", "cancelled"]


# -- events -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStarted:
    """The agent started (or asked to start) a tool call."""

    call_id: str
    tool: str
    """The agent's own name for the tool (`Bash`, `commandExecution`, ...)."""
    cody_tool: str | None
    """The Cody tool it corresponds to (`exec`, `applyPatch`, ...), for allowlists and grants."""
    title: str
    kind: ToolKind
    raw_input: Any
    arguments: str
    """The call's arguments as JSON text (what the session file keeps)."""
    locations: tuple[str, ...] = ()
    content: list[ToolCallContent] | None = None
    """What the call will do, e.g. the diff of an edit."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """New output of a running call (a delta; the engine keeps the tail for clients)."""

    call_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFinished:
    call_id: str
    status: Literal["completed", "failed"]
    output: str
    """What the agent's model received as the result."""
    content: list[ToolCallContent] | None = None
    raw_output: dict[str, Any] | None = None


PlanStatus = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    entries: tuple[tuple[str, PlanStatus], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenCounts:
    input: int = 0
    """Every input token of the call, cached ones included."""
    output: int = 0
    cached_read: int = 0
    cached_write: int = 0
    reasoning: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReported:
    """One model call's usage (and the agent's own cost figure for it, when it gives one)."""

    last: TokenCounts
    context_window: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class CostReported:
    """What the agent says this turn cost in USD (Claude Code's `total_cost_usd` difference)."""

    cost_usd: float


@dataclass(frozen=True, slots=True)
class ResumeIdAssigned:
    """The id the CLI resumes this conversation by (Codex thread id, Claude session id)."""

    resume_id: str


BackendEvent = (
    TextDelta
    | ThoughtDelta
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | PlanUpdated
    | UsageReported
    | CostReported
    | ResumeIdAssigned
)


# -- approvals --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileRead:
    """A path a tool call reads (for the login-file refusal, engine/backend_guard.py)."""

    path: str
    contents_below: bool = False
    """A directory whose files' contents are searched (not only listed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalAsk:
    """The CLI asks whether it may run a call (already announced with `ToolStarted`)."""

    call_id: str
    cody_tool: str | None
    title: str
    kind: ToolKind
    raw_input: Any
    content: list[ToolCallContent]
    grant_key: GrantKey
    known_safe: bool = False
    """An `exec` of a command Cody's policy knows to be read-only."""
    sandbox_violation: str | None = None
    """Why Cody's sandbox mode forbids the call, where the CLI would not stop it (mapping.py)."""
    runs_unsandboxed: bool = False
    """Once approved, the CLI runs it outside any sandbox (the request says so plainly)."""
    reads: tuple[FileRead, ...] = ()
    """Files and directories the call reads (a login file among them: refused)."""


DENIED = "User denied approval"


@dataclass(frozen=True, slots=True)
class Answer:
    decision: Decision
    message: str = DENIED
    """What the model is told when the call is refused (Claude Code passes it on)."""


Approver = Callable[[ApprovalAsk], Awaitable[Answer]]


# -- settings ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendSettings:
    """What the engine hands a backend for one turn (the session's current settings)."""

    approval_policy: ApprovalPolicy
    sandbox_mode: SandboxMode
    model: str | None = None
    """None: the CLI's own default model."""
    reasoning_effort: ReasoningEffort | None = None
    allowed_tools: frozenset[str] | None = None
    """Cody tool names (None: all)."""
    tool_facts: Mapping[str, ToolFacts] = field(default_factory=dict)
    """What each Cody tool can do (`ToolRegistry.facts()`): backends/mapping.py derives from
    these which allowed tools write. A tool it does not know counts as one that does not
    (so a CLI gets a narrower sandbox, never a wider one)."""
    project_trusted: bool = False
    """The workspace is in the user's `trusted_projects`: the CLI may read its project settings."""
    protected: tuple[Path, ...] = ()
    """Cody's own config and data directories: no edit may write them (policy/protected.py)."""
    hidden_files: tuple[Path, ...] = ()
    """The login files: a sandboxed command may not read them (whether they exist or not)."""


@dataclass(frozen=True, slots=True)
class TurnIO:
    """What one turn reports to the engine (`emit`), asks it (`approve`), and runs with."""

    emit: Callable[[BackendEvent], None]
    approve: Approver
    settings: BackendSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """How a backend starts its CLI."""

    cli: Path | None
    """None when the CLI is not installed (`install_hint` says how to get it)."""
    cwd: Path
    env: Mapping[str, str]
    """The CLI's environment (backends/env.py `cli_environment`)."""
    install_hint: str = ""
    resume_id: str | None = None
    own_credentials: tuple[str, ...] = ()
    """Credential variables in `env` that only the CLI itself needs (kept from its commands
    where the CLI allows it)."""


# -- the interface ----------------------------------------------------------------------------


class AgentBackend(ABC):
    info: ClassVar[BackendInfo]
    """The facts of this backend's CLI (its module's `INFO`, backends/info.py)."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.resume_id: str | None = launch.resume_id
        self.priced_model: tuple[str, str] | None = None
        """(provider id, model) when the agent's calls are billed per token to an API key of a
        provider Cody has prices for; the engine then shows their cost (the agent gives none)."""

    @property
    def kind(self) -> BackendKind:
        return self.info.kind

    @property
    def display_name(self) -> str:
        return self.info.display_name

    async def run_turn(
        self,
        prompt: str,
        settings: BackendSettings,
        emit: Callable[[BackendEvent], None],
        approve: Approver,
    ) -> StopReason:
        """Run one turn to its end (see the module docstring)."""
        try:
            return await self.turn(prompt, TurnIO(emit, approve, settings))
        except CliEnded as exc:
            raise exc.error from None

    @abstractmethod
    async def turn(self, prompt: str, io: TurnIO) -> StopReason:
        """`run_turn` of this CLI; `CliEnded` (the CLI died or babbled) becomes its error."""

    @abstractmethod
    async def stop(self) -> None:
        """Interrupt the running turn, then end the CLI and its children. Idempotent."""

    @abstractmethod
    def dry_run(self, prompt: str, settings: BackendSettings) -> DryRunReport:
        """What `run_turn` would run, without running anything."""


class PeerBackend(AgentBackend):
    """A backend that talks to its CLI through one line-JSON peer (peer.py): started when a
    turn needs it, replaced when the command line it needs changes, never reused once
    closed (`_peer` is None then)."""

    def __init__(self, launch: Launch) -> None:
        super().__init__(launch)
        self._peer: JsonLinePeer | None = None

    async def _start_peer(self, argv: list[str], answer_id: AnswerId) -> JsonLinePeer:
        """Spawn the CLI as the backend's peer (the previous one must be closed)."""
        launch = self.launch
        peer = JsonLinePeer(self.kind, argv, cwd=launch.cwd, env=launch.env, answer_id=answer_id)
        self._peer = peer
        await peer.start()
        return peer

    async def _close_peer(self, *, gracefully: bool = False) -> None:
        """End the CLI, if one runs (`gracefully`: give it time to save its conversation)."""
        if self._peer is not None:
            await self._peer.close(gracefully=gracefully)
        self._peer = None

    def _send(self, message: Message) -> None:
        """One line to the CLI; nothing when none runs (the turn was stopped)."""
        if self._peer is not None:
            self._peer.send(message)

    async def next_message(self) -> Message:
        """The CLI's next message that answers no request (`CliEnded` once it is dead)."""
        assert self._peer is not None
        return await self._peer.next_message()
