"""The OpenAI Chat Completions provider (`wire_api = "chat"`): POST `{base_url}/chat/completions`.

For OpenAI and every OpenAI-compatible server (OpenRouter, vLLM, Ollama, LM Studio, ...).
Request fields follow https://platform.openai.com/docs/api-reference/chat/create and stream
chunks https://platform.openai.com/docs/api-reference/chat-streaming.

Invariants:
- a call yields model events and ends with exactly one `StreamEnd`, or raises
  `ProviderError`. The stream is complete once it sent `data: [DONE]`, or a `finish_reason`
  and then closed (some servers omit `[DONE]`; only usage can be missing then). A stream
  that stops before either raises a retryable `network` error: never a silent truncation;
- failures before the first SSE event are retried per `RetryPolicy` (`stream_json_events`);
  a 401 before the first event calls `auth.refresh()` once and, if that returned True,
  repeats the request with the new headers; after the first event nothing is retried;
- the message list sent is always valid for the API: every assistant `tool_calls` message
  is directly followed by one `tool` message per call (outputs recorded later in the history
  are moved up; orphan outputs are dropped), whatever order the history holds them in;
- reasoning is sent back only to the provider id that produced it, in the field it came in:
  `reasoning_content` (DeepSeek, Kimi: DeepSeek's thinking mode answers 400 "The
  `reasoning_content` in the thinking mode must be passed back to the API" to the call after
  a tool call without it, https://api-docs.deepseek.com/guides/thinking_mode#tool-calls, read
  2026-11-22) or `reasoning_details` (OpenRouter, fragments merged per `type` + `index`,
  https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks), on the
  assistant message that follows it. Chat has no portable reasoning field: other providers'
  reasoning (and OpenRouter's plain `reasoning` text) stays out of the request;
- `ReasoningDone` (`provider` = this id, `replay_fields` as above) follows each run of
  reasoning deltas; tool calls are assembled from fragments keyed by `index` and reported once
  each, at the end; `UsageReport` only when the server sent usage (never invented zeros);
- a reasoning model (catalog `reasoning = "effort"`, or an unlisted id of a reasoning family)
  always gets `reasoning_effort` (configured, else `medium`); any other only when configured;
- for models that cache only at `cache_control` breakpoints (catalog `prompt_cache =
  "breakpoints"`: Claude through OpenRouter, https://openrouter.ai/docs/features/prompt-caching)
  the system prompt and the last message are marked, as the Messages provider does;
- auth secrets and header values, prompts and model output are never logged and never put
  in error messages.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack

import orjson

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    ImagePart,
    MessageItem,
    ReasoningItem,
    SummaryPart,
)
from .base import (
    OUTPUT_SCHEMA_NAME,
    ModelEvent,
    ModelRequest,
    ProviderError,
    ReasoningDelta,
    ReasoningDone,
    StopKind,
    StreamEnd,
    TextDelta,
    ToolCallRequested,
    UsageReport,
)
from .http_errors import classify, error_info
from .http_provider import Attempt, HttpOptions, HttpProvider, SseEvents, secret_values
from .models import capabilities, resolve_effort

__all__ = ["OpenAIChatProvider", "merge_reasoning_details"]

_NO_OUTPUT = "No output was recorded for this tool call."


class OpenAIChatProvider(HttpProvider):
    """A `ModelProvider` for Chat Completions; one instance per configured provider id."""

    structured_output = True
    """`ModelRequest.output_schema` is sent as `response_format` (a `json_schema` format)."""

    def __init__(self, **options: Unpack[HttpOptions]) -> None:
        super().__init__(
            url=options["base_url"].rstrip("/") + "/chat/completions",
            api_name="the Chat Completions API (POST <base_url>/chat/completions)",
            **options,
        )

    # -- request -------------------------------------------------------------------------

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for `request`.

        `reasoning_effort` is OpenAI's Chat parameter (OpenRouter maps it onto its own
        `reasoning.effort`); reasoning summary settings have no Chat equivalent and are
        ignored. `tools`/`tool_choice`/`parallel_tool_calls` are only sent with tools
        (OpenAI rejects `tool_choice` and an empty `tools` list otherwise).
        """
        caps = capabilities(self._id, request.model)
        messages = self.messages(request.instructions, request.history)
        if caps.prompt_cache == "breakpoints":
            _mark_cache_breakpoints(messages)
        body: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            functions = [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in request.tools
            ]
            body["tools"] = [{"type": "function", "function": f} for f in functions]
            body["tool_choice"] = (
                {"type": "function", "function": {"name": request.tool_choice}}
                if request.tool_choice is not None
                else "auto"
            )
            body["parallel_tool_calls"] = True
        if request.output_schema is not None:
            # https://platform.openai.com/docs/guides/structured-outputs (Chat: response_format)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": OUTPUT_SCHEMA_NAME,
                    "schema": dict(request.output_schema),
                    "strict": request.output_strict,
                },
            }
        if request.max_output_tokens is not None:
            body["max_completion_tokens"] = request.max_output_tokens
        configured = request.reasoning_effort
        effort = configured if caps.reasoning == "none" else resolve_effort(configured, caps)
        if effort is not None:
            body["reasoning_effort"] = effort
        return body

    def messages(self, instructions: str, history: Sequence[HistoryItem]) -> list[dict[str, Any]]:
        """System prompt + neutral history -> Chat `messages` (see the module invariants)."""
        outputs: dict[str, list[str]] = {}
        for item in history:
            if isinstance(item, FunctionCallOutputItem):
                outputs.setdefault(item.call_id, []).append(item.output)
        messages: list[dict[str, Any]] = []
        if instructions:
            messages.append({"role": "system", "content": instructions})
        open_calls: list[str] = []
        replay: dict[str, Any] = {}
        """Reasoning fields waiting for the next assistant message."""

        def assistant(content: str | None) -> dict[str, Any]:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            message.update(replay)
            replay.clear()
            messages.append(message)
            return message

        def answer_open_calls() -> None:
            for call_id in open_calls:
                pending = outputs.get(call_id)
                content = pending.pop(0) if pending else _NO_OUTPUT
                messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            open_calls.clear()

        for item in history:
            if isinstance(item, FunctionCallItem):
                last = messages[-1] if messages else None
                if last is None or last["role"] != "assistant" or replay:
                    last = assistant(None)
                call = {"name": item.name, "arguments": item.arguments}
                last.setdefault("tool_calls", []).append(
                    {"id": item.call_id, "type": "function", "function": call}
                )
                open_calls.append(item.call_id)
            elif isinstance(item, MessageItem):
                answer_open_calls()
                if item.role == "assistant":
                    if item.text:
                        assistant(item.text)
                elif item.images and item.role == "user":
                    replay.clear()
                    messages.append({"role": "user", "content": _parts(item)})
                elif item.text:
                    replay.clear()  # reasoning never answered: nothing to attach it to
                    # Cody's context items (permissions) go as user messages, as on the
                    # Messages API: many open models' chat templates refuse a system message
                    # anywhere but first.
                    role = "user" if item.role == "developer" else item.role
                    messages.append({"role": role, "content": item.text})
            elif isinstance(item, FunctionCallOutputItem):
                answer_open_calls()  # its tool message is written there (or it answers nothing)
            elif isinstance(item, ReasoningItem):
                answer_open_calls()
                if item.provider == self._id and item.replay_fields:
                    _merge_replay(replay, item.replay_fields)
        answer_open_calls()
        return messages

    # -- streaming -----------------------------------------------------------------------

    async def _translate(
        self, events: SseEvents, attempt: Attempt
    ) -> AsyncGenerator[ModelEvent, None]:
        state = _StreamState(self._id, attempt.settings.secrets, self._env_key)
        try:
            async for _name, data in events:
                attempt.started = True
                for event in state.handle(data):
                    yield event
                if state.done:
                    return
        except ProviderError as error:
            # `network` only comes from the transport (cut, idle): after a finish_reason the
            # answer is complete, the server just never sent `[DONE]`.
            if error.kind != "network" or state.finish_reason is None:
                raise
            for event in state.end():
                yield event

    def _secrets(self, auth_headers: Mapping[str, str]) -> tuple[str, ...]:
        """Everything that could be a credential, the auth header values included."""
        auth = self._auth.secrets if self._auth is not None else ()
        return secret_values((*auth, *auth_headers.values(), *self._config_headers.values()))

    def _still_rejected(self, error: ProviderError) -> ProviderError:
        """A 401 right after a successful refresh is reported as the server's 401 (this
        provider has never added the auth source's `login_hint`)."""
        return error


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _StreamState:
    """Translates chunks into events; holds tool-call fragments, usage and the finish."""

    _provider: str
    _secrets: tuple[str, ...]
    _env_key: str | None
    _calls: list[_Call] = field(default_factory=list)
    _slots: dict[int, _Call] = field(default_factory=dict)
    """`index` -> the call its fragments currently extend."""
    _reasoning: list[str] = field(default_factory=list)
    _reasoning_content: bool = False
    """This run of reasoning came as `reasoning_content` (replayed in that field)."""
    _details: list[dict[str, Any]] = field(default_factory=list)
    """This run's OpenRouter `reasoning_details` fragments."""
    _reasoning_runs: int = 0
    _refused: bool = False
    _usage: dict[str, Any] | None = None
    done: bool = False
    finish_reason: str | None = None
    response_id: str | None = None

    def handle(self, data: dict[str, Any]) -> list[ModelEvent]:
        if data.get("type") == "done" and "choices" not in data:  # `data: [DONE]`
            self.done = True
            return self.end()
        if data.get("error") is not None:
            raise self._error(data)
        if self.response_id is None and isinstance(data.get("id"), str):
            self.response_id = data["id"]
        if isinstance(data.get("usage"), dict):  # `null` on every chunk but the last
            self._usage = data["usage"]
        choices = data.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            return []
        choice = choices[0]
        events: list[ModelEvent] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._delta(delta, events)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            if finish == "error":  # OpenRouter: the upstream provider failed mid-answer
                raise self._error({"error": {"code": "server_error"}})
            self.finish_reason = finish
        return events

    def _delta(self, delta: dict[str, Any], events: list[ModelEvent]) -> None:
        # DeepSeek/vLLM stream `reasoning_content`, OpenRouter `reasoning`; some servers send
        # both with the same text, so one is used per chunk.
        content_field = delta.get("reasoning_content")
        if isinstance(content_field, str):
            self._reasoning_content = True
        thought = content_field or delta.get("reasoning")
        if isinstance(thought, str) and thought:
            self._reasoning.append(thought)
            events.append(ReasoningDelta(thought))
        details = delta.get("reasoning_details")
        if isinstance(details, list):
            self._details.extend(d for d in details if isinstance(d, dict))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._close_reasoning(events)
            events.append(TextDelta(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._close_reasoning(events)
            self._refused = True
            events.append(TextDelta(refusal))
        fragments = delta.get("tool_calls")
        if isinstance(fragments, list) and fragments:
            self._close_reasoning(events)
            for position, fragment in enumerate(fragments):
                if isinstance(fragment, dict):
                    self._fragment(position, fragment)

    def _fragment(self, position: int, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        key = index if isinstance(index, int) else position
        call = self._slots.get(key)
        call_id = fragment.get("id")
        if call is None or (isinstance(call_id, str) and call_id and call.id not in ("", call_id)):
            # A new call; also when a server reuses an index for a call with another id.
            call = self._slots[key] = _Call()
            self._calls.append(call)
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        function = fragment.get("function")
        if not isinstance(function, dict):
            return
        name = function.get("name")
        if isinstance(name, str) and name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, dict):  # a few servers send an object, not JSON text
            call.arguments.append(orjson.dumps(arguments).decode())

    def _close_reasoning(self, events: list[ModelEvent]) -> None:
        if not self._reasoning and not self._details and not self._reasoning_content:
            return
        self._reasoning_runs += 1
        text = "".join(self._reasoning)
        replay: dict[str, Any] = {}
        if self._details:
            replay["reasoning_details"] = merge_reasoning_details(self._details)
        elif self._reasoning_content:
            replay["reasoning_content"] = text
        item = ReasoningItem(
            id=f"rs_{self.response_id or 'chat'}_{self._reasoning_runs}",
            summary=[SummaryPart(text=text)] if text else [],
            provider=self._provider,
            replay_fields=replay or None,
        )
        self._reasoning.clear()
        self._details = []
        self._reasoning_content = False
        events.append(ReasoningDone(item))

    def end(self) -> list[ModelEvent]:
        """Everything held back until the stream ended, then the one `StreamEnd`."""
        events: list[ModelEvent] = []
        self._close_reasoning(events)
        prefix = self.response_id or uuid.uuid4().hex
        for n, call in enumerate(self._calls):
            events.append(
                ToolCallRequested(
                    call_id=call.id or f"call_{prefix}_{n}",
                    name=call.name,
                    arguments="".join(call.arguments),
                )
            )
        if self._usage is not None:
            events.append(_usage(self._usage))
        stop: StopKind
        if self.finish_reason == "length":
            stop = "max_tokens"
        elif self.finish_reason == "content_filter" or self._refused:
            stop = "refusal"
        else:
            stop = "tool_use" if self._calls else "end_turn"
        events.append(StreamEnd(stop=stop, response_id=self.response_id))
        return events

    def _error(self, data: dict[str, Any]) -> ProviderError:
        inner = data.get("error")
        code = inner.get("code") if isinstance(inner, dict) else None
        # OpenRouter's in-stream codes are HTTP statuses (e.g. 429, 502).
        status = code if isinstance(code, int) and 400 <= code <= 599 else None
        return classify(
            provider=self._provider,
            info=error_info(data),
            http_status=status,
            env_key=self._env_key,
            secrets=self._secrets,
        )


def merge_reasoning_details(fragments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Streamed `reasoning_details` fragments -> whole entries: consecutive fragments with the
    same `type` and `index` are one entry (their `text` / `summary` / `data` concatenated; a
    later non-empty `signature`, `id` or `format` wins); entries without an `index` stay
    separate."""
    merged: list[dict[str, Any]] = []
    for fragment in fragments:
        last = merged[-1] if merged else None
        same = (
            last is not None
            and "index" in fragment
            and fragment.get("index") == last.get("index")
            and fragment.get("type") == last.get("type")
        )
        if not same or last is None:
            merged.append(dict(fragment))
            continue
        for key, value in fragment.items():
            if key in ("text", "summary", "data") and isinstance(value, str):
                last[key] = (last.get(key) or "") + value
            elif value not in (None, "") and key not in ("type", "index"):
                last[key] = value
    return merged


def _merge_replay(pending: dict[str, Any], fields: dict[str, Any]) -> None:
    """Add one reasoning item's replay fields to those waiting for the assistant message."""
    for key, value in fields.items():
        if key == "reasoning_details" and isinstance(value, list):
            pending[key] = [*pending.get(key, []), *value]
        elif key == "reasoning_content" and isinstance(value, str):
            pending[key] = pending.get(key, "") + value
        else:
            pending[key] = value


def _mark_cache_breakpoints(messages: list[dict[str, Any]]) -> None:
    """Mark the system prompt and the last message for prompt caching (content as text parts
    with `cache_control`, the form OpenRouter passes to Anthropic)."""
    targets = [m for m in messages[:1] if m["role"] == "system"]
    if (
        messages
        and messages[-1]["role"] in ("user", "tool", "system")
        and (messages[-1] not in targets)
    ):
        targets.append(messages[-1])
    for message in targets:
        content = message.get("content")
        if isinstance(content, str) and content:
            message["content"] = [
                {"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}
            ]


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _usage(usage: dict[str, Any]) -> UsageReport:
    prompt_details = usage.get("prompt_tokens_details")
    prompt = prompt_details if isinstance(prompt_details, dict) else {}
    completion_details = usage.get("completion_tokens_details")
    completion = completion_details if isinstance(completion_details, dict) else {}
    return UsageReport(
        input_tokens=_count(usage.get("prompt_tokens")),
        # DeepSeek reports cache hits as a top-level `prompt_cache_hit_tokens`.
        cached_input_tokens=_count(
            prompt.get("cached_tokens") or usage.get("prompt_cache_hit_tokens")
        ),
        cache_write_tokens=_count(prompt.get("cache_write_tokens")),  # OpenRouter
        output_tokens=_count(usage.get("completion_tokens")),
        reasoning_tokens=_count(completion.get("reasoning_tokens")),
    )


def _parts(item: MessageItem) -> list[dict[str, Any]]:
    """A user message with images as Chat content parts, in order
    (https://platform.openai.com/docs/guides/images-vision?api-mode=chat)."""
    parts: list[dict[str, Any]] = []
    for part in item.content:
        if isinstance(part, ImagePart):
            parts.append({"type": "image_url", "image_url": {"url": part.image_url}})
        elif part.text:
            parts.append({"type": "text", "text": part.text})
    return parts
