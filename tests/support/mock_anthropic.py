"""A scripted mock of the Anthropic Messages API, for unit and end-to-end tests.

Event sequence and shapes follow https://docs.anthropic.com/en/api/messages-streaming (and
https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking for thinking blocks);
error bodies follow https://docs.anthropic.com/en/api/errors (`{"type": "error", "error":
{"type", "message"}, "request_id"}`, `overloaded_error` being HTTP 529).

Same scripting API, builders and HTTP plumbing as `mock_responses` (imported, not copied), so
a test can run one script against any of the three APIs by swapping the module:

    srv.enqueue(reasoning("thinking", signature="sig-1"), text("Hello world", chunks=3),
                tool_call("exec", {"command": ["echo", "hi"]}, call_id="toolu_1"),
                usage=Usage(input=100, output=20, cached=10, cache_write=5))
    srv.enqueue_error(529)
    srv.enqueue(text("slow", chunks=4), delay_s=0.05, cut_after=5)

`base_url` is the server root: the provider appends `/v1/messages`.

Images are `{"type": "image", "source": {"type": "base64", "media_type", "data"}}` blocks
(https://docs.anthropic.com/en/docs/build-with-claude/vision); `image_sources(request)` lists
them. An image whose base64 text is over 5 MB (5,242,880 characters) gets the API's 400
"messages.<i>.content.<j>.image.source.base64: image exceeds 5 MB maximum: <n> bytes >
5242880 bytes" (the body as reported in github.com/gptme/gptme/issues/185).

How the shared builders map onto Messages: every output is one content block at its index
(`content_block_start`, deltas, `content_block_stop`): `text` -> a `text` block
(`text_delta`); `reasoning(summary, signature=...)` -> a `thinking` block (`thinking_delta`,
then one `signature_delta` when a signature is given; the Responses builder's `encrypted`
keyword is taken as the signature); `tool_call` -> a `tool_use` block whose input arrives as
`input_json_delta` pieces (an empty one first, as the reference shows; the default id is
`toolu_mock_<index>`); `refusal` -> a `text` block and stop reason `refusal`. Stop reason:
`tool_use` when there were tool calls, else `end_turn`; `incomplete()` -> `max_tokens` (any
other reason is sent as given, e.g. `incomplete("pause_turn")`); `failed(type, message)` -> an
`error` event, then the body ends; `no_terminal()` -> the body ends after the last block (no
`message_delta`, no `message_stop`).

Refusals the real API makes (checked before the script is consumed), per model:
- `ADAPTIVE_ONLY` models (Opus 4.7 and later, Claude 5) answer a `thinking.type = "enabled"`
  (a `budget_tokens`) with 400 "\"thinking.type.enabled\" is not supported for this model. Use
  \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior."
  (https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking; the text as
  reported in anthropics/claude-code#49219, microsoft/vscode#320605);
- `NO_ADAPTIVE` models (Haiku 4.5) answer adaptive thinking or `output_config.effort` with a
  400 (the effort page does not list them; the message text here is not confirmed);
- a `budget_tokens` not below `max_tokens`, or below 1,024, is a 400
  (https://platform.claude.com/docs/en/build-with-claude/extended-thinking);
- `tool_use` / `tool_result` blocks without `tools` are a 400;
- a `tool_choice` that forces a tool (`any`, `tool`) while `thinking` is on is a 400 "Thinking
  may not be enabled when tool_choice forces tool use."
  (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking, "Extended thinking
  with tool use": only `auto` and `none` are supported).

`Usage.input` counts ALL input tokens, as in the other mocks; the mock sends
`input_tokens = input - cached - cache_write`, `cache_read_input_tokens = cached` and
`cache_creation_input_tokens = cache_write` in `message_start` (with `output_tokens: 1`), and
the cumulative `output_tokens` in `message_delta`. `cut_after=n` counts events:
`message_start`, `ping`, each block's start, deltas and stop, `message_delta`, `message_stop`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from .mock_responses import (
    End,
    MockResponsesServer,
    Output,
    RecordedRequest,
    Refusal,
    _split,
    _Stream,
    completed,
    no_terminal,
    refusal,
    text,
    tool_call,
)
from .mock_responses import Usage as _ResponsesUsage

__all__ = [
    "End",
    "MockAnthropicServer",
    "Output",
    "RecordedRequest",
    "Usage",
    "build_events",
    "completed",
    "failed",
    "incomplete",
    "no_terminal",
    "reasoning",
    "refusal",
    "text",
    "tool_call",
]

ERROR_TYPES: dict[int, tuple[str, str]] = {  # status -> (type, message), per the errors page
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: (
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit. Please try again later.",
    ),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}
_KNOWN_TYPES = frozenset(t for t, _ in ERROR_TYPES.values())
_OPENAI_CODES = {  # so a `failed(...)` scripted for the other mocks means the same here
    "server_error": "api_error",
    "rate_limit_exceeded": "rate_limit_error",
    "context_length_exceeded": "invalid_request_error",
}


@dataclass(frozen=True, slots=True)
class Usage(_ResponsesUsage):
    """`input` counts all input tokens (cached ones included); see the module docstring."""

    cache_write: int = 0


def reasoning(
    summary: str,
    *,
    signature: str | None = None,
    encrypted: str | None = None,
    chunks: int = 1,
    id: str | None = None,
) -> Output:
    """A `thinking` block; `encrypted` (the Responses keyword) is an alias of `signature`."""
    return Output("reasoning", summary, chunks, id, encrypted=signature or encrypted)


def incomplete(reason: str = "max_tokens") -> End:
    return End("incomplete", reason=reason)


def failed(code: str = "api_error", message: str | None = None) -> End:
    """An `error` event of type `code` (the other mocks' codes are translated)."""
    kind = _OPENAI_CODES.get(code, code)
    default = next((m for t, m in ERROR_TYPES.values() if t == kind), "Mock error.")
    return End("failed", code=kind, message=message or default)


def _stop_reason(outputs: tuple[Output, ...], end: End) -> str:
    if end.kind == "incomplete":
        return {"max_output_tokens": "max_tokens", "content_filter": "refusal"}.get(
            end.reason, end.reason
        )
    kinds = {o.kind for o in outputs}
    if "refusal" in kinds:
        return "refusal"
    return "tool_use" if "function_call" in kinds else "end_turn"


def _block_events(out: Output, index: int) -> list[dict[str, Any]]:
    pieces = _split(out.text, out.chunks)
    block: dict[str, Any]
    deltas: list[dict[str, Any]]
    if out.kind in ("message", "refusal"):
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces]
    elif out.kind == "reasoning":
        block = {"type": "thinking", "thinking": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
        if out.encrypted is not None:
            deltas.append({"type": "signature_delta", "signature": out.encrypted})
    else:
        call_id = out.call_id or f"toolu_{out.id or f'mock_{index}'}"
        block = {"type": "tool_use", "id": call_id, "name": out.name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]]
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def build_events(
    outputs: tuple[Output, ...],
    *,
    usage: _ResponsesUsage,
    end: End,
    message_id: str,
    model: str,
) -> list[dict[str, Any]]:
    """The full official event sequence for one scripted response."""
    cache_write = usage.cache_write if isinstance(usage, Usage) else 0
    start_usage = {
        "input_tokens": max(0, usage.input - usage.cached - cache_write),
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": usage.cached,
        "output_tokens": 1,
    }
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    events.append({"type": "ping"})
    for index, out in enumerate(outputs):
        events.extend(_block_events(out, index))
    if end.kind == "failed":
        events.append({"type": "error", "error": {"type": end.code, "message": end.message}})
    if end.kind in ("failed", "none"):
        return events
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(outputs, end), "stop_sequence": None},
            "usage": {"output_tokens": usage.output},
        }
    )
    events.append({"type": "message_stop"})
    return events


ADAPTIVE_ONLY = re.compile(r"^claude-(?:opus-4-(?:[7-9])|(?:opus|sonnet|haiku|fable|mythos)-[5-9])")
NO_ADAPTIVE = re.compile(r"^claude-(?:haiku-4-5|(?:opus|sonnet)-4-5|[a-z]+-4-[0-1]|3)")
ENABLED_REFUSED = (
    '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
    '"output_config.effort" to control thinking behavior.'
)


def _blocks(messages: Any) -> list[dict[str, Any]]:
    listed = messages if isinstance(messages, list) else []
    return [
        block
        for message in listed
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    ]


MAX_IMAGE_BASE64 = 5 * 1024 * 1024


def _image_blocks(messages: Any) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    listed = messages if isinstance(messages, list) else []
    for i, message in enumerate(listed):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, dict) and block.get("type") == "image":
                found.append((f"messages.{i}.content.{j}", block))
    return found


def _image_too_large(messages: Any) -> str | None:
    for where, block in _image_blocks(messages):
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        size = len(str(source.get("data", "")))
        if source.get("type") == "base64" and size > MAX_IMAGE_BASE64:
            return (
                f"{where}.image.source.base64: image exceeds 5 MB maximum: {size} bytes > "
                f"{MAX_IMAGE_BASE64} bytes"
            )
    return None


def image_sources(request: RecordedRequest) -> list[dict[str, Any]]:
    """The `source` of every image block the request sent, in order."""
    body = request.body if isinstance(request.body, dict) else {}
    return [dict(block.get("source") or {}) for _, block in _image_blocks(body.get("messages"))]


class MockAnthropicServer(MockResponsesServer):
    """Serves `POST /v1/messages`; see the module docstring."""

    ROUTE: ClassVar[str] = "/v1/messages"

    def __init__(self) -> None:
        super().__init__()
        self._request_ids = itertools.count(1)

    def _refusal(self, request: RecordedRequest) -> Refusal | None:
        body = request.body if isinstance(request.body, dict) else {}
        model = str(body.get("model", ""))
        thinking = body.get("thinking") if isinstance(body.get("thinking"), dict) else {}
        kind = thinking.get("type")
        message: str | None = None
        if kind == "enabled" and ADAPTIVE_ONLY.search(model):
            message = ENABLED_REFUSED
        elif kind == "adaptive" and NO_ADAPTIVE.search(model):
            message = '"thinking.type.adaptive" is not supported for this model.'
        elif "output_config" in body and NO_ADAPTIVE.search(model):
            message = "output_config.effort: the effort parameter is not supported for this model."
        elif kind == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                message = (
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                )
            elif budget >= int(body.get("max_tokens") or 0):
                message = "`max_tokens` must be greater than `thinking.budget_tokens`."
        choice = body.get("tool_choice")
        if (
            message is None
            and kind
            and isinstance(choice, dict)
            and choice.get("type")
            in (
                "any",
                "tool",
            )
        ):
            message = "Thinking may not be enabled when tool_choice forces tool use."
        if message is None:
            message = _image_too_large(body.get("messages"))
        if (
            message is None
            and "tools" not in body
            and any(
                b.get("type") in ("tool_use", "tool_result") for b in _blocks(body.get("messages"))
            )
        ):
            message = "Requests which include `tool_use` or `tool_result` blocks must define tools."
        if message is None:
            return None
        return Refusal(400, self._error_json(400, message, "invalid_request_error", None))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue_events(
        self,
        events: list[dict[str, Any]],
        *,
        delay_s: float = 0.0,
        cut_after: int | None = None,
    ) -> None:
        """Script a stream of exactly these events (each needs its `type`)."""
        self._script.append(_Stream(events=list(events), delay_s=delay_s, cut_after=cut_after))

    def _build_events(self, script: _Stream, request: RecordedRequest) -> list[Any]:
        body = request.body if isinstance(request.body, dict) else {}
        return build_events(
            script.outputs,
            usage=script.usage,
            end=script.end,
            message_id=f"msg_mock_{next(self._ids)}",
            model=str(body.get("model", "mock")),
        )

    def _error_json(
        self, status: int, message: str | None, type: str | None, code: str | None
    ) -> dict[str, Any]:
        default_type, default_message = ERROR_TYPES.get(
            status, ("api_error" if status >= 500 else "invalid_request_error", "Mock error.")
        )
        kind = next((t for t in (type, code) if t in _KNOWN_TYPES), default_type)
        return {
            "type": "error",
            "error": {"type": kind, "message": message or default_message},
            "request_id": f"req_mock_{next(self._request_ids)}",
        }
