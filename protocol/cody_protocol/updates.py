"""`session/update` notifications (ACP `SessionUpdate` variants that Cody sends)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._base import WireModel
from .commands import AvailableCommandsUpdate
from .content import ContentBlock, ToolCallContent
from .session import SessionConfigOption

__all__ = [
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "CodySessionInfoMeta",
    "CompactionNotice",
    "ConfigOptionUpdate",
    "Cost",
    "CurrentModeUpdate",
    "PlanEntry",
    "PlanUpdate",
    "SessionInfoMeta",
    "SessionInfoUpdate",
    "SessionNotification",
    "SessionUpdate",
    "ToolCallLocation",
    "DecidedBy",
    "ToolCallDecision",
    "ToolCallStart",
    "ToolCallStatus",
    "ToolCallUpdate",
    "ToolKind",
    "UsageUpdate",
    "UserMessageChunk",
]

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class UserMessageChunk(WireModel):
    session_update: Literal["user_message_chunk"] = "user_message_chunk"
    content: ContentBlock
    message_id: str | None = None
    """ACP `messageId`: the same for every chunk of one message (Cody's history item id)."""


class AgentMessageChunk(WireModel):
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"
    content: ContentBlock
    message_id: str | None = None
    """ACP `messageId`: the same for every chunk of one message (Cody's history item id)."""


class AgentThoughtChunk(WireModel):
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"
    content: ContentBlock
    message_id: str | None = None
    """ACP `messageId`: the same for every chunk of one message (Cody's history item id)."""


class ToolCallLocation(WireModel):
    path: str
    line: int | None = None


class ToolCallStart(WireModel):
    """`tool_call`: the model asked for a tool (or, on replay, the call's final state)."""

    session_update: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    title: str
    kind: ToolKind = "other"
    status: ToolCallStatus = "pending"
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    """`terminal_info` (cody_protocol.terminal) for a command shown as a terminal."""


DecidedBy = Literal["rule", "hook", "grant", "policy", "sandbox", "allowlist", "user", "timeout"]


class ToolCallDecision(WireModel):
    """`_meta.cody.decision` of a `tool_call_update`: what decided whether the call ran."""

    by: DecidedBy
    detail: str
    """In words: the rule's text and file, the option the user chose, the policy's reason."""
    outcome: Literal["allow", "deny"]
    """Whether the call was let run (`deny`: it ended `failed` without running)."""


class ToolCallUpdate(WireModel):
    """`tool_call_update`: only the fields that changed."""

    session_update: Literal["tool_call_update"] = "tool_call_update"
    tool_call_id: str
    status: ToolCallStatus | None = None
    title: str | None = None
    kind: ToolKind | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    """`terminal_output` / `terminal_exit` (cody_protocol.terminal); `cody.appendOutput` for
    appended live output (docs/protocol.md "Live command output"); `cody.decision`
    (`ToolCallDecision`) once the call is decided."""


class PlanEntry(WireModel):
    content: str
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"]


class PlanUpdate(WireModel):
    session_update: Literal["plan"] = "plan"
    entries: list[PlanEntry]


class Cost(WireModel):
    amount: float
    currency: str


class UsageUpdate(WireModel):
    session_update: Literal["usage_update"] = "usage_update"
    used: int
    """Tokens in the context window after the last model call."""
    size: int
    """The model's context window."""
    cost: Cost | None = None


class ConfigOptionUpdate(WireModel):
    session_update: Literal["config_option_update"] = "config_option_update"
    config_options: list[SessionConfigOption]


class CurrentModeUpdate(WireModel):
    session_update: Literal["current_mode_update"] = "current_mode_update"
    current_mode_id: str


class CompactionNotice(WireModel):
    """The conversation was compacted: the model now sees a summary plus the recent items.

    The session file keeps the whole history (`session/load` still replays all of it)."""

    reason: Literal["auto", "manual"]
    """`auto`: the next request would have passed the context budget; `manual`: asked for."""
    tokens_before: int
    """Estimated tokens of what the model saw before compacting."""
    tokens_after: int
    """Estimated tokens of what it sees now (summary + recent items)."""
    summarized_items: int
    """History items replaced by the summary."""
    kept_items: int
    """Recent history items the model still sees verbatim."""


class CodySessionInfoMeta(WireModel):
    compaction: CompactionNotice | None = None


class SessionInfoMeta(WireModel):
    cody: CodySessionInfoMeta | None = None


class SessionInfoUpdate(WireModel):
    """Title changes; Cody's `_meta.cody.compaction` announces a compaction (ACP lets agents
    attach `_meta` to a session_info_update; clients that do not know it ignore it)."""

    session_update: Literal["session_info_update"] = "session_info_update"
    title: str | None = None
    updated_at: str | None = None
    meta: SessionInfoMeta | None = Field(default=None, alias="_meta")


SessionUpdate = Annotated[
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallUpdate
    | PlanUpdate
    | UsageUpdate
    | ConfigOptionUpdate
    | CurrentModeUpdate
    | SessionInfoUpdate
    | AvailableCommandsUpdate,
    Field(discriminator="session_update"),
]


class SessionNotification(WireModel):
    session_id: str
    update: SessionUpdate
