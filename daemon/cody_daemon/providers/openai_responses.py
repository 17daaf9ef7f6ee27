"""The OpenAI Responses API provider (`wire_api = "responses"`): POST `{base_url}/responses`.

Request shape follows what the Codex CLI sends (stateless: `store: false`, reasoning carried
across turns as `encrypted_content`). Stream events follow
https://platform.openai.com/docs/api-reference/responses-streaming.

Reasoning (https://developers.openai.com/api/docs/guides/reasoning, read 2026-11-22): a
reasoning model (catalog `reasoning = "effort"`, or an unlisted id of a reasoning family such
as `gpt-6-*`) always gets an explicit `reasoning.effort`: the configured one mapped to one the
model accepts, else `medium` (as Codex sends it; GPT-5.1 and later default to `none` when
none is sent). Any other model gets `reasoning` only when an effort is configured.
Summaries (`reasoning.summary`) are requested only when `model_reasoning_summary` is
configured, or by default (`auto`) on a ChatGPT login: OpenAI answers 400 "Your organization
must be verified to generate reasoning summaries" (param `reasoning.summary`, code
`unsupported_value`) to unverified organisations.

`prompt_cache_key` (OpenAI's cache routing hint) is sent only to OpenAI itself: the built-in
`openai` provider at its official base URL, or a ChatGPT login (`prompt_cache_key=True` from
the pool). A server that speaks this wire for another model refuses it (LiteLLM in front of
Claude answers 400 on every turn).

Refused optional parameters (`OPTIONAL_PARAMS`): when a 400 names one this call sent
(providers/refused_params.py: OpenAI's `param`, LiteLLM's `UnsupportedParamsError`, ...), the
request is sent again without it, and this provider instance (one per provider and login,
kept for the daemon's life) never sends it again.

Invariants:
- a call yields model events and ends with exactly one `StreamEnd`, or raises
  `ProviderError`; a stream that stops before `response.completed`/`.incomplete`/`.failed`
  raises a retryable `network` error, it never ends silently;
- failures before the first SSE event (connect errors, resets, 429/5xx, first-byte timeout)
  are retried per `RetryPolicy`; after it nothing is retried (deltas were already yielded);
- the HTTP response is closed when the stream ends, fails, is cancelled or is closed by the
  consumer (use `contextlib.aclosing` so an abandoned iterator is closed promptly);
- reasoning `encrypted_content` is only sent back to the provider id that produced it;
- credentials come from an `AuthSource`, asked for headers before each call; a 401 before the
  first event makes the provider call `auth.refresh()` once and, when it returns True, send the
  request once more with the new headers (OAuth logins; an API key cannot refresh);
- the API key/tokens (every string in `auth.secrets`, read again after a refresh), prompts and
  model output are never logged, and never put in error messages.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Unpack

from cody_protocol.settings import ReasoningSummary

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
    SummaryPart,
    TextPart,
)
from .auth import ApiKeyAuth, NoAuth
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
from .http_errors import ErrorInfo, classify
from .http_provider import Attempt, HttpOptions, HttpProvider, SseEvents
from .models import capabilities, resolve_effort
from .refused_params import refused_params

__all__ = ["OpenAIResponsesProvider"]

log = logging.getLogger(__name__)

_SUMMARY_PARAM = "reasoning.summary"
OPTIONAL_PARAMS = ("prompt_cache_key", "parallel_tool_calls", _SUMMARY_PARAM)
"""Parameters a call works without: dropped (for the provider's life) when a 400 names one."""
_TEXT_DELTA = "response.output_text.delta"
_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class OpenAIResponsesProvider(HttpProvider):
    """A `ModelProvider` for the Responses API; one instance per configured provider id.

    `auth` supplies the credentials; `api_key` is a shortcut for `ApiKeyAuth(api_key)` (used
    only when `auth` is None); with neither, requests carry no credentials.
    """

    structured_output = True
    """`ModelRequest.output_schema` is sent as `text.format` (a `json_schema` format)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default_summary: ReasoningSummary | None = None,
        prompt_cache_key: bool = False,
        **options: Unpack[HttpOptions],
    ) -> None:
        """`default_summary` is requested when none is configured (`auto` on a ChatGPT
        login, None on an API key); `prompt_cache_key`: send OpenAI's cache routing hint
        (only OpenAI's own endpoints take it)."""
        self._default_summary = default_summary
        self._prompt_cache_key = prompt_cache_key
        self.refused: set[str] = set()
        """Optional parameters (`OPTIONAL_PARAMS`) the server refused: never sent again."""
        if options.get("auth") is None:
            options["auth"] = ApiKeyAuth(api_key) if api_key else NoAuth()
        super().__init__(
            url=options["base_url"].rstrip("/") + "/responses",
            api_name="the Responses API (POST <base_url>/responses)",
            **options,
        )

    # -- request -------------------------------------------------------------------------

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for `request` (shape as sent by the Codex CLI)."""
        body: dict[str, Any] = {
            "model": request.model,
            "instructions": request.instructions,
            "input": self.input_items(request.history),
            "tools": [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "strict": False,
                    "parameters": tool.parameters,
                }
                for tool in request.tools
            ],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "store": False,
            "stream": True,
        }
        if request.tool_choice is not None:
            body["tool_choice"] = {"type": "function", "name": request.tool_choice}
        if request.output_schema is not None:
            # https://platform.openai.com/docs/guides/structured-outputs (Responses: text.format)
            body["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": OUTPUT_SCHEMA_NAME,
                    "schema": dict(request.output_schema),
                    "strict": request.output_strict,
                }
            }
        if self._prompt_cache_key:
            body["prompt_cache_key"] = request.session_id
        for name in self.refused & body.keys():
            del body[name]
        reasoning = self._reasoning(request)
        if reasoning is not None:
            body["reasoning"] = reasoning
            body["include"] = ["reasoning.encrypted_content"]
        if request.max_output_tokens is not None:
            body["max_output_tokens"] = request.max_output_tokens
        return body

    def _reasoning(self, request: ModelRequest) -> dict[str, str] | None:
        """`reasoning` for this request, or None for a model that does not reason (they
        reject the field); see the module docstring."""
        caps = capabilities(self._id, request.model)
        configured = request.reasoning_effort
        if caps.reasoning == "none" and configured is None:
            return None
        effort = configured if caps.reasoning == "none" else resolve_effort(configured, caps)
        reasoning: dict[str, str] = {"effort": effort} if effort else {}
        summary = request.reasoning_summary or self._default_summary
        if summary is not None and summary != "none" and not self.summaries_refused:
            reasoning["summary"] = summary
        return reasoning

    @property
    def summaries_refused(self) -> bool:
        """The server refused reasoning summaries; they are not requested again."""
        return _SUMMARY_PARAM in self.refused

    def _fallback_body(
        self, error: ProviderError, body: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Without the optional parameters the 400 `error` names (see the module docstring);
        the refusal is remembered by this instance."""
        reasoning = body.get("reasoning")
        sent = [name for name in OPTIONAL_PARAMS if name in body]
        if isinstance(reasoning, dict) and "summary" in reasoning:
            sent.append(_SUMMARY_PARAM)
        named = refused_params(error, sent)
        if _SUMMARY_PARAM in sent and "reasoning summar" in error.message.lower():
            named.add(_SUMMARY_PARAM)  # OpenAI's unverified organisation, in words
        if not named:
            return None
        self.refused |= named
        log.warning(
            "%s: the server refused %s (HTTP 400); sending again without, and not sending %s again",
            self._id,
            ", ".join(sorted(named)),
            "them" if len(named) > 1 else "it",
        )
        changed = {k: v for k, v in body.items() if k not in named}
        if _SUMMARY_PARAM in named and isinstance(reasoning, dict):
            changed["reasoning"] = {k: v for k, v in reasoning.items() if k != "summary"}
        return changed

    def input_items(self, history: Sequence[HistoryItem]) -> list[dict[str, Any]]:
        """Neutral history -> Responses `input`; other providers' opaque reasoning is dropped."""
        items: list[dict[str, Any]] = []
        for item in history:
            if isinstance(item, MessageItem):
                part = "output_text" if item.role == "assistant" else "input_text"
                content = [
                    {"type": part, "text": p.text}
                    if isinstance(p, TextPart)
                    # https://platform.openai.com/docs/guides/images-vision: a data URL
                    else {"type": "input_image", "image_url": p.image_url, "detail": "auto"}
                    for p in item.content
                ]
                if content:
                    items.append({"type": "message", "role": item.role, "content": content})
            elif isinstance(item, ReasoningItem):
                if item.provider == self._id and item.encrypted_content:
                    items.append(
                        {
                            "type": "reasoning",
                            "id": item.id,
                            "summary": [
                                {"type": "summary_text", "text": s.text} for s in item.summary
                            ],
                            "encrypted_content": item.encrypted_content,
                        }
                    )
            elif isinstance(item, FunctionCallItem):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": item.call_id,
                        "name": item.name,
                        "arguments": item.arguments,
                    }
                )
            elif isinstance(item, FunctionCallOutputItem):
                items.append(
                    {"type": "function_call_output", "call_id": item.call_id, "output": item.output}
                )
        return items

    # -- streaming -----------------------------------------------------------------------

    async def _translate(
        self, events: SseEvents, attempt: Attempt
    ) -> AsyncGenerator[ModelEvent, None]:
        state = _StreamState(self._id, attempt.settings.secrets, self._env_key)
        async for name, data in events:
            attempt.started = True
            etype = data.get("type") or name
            if etype == _TEXT_DELTA:
                yield TextDelta(str(data.get("delta") or ""))
            elif etype in _REASONING_DELTAS:
                yield ReasoningDelta(str(data.get("delta") or ""))
            else:
                for event in state.handle(etype, data):
                    yield event
                if state.finished:
                    return


class _StreamState:
    """Everything but the text/reasoning hot path: items, tool calls, terminal events."""

    __slots__ = (
        "_args",
        "_emitted",
        "_env_key",
        "_provider",
        "_secrets",
        "finished",
        "refused",
        "response_id",
        "tool_calls",
    )

    def __init__(self, provider: str, secrets: tuple[str, ...], env_key: str | None) -> None:
        self._provider = provider
        self._secrets = secrets
        self._env_key = env_key
        self._args: dict[str, list[str]] = {}
        self._emitted: set[str] = set()
        self.response_id: str | None = None
        self.tool_calls = 0
        self.refused = False
        self.finished = False

    def handle(self, etype: str, data: dict[str, Any]) -> list[ModelEvent]:
        if etype == "response.function_call_arguments.delta":
            self._args.setdefault(str(data.get("item_id")), []).append(str(data.get("delta") or ""))
        elif etype == "response.function_call_arguments.done":
            if isinstance(data.get("arguments"), str):
                self._args[str(data.get("item_id"))] = [data["arguments"]]
        elif etype == "response.reasoning_summary_part.added":
            if data.get("summary_index"):  # later parts start a new paragraph
                return [ReasoningDelta("\n\n")]
        elif etype == "response.output_item.done":
            return self._item_done(data.get("item"))
        elif etype == "response.refusal.delta":
            self.refused = True
            return [TextDelta(str(data.get("delta") or ""))]
        elif etype in ("response.created", "response.in_progress"):
            self.response_id = (data.get("response") or {}).get("id") or self.response_id
        elif etype in ("response.completed", "response.incomplete"):
            return self._finish(etype, data.get("response") or {})
        elif etype == "response.failed":
            raise self._error((data.get("response") or {}).get("error") or {})
        elif etype == "error":
            inner = data.get("error")
            raise self._error(inner if isinstance(inner, dict) else data)
        return []

    def _item_done(self, item: Any) -> list[ModelEvent]:
        if not isinstance(item, dict):
            return []
        kind = item.get("type")
        key = str(item.get("call_id") or item.get("id"))
        if key in self._emitted:
            return []
        if kind == "function_call":
            self._emitted.add(key)
            self.tool_calls += 1
            arguments = item.get("arguments")
            if not isinstance(arguments, str):
                arguments = "".join(self._args.get(str(item.get("id")), ()))
            return [ToolCallRequested(call_id=key, name=str(item.get("name")), arguments=arguments)]
        if kind == "reasoning":
            self._emitted.add(key)
            summary = [
                SummaryPart(text=part["text"])
                for part in item.get("summary") or []
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            ]
            reasoning = ReasoningItem(
                id=str(item.get("id")),
                summary=summary,
                encrypted_content=item.get("encrypted_content"),
                provider=self._provider,
            )
            return [ReasoningDone(reasoning)]
        if kind == "message" and any(
            isinstance(part, dict) and part.get("type") == "refusal"
            for part in item.get("content") or []
        ):
            self.refused = True
        return []

    def _finish(self, etype: str, response: dict[str, Any]) -> list[ModelEvent]:
        self.finished = True
        events: list[ModelEvent] = []
        if etype == "response.completed":
            # Items the server only reported in the final object (never `output_item.done`).
            for item in response.get("output") or []:
                events.extend(self._item_done(item))
        usage = response.get("usage")
        if isinstance(usage, dict):
            events.append(_usage(usage))
        stop: StopKind
        if etype == "response.incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            stop = "refusal" if reason == "content_filter" else "max_tokens"
        elif self.refused:
            stop = "refusal"
        else:
            stop = "tool_use" if self.tool_calls else "end_turn"
        events.append(StreamEnd(stop=stop, response_id=response.get("id") or self.response_id))
        return events

    def _error(self, error: dict[str, Any]) -> ProviderError:
        info = ErrorInfo(
            code=_opt_str(error.get("code")),
            type=_opt_str(error.get("type")),
            message=_opt_str(error.get("message")),
        )
        return classify(
            provider=self._provider, info=info, env_key=self._env_key, secrets=self._secrets
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _usage(usage: dict[str, Any]) -> UsageReport:
    input_details = usage.get("input_tokens_details") or {}
    output_details = usage.get("output_tokens_details") or {}
    return UsageReport(
        input_tokens=int(usage.get("input_tokens") or 0),
        cached_input_tokens=int(input_details.get("cached_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        reasoning_tokens=int(output_details.get("reasoning_tokens") or 0),
    )
