"""The Claude Code stream-json messages Cody reads and sends, typed by hand (Claude Code 2.1.197).

Claude Code prints no schema of its `--output-format stream-json` protocol; these are the
fields Cody uses, as the pinned CLI prints them (tests/e2e/test_backends.py and
test_backend_attacks.py run it) and as the Agent SDK sends its control requests. Only what
Cody reads is here. They are views for mypy, nothing is checked at run time: values from the
CLI are still read defensively (`.get`, `str(...)`), and a line that is not a JSON object
ends the turn (peer.py).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AssistantLine",
    "CanUseToolRequest",
    "ContentBlock",
    "ControlRequestLine",
    "ControlResponse",
    "ControlResponseLine",
    "HookCallbackRequest",
    "MessageBody",
    "PermissionAllow",
    "PermissionDeny",
    "PreToolUseInput",
    "ResultLine",
    "StreamDelta",
    "StreamEvent",
    "StreamEventLine",
    "SystemLine",
    "Usage",
    "UserLine",
]


# -- what Claude Code prints ------------------------------------------------------------


class SystemLine(TypedDict):
    """`system` `init` (its session id and model) or `api_retry` (a failed model call)."""

    type: Literal["system"]
    subtype: str
    session_id: NotRequired[str]
    model: NotRequired[str]
    error_status: NotRequired[int | None]
    error: NotRequired[str | None]


class Usage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


class StreamDelta(TypedDict, total=False):
    type: Literal["text_delta", "thinking_delta", "input_json_delta", "signature_delta"]
    text: str
    thinking: str


class StreamEvent(TypedDict, total=False):
    """One event of the Messages API stream (`message_start`, `content_block_delta`, ...)."""

    type: str
    message: MessageBody
    delta: StreamDelta
    usage: Usage


class StreamEventLine(TypedDict):
    type: Literal["stream_event"]
    event: StreamEvent
    parent_tool_use_id: NotRequired[str | None]


class ContentBlock(TypedDict, total=False):
    """A block of an assistant or user message: text, thinking, tool_use or tool_result."""

    type: Literal["text", "thinking", "tool_use", "tool_result"]
    text: str
    thinking: str
    id: str
    name: str
    input: dict[str, Any]
    tool_use_id: str
    content: str | list[ContentBlock]
    is_error: bool


class MessageBody(TypedDict, total=False):
    id: str
    role: Literal["user", "assistant"]
    model: str
    content: str | list[ContentBlock]
    usage: Usage


class AssistantLine(TypedDict):
    type: Literal["assistant"]
    message: MessageBody
    parent_tool_use_id: NotRequired[str | None]


class UserLine(TypedDict):
    """A user message: tool results as Claude Code prints them, or a prompt Cody sends."""

    type: Literal["user"]
    message: MessageBody
    parent_tool_use_id: NotRequired[str | None]
    session_id: NotRequired[str]


class ResultLine(TypedDict):
    """The end of a turn."""

    type: Literal["result"]
    subtype: str
    is_error: NotRequired[bool]
    stop_reason: NotRequired[str | None]
    result: NotRequired[str]
    errors: NotRequired[list[str]]
    api_error_status: NotRequired[int | None]
    total_cost_usd: NotRequired[float]
    modelUsage: NotRequired[dict[str, dict[str, Any]]]


class PreToolUseInput(TypedDict, total=False):
    tool_use_id: str
    cwd: str


class HookCallbackRequest(TypedDict):
    subtype: Literal["hook_callback"]
    callback_id: str
    input: PreToolUseInput


class CanUseToolRequest(TypedDict):
    subtype: Literal["can_use_tool"]
    tool_name: str
    input: dict[str, Any]
    tool_use_id: NotRequired[str]


class ControlRequestLine(TypedDict):
    """A request of either side (Claude Code asks `can_use_tool`, `hook_callback`; Cody sends
    `initialize`, `interrupt`)."""

    type: Literal["control_request"]
    request_id: str
    request: dict[str, Any]


class ControlResponse(TypedDict):
    subtype: Literal["success", "error"]
    request_id: str
    response: NotRequired[dict[str, Any]]
    error: NotRequired[str]


class ControlResponseLine(TypedDict):
    type: Literal["control_response"]
    response: ControlResponse


# -- what Cody answers to `can_use_tool` ------------------------------------------------


class PermissionAllow(TypedDict):
    behavior: Literal["allow"]
    updatedInput: dict[str, Any]


class PermissionDeny(TypedDict):
    behavior: Literal["deny"]
    message: str
    interrupt: NotRequired[bool]
