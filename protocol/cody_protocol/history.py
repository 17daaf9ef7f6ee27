"""Unified history: Codex, Claude Code and Cody sessions in one message format.

`UnifiedMessage` follows Claude's message shape (content blocks `text`, `thinking`,
`tool_use {id, name, input}`, `tool_result {tool_use_id, content, is_error}`, `image`), so the
blocks keep Claude's snake_case field names; the envelope fields Cody adds (`source`,
`isMeta`, ...) are camelCase like the rest of the wire. Tool names are Claude's vocabulary
(`Bash`, `Read`, `Edit`, ...; the table is in docs/history.md). Output types are always these
unified ones; the per-source line types below (`CodexRolloutLine`, ...) are input-only: they
type `_original`, the raw source line a message was built from.

Methods (all listed in `initialize` `_meta.cody.extensions`):
- `_cody/history/list {agent?, cwd?, cursor?}` -> `{sessions, nextCursor?}`
- `_cody/history/read {agent?, sessionId | path, cursor?, limit?}` -> `{messages, nextCursor?}`
- `_cody/session/history {sessionId, cursor?, limit?}` -> `{messages, nextCursor?}`
- `_cody/history/import {agent?, sessionId | path, cwd}` -> a new Cody session in `cwd`
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from ._base import WireModel
from .session import NewSessionMeta, NewSessionResult

__all__ = [
    "HISTORY_READ_MAX_LIMIT",
    "ClaudeCodeLine",
    "CodexExecEvent",
    "CodexRolloutLine",
    "CodySessionLine",
    "HistoryAgent",
    "HistoryFormat",
    "HistoryImportParams",
    "HistoryImportResult",
    "HistoryImportStats",
    "HistoryListParams",
    "HistoryListResult",
    "HistoryReadParams",
    "HistoryReadResult",
    "HistorySessionInfo",
    "ImageBlock",
    "ImageSource",
    "MessageSource",
    "SessionHistoryParams",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnifiedContent",
    "UnifiedMessage",
    "UnifiedUsage",
]

HistoryAgent = Literal["codex", "claude", "cody"]
HistoryFormat = Literal[
    "codex-rollout", "codex-exec-json", "claude-session", "claude-stream-json", "cody-session"
]
"""What a file holds: a Codex rollout, `codex exec --json` output, a Claude Code session file,
`claude -p --output-format stream-json` output, or a Cody session file."""

HISTORY_READ_MAX_LIMIT = 1000


class _Block(BaseModel):
    """Claude-shaped content blocks: snake_case names, unknown fields ignored on input."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: str


class ThinkingBlock(_Block):
    """Reasoning text (Claude thinking, Codex reasoning summary or content). Opaque provider
    data (signatures, encrypted content) stays in `_original`."""

    type: Literal["thinking"] = "thinking"
    thinking: str


class ToolUseBlock(_Block):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    """Claude's tool vocabulary (`Bash`, `Read`, ...); unknown tools keep their own name."""
    input: dict[str, Any]


class ImageSource(_Block):
    type: Literal["base64", "url"]
    media_type: str | None = None
    data: str | None = None
    url: str | None = None


class ImageBlock(_Block):
    type: Literal["image"] = "image"
    source: ImageSource


class ToolResultBlock(_Block):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock]
    is_error: bool = False


UnifiedContent = Annotated[
    TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock,
    Field(discriminator="type"),
]


class UnifiedUsage(_Block):
    """Tokens of the model call that produced a message. `input_tokens` counts all input,
    cached tokens included (Claude's cache reads and writes are added in)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0


class MessageSource(WireModel):
    agent: HistoryAgent
    format: HistoryFormat
    session_id: str | None = None
    path: str
    line: int
    """1-based line of the file the message starts on."""


class _SourceLine(BaseModel):
    """Input-only: a raw line of a source file, every field kept as it was."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class CodexRolloutLine(_SourceLine):
    """`$CODEX_HOME/sessions/.../rollout-*.jsonl`: `{timestamp, type, payload}`."""

    type: str | None = None
    timestamp: str | None = None
    payload: Any = None


class CodexExecEvent(_SourceLine):
    """`codex exec --json` output: `{type: "item.completed", item: {...}}` and friends."""

    type: str


class ClaudeCodeLine(_SourceLine):
    """A Claude Code session line or a `claude -p --output-format stream-json` event."""

    type: str
    message: Any = None


class CodySessionLine(_SourceLine):
    """A Cody session file line: `{timestamp, type, payload}`."""

    type: str
    timestamp: str | None = None
    payload: Any = None


SourceLine = CodexRolloutLine | CodexExecEvent | ClaudeCodeLine | CodySessionLine


class UnifiedMessage(WireModel):
    """One message of a conversation, whatever agent wrote it.

    Invariants: `role` is `user` for tool results (Claude's shape), `system` for what an
    agent injected or noted (compaction markers, errors); every `tool_use` of a parsed
    session is answered by a `tool_result` with the same id unless the session ended
    mid-call; `content` is never empty.
    """

    id: str | None = None
    role: Literal["user", "assistant", "system"]
    content: list[UnifiedContent]
    timestamp: str | None = None
    model: str | None = None
    usage: UnifiedUsage | None = None
    is_meta: bool | None = None
    """Injected by the agent, not typed by the user or said by the model (environment
    context, command echoes, developer instructions)."""
    is_sidechain: bool | None = None
    """Part of a sub-agent's conversation (Claude Code `Task`)."""
    compaction: bool | None = None
    """A context compaction: its boundary marker or the summary that replaced the history."""
    source: MessageSource
    original: SourceLine | list[SourceLine] | None = Field(default=None, alias="_original")
    """The raw source line(s) the message was built from (several when Claude Code split one
    assistant message over several lines)."""


class HistorySessionInfo(WireModel):
    agent: HistoryAgent
    session_id: str
    path: str
    format: HistoryFormat
    cwd: str | None = None
    title: str | None = None
    """The first text the user typed (injected context skipped), on one line."""
    started_at: str | None = None
    updated_at: str | None = None
    message_count: int
    message_count_exact: bool
    """False when `messageCount` is estimated from the head and tail of a large file; it is
    exact for small files and for files read to the end since they last changed."""
    size_bytes: int
    archived: bool | None = None


class HistoryListParams(WireModel):
    agent: HistoryAgent | None = Field(
        default=None, validation_alias=AliasChoices("agent", "source")
    )
    cwd: str | None = None
    cursor: str | None = None
    query: str | None = Field(default=None, max_length=500)
    """Only sessions whose title, directory, id or agent contain every word of it (any
    case); the cursor of a filtered listing is only good for the same query."""


class HistoryListResult(WireModel):
    sessions: list[HistorySessionInfo]
    next_cursor: str | None = None


class _SessionRef(WireModel):
    agent: HistoryAgent | None = Field(
        default=None, validation_alias=AliasChoices("agent", "source")
    )
    """Which agent's sessions `sessionId` names; any when absent. `source` is an alias."""
    session_id: str | None = None
    path: str | None = None

    @model_validator(mode="after")
    def _one_reference(self) -> _SessionRef:
        if (self.session_id is None) == (self.path is None):
            raise ValueError("give exactly one of sessionId and path")
        return self

    @field_validator("path")
    @classmethod
    def _absolute_path(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"path must be absolute, got {value!r}")
        return value


class HistoryReadParams(_SessionRef):
    cursor: str | None = None
    limit: int | None = Field(default=None, ge=1, le=HISTORY_READ_MAX_LIMIT)
    """Messages per page (default 200)."""
    include_original: bool = True
    """Send `_original` with every message."""


class HistoryReadResult(WireModel):
    messages: list[UnifiedMessage]
    next_cursor: str | None = None
    skipped_lines: int = 0
    """Lines read for this page that could not be used (torn, not JSON, unknown types)."""
    session: HistorySessionInfo | None = None
    """Sent with the first page."""


class SessionHistoryParams(WireModel):
    session_id: str
    cursor: str | None = None
    limit: int | None = Field(default=None, ge=1, le=HISTORY_READ_MAX_LIMIT)
    """Messages per page; without it the whole history is returned."""
    include_original: bool = False


class HistoryImportParams(_SessionRef):
    cwd: str
    """The new session's directory (its workspace): required, and never taken from the
    session file, which may name any directory (`/` would make the whole disk the
    workspace). Clients send their own current directory unless the user gives another."""
    meta: NewSessionMeta | None = Field(default=None, alias="_meta")
    """Settings for the new session, as in `session/new` (provider, model, ...)."""

    @field_validator("cwd")
    @classmethod
    def _absolute_cwd(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"cwd must be an absolute path, got {value!r}")
        return value


class HistoryImportStats(WireModel):
    agent: HistoryAgent
    session_id: str
    path: str
    messages: int
    """Unified messages read."""
    items: int
    """History items written to the new session."""
    tool_calls: int
    skipped_messages: int
    """Messages not imported: injected context, compaction summaries, sub-agent turns."""
    skipped_lines: int
    cwd: str
    """The new session's directory (the request's `cwd`)."""
    source_cwd: str | None = None
    """The directory the session file says it ran in (shown to the user; never used)."""
    images_left_out: int = 0
    """Inline images not imported because they break the image rules (type, size, how many
    per message and per session): each is a note in its message instead."""


class HistoryImportResult(NewSessionResult):
    imported: HistoryImportStats
