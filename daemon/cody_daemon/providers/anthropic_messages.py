"""The Anthropic Messages API provider (`wire_api = "anthropic"`): POST `{base_url}/v1/messages`.

Request shape follows what Claude Code sends (system prompt and the conversation tail marked
for prompt caching; https://docs.anthropic.com/en/api/messages). Stream events are translated
by `anthropic_stream.MessagesStreamState`.

Thinking is chosen per model from the catalog (`models.toml`, `reasoning`), as Claude Code
does (tests/fixtures/providers/messages_requests_from_claude_code.jsonl: Opus 4.8 gets
`thinking: {type: "adaptive"}` + `output_config: {effort: "high"}`), and is on by default:
- `adaptive` (Opus 4.6+, Sonnet 4.6+, Claude 5): `thinking: {"type": "adaptive"}` and
  `output_config: {"effort": e}`, e = the configured effort mapped to one the model accepts,
  else `high` (the API's default). Opus 4.7 and later answer 400 to a `budget_tokens`
  (https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking, read 2026-11-22);
- `budget` (Haiku 4.5 and older 4.x): `thinking: {"type": "enabled", "budget_tokens": N}`,
  N from `THINKING_BUDGETS` (configured effort, else medium), never more than 3/4 of
  `max_tokens` and at least the API's 1,024 (https://platform.claude.com/docs/en/build-with-
  claude/extended-thinking); these models take no `output_config.effort`;
- a model the catalog knows nothing about gets thinking only when an effort is configured
  (as a budget: what Anthropic-compatible servers accept);
- `model_reasoning_effort = "none"` sends no `thinking` at all (never `{"type": "disabled"}`,
  which the always-thinking models refuse).
Adaptive thinking asks for `display: "summarized"` so the user sees the thinking (Opus 4.7 and
later default to `omitted`: empty thinking blocks, anthropics/claude-code#49268, read
2026-11-22); `model_reasoning_summary = "none"` asks for `omitted`. Budget thinking always
returns its (summarized) text.

Invariants:
- a call yields model events and ends with exactly one `StreamEnd`, or raises
  `ProviderError`; a stream that stops before `message_stop` raises a retryable `network`
  error (via `stream_json_events`), it never ends silently;
- failures before the first SSE event are retried per `RetryPolicy` (in `sse.py`); failures
  after it (an `error` event such as `overloaded_error`, a cut) are retried too as long as
  no model event has been yielded yet, since nothing can be duplicated; after the first
  yielded event nothing is retried;
- a 401 before any output makes the `AuthSource` refresh once; the call is retried if it did
  (a second 401 is reported, with the source's `login_hint` when it has one);
- `messages` always alternates user/assistant and starts with a user message; tool results
  come first in their user message; thinking comes first in its assistant message;
- thinking (`signature`) and redacted thinking (`encrypted_content`) are only sent back to
  the provider id that produced them, and only with their opaque data;
- `anthropic-beta` values from the auth source, the config headers and this provider are
  merged into one header; credentials (`AuthSource.secrets`, config header values) never
  appear in errors, and prompts and model output are never logged.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Unpack

import orjson
from cody_protocol.settings import ReasoningEffort, ReasoningSummary

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    ImagePart,
    MessageItem,
    ReasoningItem,
)
from .anthropic_stream import MessagesStreamState
from .base import ModelEvent, ModelRequest, TextDelta
from .http_provider import Attempt, HttpOptions, HttpProvider, SseEvents
from .models import Capabilities, capabilities, resolve_effort

__all__ = [
    "ANTHROPIC_VERSION",
    "THINKING_BUDGETS",
    "AnthropicMessagesProvider",
    "thinking_budget",
    "thinking_params",
]

ANTHROPIC_VERSION = "2023-06-01"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
"""Lets Claude think between tool calls; sent only with budget thinking and tools (adaptive
thinking interleaves without it)."""
THINKING_BUDGETS: Mapping[str, int] = {
    "minimal": 1_024,
    "low": 4_000,
    "medium": 10_000,
    "high": 24_000,
    "xhigh": 31_999,
}
"""Claude Code's "think" / "megathink" / "ultrathink" budgets; `minimal` is the API minimum."""
MIN_THINKING_BUDGET = 1_024
ADAPTIVE_DEFAULT_EFFORT = "high"
"""The API's own default effort, and what Claude Code sends."""
BUDGET_DEFAULT_EFFORT = "medium"
EMPTY_TOOL_OUTPUT = "(no output)"
"""Sent for an empty tool output: the API rejects an empty error result."""
HISTORY_START = "(continuing an earlier conversation)"
"""A user turn put first when a history starts with the assistant (the API requires user)."""

_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_LEADING_BLOCKS = {"assistant": _THINKING_BLOCKS, "user": frozenset({"tool_result"})}
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def thinking_budget(effort: str | None, max_tokens: int) -> int | None:
    """`budget_tokens` for `effort` under `max_tokens`, or None for no thinking."""
    wanted = THINKING_BUDGETS.get(effort or "")
    if wanted is None:
        return None
    budget = min(wanted, max_tokens * 3 // 4)
    return budget if budget >= MIN_THINKING_BUDGET else None


def thinking_params(
    caps: Capabilities,
    effort: ReasoningEffort | None,
    max_tokens: int,
    summary: ReasoningSummary | None = None,
) -> dict[str, Any]:
    """The `thinking` (and `output_config`) fields for a model; see the module docstring."""
    if effort == "none":
        return {}
    if caps.reasoning == "adaptive":
        chosen = resolve_effort(effort or ADAPTIVE_DEFAULT_EFFORT, caps)
        config = {"effort": chosen} if chosen else {}
        display = "omitted" if summary == "none" else "summarized"
        thinking = {"type": "adaptive", "display": display}
        return {"thinking": thinking, **({"output_config": config} if config else {})}
    if caps.reasoning == "budget" or effort is not None:
        budget = thinking_budget(effort or BUDGET_DEFAULT_EFFORT, max_tokens)
        return {"thinking": {"type": "enabled", "budget_tokens": budget}} if budget else {}
    return {}


class AnthropicMessagesProvider(HttpProvider):
    """A `ModelProvider` for the Messages API; one instance per configured provider id."""

    def __init__(self, *, default_max_tokens: int = 32_000, **options: Unpack[HttpOptions]) -> None:
        self._betas: list[str] = []
        config_headers: dict[str, str] = {}
        for name, value in (options.get("headers") or {}).items():
            if name.lower() == "anthropic-beta":
                self._betas.extend(_split_betas(value))
            else:
                config_headers[name.lower()] = value
        options["headers"] = config_headers
        super().__init__(
            url=_messages_url(options["base_url"]),
            api_name="the Anthropic Messages API (POST <base_url>/v1/messages)",
            **options,
        )
        # Lower-case names: auth and config headers are merged into these case-insensitively.
        self._base_headers = {name.lower(): value for name, value in self._base_headers.items()}
        self._base_headers["anthropic-version"] = ANTHROPIC_VERSION
        self._default_max_tokens = default_max_tokens

    # -- request -------------------------------------------------------------------------

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for `request` (key order and block shapes as Claude Code sends)."""
        caps = capabilities(self._id, request.model)
        max_tokens = request.max_output_tokens or min(
            self._default_max_tokens, caps.max_output_tokens or self._default_max_tokens
        )
        body: dict[str, Any] = {"model": request.model, "messages": self.messages(request.history)}
        if request.instructions:
            body["system"] = [
                {"type": "text", "text": request.instructions, "cache_control": _ephemeral()}
            ]
        if request.tools:  # the API rejects `tools: []`
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        body["max_tokens"] = max_tokens
        thinking = thinking_params(
            caps, request.reasoning_effort, max_tokens, request.reasoning_summary
        )
        body.update(thinking)
        if request.tool_choice is not None and request.tools and "thinking" not in thinking:
            # The API refuses a forced tool while thinking is on ("Thinking may not be enabled
            # when tool_choice forces tool use"): then the model is only asked to use it.
            body["tool_choice"] = {"type": "tool", "name": request.tool_choice}
        body["stream"] = True
        return body

    def messages(self, history: Sequence[HistoryItem]) -> list[dict[str, Any]]:
        """Neutral history -> alternating `messages`; see the module invariants."""
        out: list[dict[str, Any]] = []

        def add(role: str, block: dict[str, Any]) -> None:
            if out and out[-1]["role"] == role:
                out[-1]["content"].append(block)
            else:
                out.append({"role": role, "content": [block]})

        for item in history:
            if isinstance(item, MessageItem):
                role = "assistant" if item.role == "assistant" else "user"  # developer -> user
                for part in item.content:
                    if isinstance(part, ImagePart):
                        # https://docs.anthropic.com/en/docs/build-with-claude/vision
                        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
                        add(role, {"type": "image", "source": source})
                    elif part.text.strip():  # the API rejects blank text blocks
                        add(role, {"type": "text", "text": part.text})
            elif isinstance(item, ReasoningItem):
                if item.provider != self._id:
                    continue
                if item.signature:
                    thinking = {"type": "thinking", "thinking": item.text}
                    add("assistant", thinking | {"signature": item.signature})
                if item.encrypted_content:
                    add("assistant", {"type": "redacted_thinking", "data": item.encrypted_content})
            elif isinstance(item, FunctionCallItem):
                add(
                    "assistant",
                    {
                        "type": "tool_use",
                        "id": _tool_id(item.call_id),
                        "name": item.name,
                        "input": _json_object(item.arguments),
                    },
                )
            elif isinstance(item, FunctionCallOutputItem):
                add(
                    "user",
                    {
                        "type": "tool_result",
                        "tool_use_id": _tool_id(item.call_id),
                        "content": item.output or EMPTY_TOOL_OUTPUT,
                        "is_error": item.status == "failed",
                    },
                )
        for message in out:
            content, leading = message["content"], _LEADING_BLOCKS[message["role"]]
            message["content"] = [b for b in content if b["type"] in leading] + [
                b for b in content if b["type"] not in leading
            ]
        if not out or out[0]["role"] != "user":
            out.insert(0, {"role": "user", "content": [{"type": "text", "text": HISTORY_START}]})
        # Cache the whole conversation so far: the next call reads it back (thinking blocks
        # cannot carry `cache_control`).
        for block in reversed(out[-1]["content"]):
            if block["type"] not in _THINKING_BLOCKS:
                block["cache_control"] = _ephemeral()
                break
        return out

    def _request_headers(
        self, auth_headers: Mapping[str, str], body: Mapping[str, Any]
    ) -> dict[str, str]:
        """Defaults < auth < config headers (as in the other providers); betas merged."""
        headers = dict(self._base_headers)
        betas: list[str] = []
        for name, value in auth_headers.items():
            if name.lower() == "anthropic-beta":
                betas.extend(_split_betas(value))
            else:
                headers[name.lower()] = value
        headers.update(self._config_headers)
        betas.extend(self._betas)
        if body.get("thinking", {}).get("type") == "enabled" and "tools" in body:
            betas.append(INTERLEAVED_THINKING_BETA)  # adaptive thinking interleaves by itself
        if betas:
            headers["anthropic-beta"] = ",".join(dict.fromkeys(betas))
        return headers

    # -- streaming -----------------------------------------------------------------------

    async def _translate(
        self, events: SseEvents, attempt: Attempt
    ) -> AsyncGenerator[ModelEvent, None]:
        state = MessagesStreamState(attempt.settings)
        async for _name, data in events:
            attempt.started = True
            delta = data.get("delta")
            if type(delta) is dict and delta.get("type") == "text_delta":  # hot path
                yield TextDelta(delta.get("text") or "")
                continue
            for event in state.handle(data):
                yield event
            if state.finished:
                return


def _messages_url(base_url: str) -> str:
    """`{base_url}/v1/messages`; a base URL that already ends in `/v1` is accepted too."""
    root = base_url.rstrip("/")
    return root + ("/messages" if root.endswith("/v1") else "/v1/messages")


def _split_betas(value: str) -> list[str]:
    return [beta.strip() for beta in value.split(",") if beta.strip()]


def _ephemeral() -> dict[str, str]:
    return {"type": "ephemeral"}


def _tool_id(call_id: str) -> str:
    """Tool ids must match `^[a-zA-Z0-9_-]+$`; other providers' call ids may not."""
    return _BAD_ID_CHARS.sub("_", call_id) or "toolu_unknown"


def _json_object(arguments: str) -> dict[str, Any]:
    """The tool input as an object; `{}` for invalid JSON (the model sees its own error)."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
