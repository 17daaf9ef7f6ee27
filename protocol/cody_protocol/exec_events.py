"""The JSON events `cody-client exec --json` prints, one per line (a stable, versioned contract).

Order within a turn: `session.started` once, `turn.started`, then any of `message.delta`,
`message.completed`, `tool.started`, `approval.requested`, `tool.completed`, `plan.updated`,
`usage.updated`, and finally exactly one `turn.completed` (or `error` when the turn could not
run or finish: the daemon could not start, a request failed, a signal ended the run before
the turn did). A SIGTERM (or SIGHUP) during the turn cancels it: `turn.completed` then has
`stopReason: "cancelled"` and exit code 3. A text run (`message.delta`s of one kind) is always closed by a `message.completed`
carrying the whole text before any other event. Readers must ignore unknown event types and
unknown fields; nothing is removed without bumping `version`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from ._base import WireModel
from .prompt import StopReason, StructuredOutput, TurnCost, TurnUsage
from .updates import PlanEntry, ToolCallStatus, ToolKind

__all__ = [
    "EXEC_EVENT",
    "EXEC_EVENTS_VERSION",
    "ApprovalRequested",
    "ErrorEvent",
    "ExecEvent",
    "MessageCompleted",
    "MessageDelta",
    "PlanUpdated",
    "SessionStarted",
    "ToolCompleted",
    "ToolStarted",
    "TurnCompleted",
    "TurnStarted",
    "UsageUpdated",
]

EXEC_EVENTS_VERSION = 1


class SessionStarted(WireModel):
    type: Literal["session.started"] = "session.started"
    version: int = EXEC_EVENTS_VERSION
    session_id: str
    cwd: str
    provider: str | None = None
    model: str | None = None
    resumed: bool = False
    session_file: str | None = None
    warnings: list[str] = Field(default_factory=list)
    """Configuration warnings (e.g. keys ignored from an untrusted project's config)."""
    ephemeral: bool = False
    """`--ephemeral`: the session file is removed when the run ends."""


class TurnStarted(WireModel):
    type: Literal["turn.started"] = "turn.started"
    prompt: str


class MessageDelta(WireModel):
    type: Literal["message.delta"] = "message.delta"
    kind: Literal["text", "thought"]
    text: str


class MessageCompleted(WireModel):
    type: Literal["message.completed"] = "message.completed"
    kind: Literal["text", "thought"]
    text: str


class ToolStarted(WireModel):
    type: Literal["tool.started"] = "tool.started"
    tool_call_id: str
    title: str
    kind: ToolKind
    input: Any = None


class ApprovalRequested(WireModel):
    type: Literal["approval.requested"] = "approval.requested"
    tool_call_id: str
    title: str
    decision: str
    """What this client answered: an option id or `cancelled`."""
    reason: str
    """Why, e.g. `--approve allow` or `no terminal to ask`."""


class ToolCompleted(WireModel):
    type: Literal["tool.completed"] = "tool.completed"
    tool_call_id: str
    status: ToolCallStatus
    output: str | None = None
    """The text the model received."""
    raw_output: Any = None


class PlanUpdated(WireModel):
    type: Literal["plan.updated"] = "plan.updated"
    entries: list[PlanEntry]


class UsageUpdated(WireModel):
    type: Literal["usage.updated"] = "usage.updated"
    used: int
    size: int
    cost_usd: float | None = None


class TurnCompleted(WireModel):
    type: Literal["turn.completed"] = "turn.completed"
    stop_reason: StopReason
    exit_code: int
    turn_id: str | None = None
    usage: TurnUsage | None = None
    cost: TurnCost | None = None
    denied: bool = False
    """A tool call of this turn was denied (exit code 4 when nothing else failed)."""
    final_text: str | None = None
    """The turn's last agent message; None: the model wrote no text after its last tool
    call."""
    output: StructuredOutput | None = None
    """With `--output-schema`: the final answer (`valid`, the parsed `value`, `errors`);
    exit code 7 when it is not valid."""


class ErrorEvent(WireModel):
    type: Literal["error"] = "error"
    message: str
    exit_code: int
    code: int | None = None
    """The JSON-RPC error code from the daemon, when there was one."""
    data: Any = None


ExecEvent = Annotated[
    SessionStarted
    | TurnStarted
    | MessageDelta
    | MessageCompleted
    | ToolStarted
    | ApprovalRequested
    | ToolCompleted
    | PlanUpdated
    | UsageUpdated
    | TurnCompleted
    | ErrorEvent,
    Field(discriminator="type"),
]

EXEC_EVENT: TypeAdapter[ExecEvent] = TypeAdapter(ExecEvent)
