"""Events the engine emits while a session runs; the rpc layer maps them to `session/update`.

Events are small frozen dataclasses (the text deltas are on the hot path). The engine
emits them in order; the rpc layer may coalesce consecutive text of the same kind but
never reorders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cody_protocol.content import ToolCallContent
from cody_protocol.session import SessionConfigOption
from cody_protocol.updates import ToolCallLocation, ToolCallStatus, ToolKind

from ..core.code_intel import Diagnostic

__all__ = [
    "CallDecision",
    "AgentText",
    "AgentThought",
    "CommandsAvailable",
    "Compacted",
    "DiagnosticsReported",
    "ConfigChanged",
    "EngineEvent",
    "McpStatusChanged",
    "PlanChanged",
    "TitleChanged",
    "ToolCallOpened",
    "ToolCallOutput",
    "ToolCallOutputEnd",
    "ToolCallProgress",
    "UsageChanged",
    "UserImage",
    "UserText",
]


@dataclass(frozen=True, slots=True)
class AgentText:
    text: str
    message_id: str | None = None
    """The history item the text belongs to (ACP `messageId`: shared by its chunks)."""


@dataclass(frozen=True, slots=True)
class AgentThought:
    text: str
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class UserText:
    """A user message (sent only when replaying a session on `session/load`)."""

    text: str
    message_id: str | None = None
    blocks: tuple[dict[str, Any], ...] = ()
    """The ACP content blocks as the client sent them (then sent instead of `text`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UserImage:
    """An image of a user message (sent only when replaying a session on `session/load`)."""

    data: str
    """Base64."""
    mime_type: str
    message_id: str | None = None
    """The message it belongs to (its text chunks carry the same id)."""


@dataclass(frozen=True, slots=True)
class CallDecision:
    """What decided whether a call ran (`_meta.cody.decision`; recorded in the session file)."""

    by: Literal["rule", "hook", "grant", "policy", "sandbox", "allowlist", "user", "timeout"]
    detail: str
    outcome: Literal["allow", "deny"]

    def payload(self) -> dict[str, str]:
        return {"by": self.by, "detail": self.detail, "outcome": self.outcome}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallOpened:
    """The model asked for a tool (status pending), or on replay the call's final state."""

    call_id: str
    title: str
    kind: ToolKind
    raw_input: Any
    status: ToolCallStatus = "pending"
    content: list[ToolCallContent] | None = None
    raw_output: Any = None
    locations: list[ToolCallLocation] | None = None
    live_cwd: str | None = None
    """Set for a tool that streams output while it runs (`Tool.live_output`): the directory
    it runs in. Clients that can show a display-only terminal get one for it."""
    decision: CallDecision | None = None
    """On replay: what decided the call."""


@dataclass(frozen=True, slots=True)
class ToolCallOutput:
    """New output of a running live-output tool: only what came since the previous one."""

    call_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallOutputEnd:
    """The live-output tool's process ended (sent just before the call's final progress)."""

    call_id: str
    exit_code: int | None
    signal: str | None = None
    complete: bool = True
    """False when the stream stopped early (its limit): the final text is shown too."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallProgress:
    call_id: str
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    raw_output: Any = None
    locations: list[ToolCallLocation] | None = None
    """The files the call touched (replaces the locations of its `tool_call`)."""
    decision: CallDecision | None = None
    """Sent once, when the call is decided (with `in_progress`, or with `failed` when it
    does not run)."""
    title: str | None = None
    raw_input: Any = None
    """A new title and input: the user edited the call's arguments when approving it."""


@dataclass(frozen=True, slots=True)
class PlanChanged:
    entries: tuple[tuple[str, Literal["pending", "in_progress", "completed"]], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageChanged:
    used: int
    size: int
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChanged:
    options: list[SessionConfigOption]
    mode_id: str
    mode_changed: bool


@dataclass(frozen=True, slots=True)
class TitleChanged:
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Compacted:
    """The conversation was compacted (sent as a session_info_update with `_meta.cody`)."""

    reason: Literal["auto", "manual"]
    tokens_before: int
    tokens_after: int
    summarized_items: int
    kept_items: int


@dataclass(frozen=True, slots=True, kw_only=True)
class McpStatusChanged:
    """An MCP server of the session changed state (sent as `_cody/mcp/status`)."""

    server: str
    state: Literal["starting", "ready", "failed"]
    reason: str | None = None
    tools: int = 0


@dataclass(frozen=True, slots=True)
class CommandsAvailable:
    """The slash commands a session offers (sent as `available_commands_update`)."""

    commands: tuple[tuple[str, str, str | None], ...]
    """(name, description, input hint or None), in the order clients should list them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DiagnosticsReported:
    """What the language servers found new in a file a tool call changed (sent as
    `_cody/diagnostics`, not as a session update)."""

    call_id: str | None
    path: str
    diagnostics: tuple[Diagnostic, ...]
    servers: tuple[str, ...]
    late: tuple[str, ...] = ()


EngineEvent = (
    AgentText
    | AgentThought
    | UserText
    | UserImage
    | ToolCallOpened
    | ToolCallProgress
    | ToolCallOutput
    | ToolCallOutputEnd
    | PlanChanged
    | UsageChanged
    | ConfigChanged
    | TitleChanged
    | McpStatusChanged
    | Compacted
    | CommandsAvailable
    | DiagnosticsReported
)
