"""A scripted mock of the OpenAI Chat Completions API, for unit and end-to-end tests.

Chunk shapes follow https://platform.openai.com/docs/api-reference/chat-streaming (the
`chat.completion.chunk` object) and https://platform.openai.com/docs/api-reference/chat/create
(`stream_options.include_usage`: every chunk carries `"usage": null`, then one extra chunk
with `"choices": []` and the usage, then `data: [DONE]`). Error bodies follow
https://platform.openai.com/docs/guides/error-codes (`{"error": {"message", "type",
"param", "code"}}`).

Same scripting API, builders and HTTP plumbing as `mock_responses` (imported, not copied),
so a test can run one script against either API by swapping the module:

    srv.enqueue(reasoning("thinking"), text("Hello world", chunks=3),
                tool_call("exec", {"command": ["echo", "hi"]}, call_id="call_1"),
                usage=Usage(input=100, output=20, cached=10, reasoning=5))
    srv.enqueue_error(429, headers={"Retry-After": "1"})
    srv.enqueue(text("slow", chunks=4), delay_s=0.05, cut_after=5)

How the shared builders map onto Chat: `text` -> `delta.content`; `reasoning` ->
`delta.reasoning_content` (DeepSeek/vLLM style; `encrypted` is ignored, Chat has no such
field); `refusal` -> `delta.refusal`; `tool_call` -> `delta.tool_calls` fragments (id, type
and name first, then the arguments in `chunks` pieces; calls are numbered by `index` in
order; the default call id is the Responses mock's, `call_fc_mock_<output index>`);
`completed()` -> finish_reason `stop` (`tool_calls` when there were calls); `incomplete()` ->
`length` (`content_filter` for that reason); `failed(code, message)` -> an `{"error": ...}`
chunk, then the body ends; `no_terminal()` -> the body ends after the deltas (no
finish_reason, no usage, no `[DONE]`). `cut_after=n` counts frames: the role chunk, each
delta, the finish chunk, the usage chunk and `[DONE]`.

The usage chunk is only sent when the request asked for it (`stream_options.include_usage`),
as OpenAI does. `enqueue_events` sends exactly the given chunks, then `[DONE]` unless
`done=False`.

`srv.reasoning_style = "openrouter"` streams reasoning as OpenRouter does for Claude
(https://openrouter.ai/docs/use-cases/reasoning-tokens): `delta.reasoning` plus
`delta.reasoning_details` fragments `{type: "reasoning.text", text, format, index}`, the
signature (the builder's `encrypted`) in a last fragment.

Images are user content parts `{"type": "image_url", "image_url": {"url": <data: or https
URL>}}` (https://platform.openai.com/docs/guides/images-vision?api-mode=chat);
`image_urls(request)` lists them.

Refusals a real API makes (checked before the script is consumed):
- a model in `srv.text_only_models` sent an `image_url` part gets OpenAI's 400 "Invalid
  content type. image_url is only supported by certain models." (param
  `messages.[i].content.[j].type`, code null; the body as reported for GPT-3.5 in
  github.com/vllm-project/vllm/issues/11629);
- `srv.thinking_mode = True` (DeepSeek's thinking mode): an assistant message with
  `tool_calls` but no `reasoning_content` gets 400 "The `reasoning_content` in the thinking
  mode must be passed back to the API." (https://api-docs.deepseek.com/guides/thinking_mode#
  tool-calls; body as reported in github.com/anomalyco/opencode/issues/24083);
- `srv.thinking_upstream = True` (Claude with thinking behind OpenRouter): the last assistant
  message with `tool_calls` must carry the `reasoning_details` it was given, else Anthropic's
  400 "Expected `thinking` or `redacted_thinking`, but found `tool_use`" is passed through.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any, ClassVar

from .mock_responses import (
    End,
    MockResponsesServer,
    Output,
    RecordedRequest,
    Refusal,
    Usage,
    _split,
    _Stream,
    completed,
    failed,
    incomplete,
    no_terminal,
    reasoning,
    refusal,
    strict_format_refusal,
    text,
    tool_call,
)

__all__ = [
    "DONE",
    "End",
    "MockChatServer",
    "Output",
    "RecordedRequest",
    "Usage",
    "build_chunks",
    "completed",
    "failed",
    "incomplete",
    "no_terminal",
    "reasoning",
    "refusal",
    "text",
    "tool_call",
    "usage_json",
]

DONE = "[DONE]"
"""The end-of-stream data line (not JSON)."""

_ERROR_TYPES = {"rate_limit_exceeded": "requests", "server_error": "server_error"}


def usage_json(usage: Usage) -> dict[str, Any]:
    """`usage` as the Chat Completions API reports it."""
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _deltas(
    out: Output, index: int, call_index: int, reasoning_style: str = "reasoning_content"
) -> list[dict[str, Any]]:
    pieces = _split(out.text, out.chunks)
    if out.kind == "message":
        return [{"content": p} for p in pieces]
    if out.kind == "refusal":
        return [{"refusal": p} for p in pieces]
    if out.kind == "reasoning" and reasoning_style == "openrouter":
        detail = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
        deltas: list[dict[str, Any]] = [
            {"content": "", "reasoning": p, "reasoning_details": [{**detail, "text": p}]}
            for p in pieces
            if p
        ]
        if out.encrypted:
            signed = {**detail, "text": "", "signature": out.encrypted}
            deltas.append({"content": "", "reasoning": None, "reasoning_details": [signed]})
        return deltas
    if out.kind == "reasoning":
        return [{"content": None, "reasoning_content": p} for p in pieces if p]
    call_id = out.call_id or f"call_{out.id or f'fc_mock_{index}'}"
    first = {
        "index": call_index,
        "id": call_id,
        "type": "function",
        "function": {"name": out.name, "arguments": ""},
    }
    rest = [{"index": call_index, "function": {"arguments": p}} for p in pieces]
    return [{"tool_calls": [first]}, *({"tool_calls": [r]} for r in rest)]


def build_chunks(
    outputs: tuple[Output, ...],
    *,
    usage: Usage | None,
    end: End,
    completion_id: str,
    model: str,
    reasoning_style: str = "reasoning_content",
) -> list[Any]:
    """The official frame sequence (chunk dicts, then `DONE`) for one scripted response.

    `usage=None` means the request did not ask for usage: no `usage` keys, no usage chunk.
    """
    base: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_mock",
    }
    if usage is not None:
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    frames: list[Any] = [chunk({"role": "assistant", "content": "", "refusal": None})]
    calls = itertools.count()
    has_calls = False
    for i, out in enumerate(outputs):
        call_index = next(calls) if out.kind == "function_call" else -1
        has_calls = has_calls or out.kind == "function_call"
        frames.extend(chunk(delta) for delta in _deltas(out, i, call_index, reasoning_style))
    if end.kind == "failed":
        error = {
            "message": end.message,
            "type": _ERROR_TYPES.get(end.code, "invalid_request_error"),
            "param": None,
            "code": end.code,
        }
        frames.append({"error": error})
    if end.kind in ("failed", "none"):
        return frames
    if end.kind == "incomplete":
        finish = "content_filter" if end.reason == "content_filter" else "length"
    else:
        finish = "tool_calls" if has_calls else "stop"
    frames.append(chunk({}, finish))
    if usage is not None:
        frames.append({**base, "choices": [], "usage": usage_json(usage)})
    frames.append(DONE)
    return frames


DEEPSEEK_MISSING_REASONING = (
    "The `reasoning_content` in the thinking mode must be passed back to the API."
)
ANTHROPIC_MISSING_THINKING = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
)


class MockChatServer(MockResponsesServer):
    """Serves `POST /v1/chat/completions`; see the module docstring."""

    ROUTE: ClassVar[str] = "/chat/completions"

    def __init__(self) -> None:
        super().__init__()
        self.reasoning_style = "reasoning_content"
        self.thinking_mode = False
        self.thinking_upstream = False
        self.text_only_models: set[str] = set()

    def _refusal(self, request: RecordedRequest) -> Refusal | None:
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        response_format = body.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
            strict = strict_format_refusal(
                {"type": "json_schema", **(response_format.get("json_schema") or {})},
                "response_format",
            )
            if strict is not None:
                return strict
        if str(body.get("model")) in self.text_only_models:
            for where, _ in _image_parts(messages):
                error = {
                    "message": "Invalid content type. image_url is only supported by certain "
                    "models.",
                    "type": "invalid_request_error",
                    "param": f"{where}.type",
                    "code": None,
                }
                return Refusal(400, {"error": error})
        with_calls = [
            (i, m)
            for i, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
        ]
        if self.thinking_mode and any("reasoning_content" not in m for _, m in with_calls):
            error = {
                "message": DEEPSEEK_MISSING_REASONING,
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
            return Refusal(400, {"error": error})
        if self.thinking_upstream and with_calls and not with_calls[-1][1].get("reasoning_details"):
            message = ANTHROPIC_MISSING_THINKING.format(index=with_calls[-1][0])
            return Refusal(400, {"error": {"message": message, "code": 400}})
        return None

    def enqueue_events(
        self,
        events: list[dict[str, Any]],
        *,
        delay_s: float = 0.0,
        cut_after: int | None = None,
        done: bool = True,
    ) -> None:
        """Script a stream of exactly these chunks, then `data: [DONE]` unless `done=False`."""
        frames: list[Any] = [*events, DONE] if done else list(events)
        self._script.append(_Stream(events=frames, delay_s=delay_s, cut_after=cut_after))

    def _build_events(self, script: _Stream, request: RecordedRequest) -> list[Any]:
        body = request.body if isinstance(request.body, dict) else {}
        options = body.get("stream_options")
        wants_usage = isinstance(options, dict) and options.get("include_usage") is True
        return build_chunks(
            script.outputs,
            usage=script.usage if wants_usage else None,
            end=script.end,
            completion_id=f"chatcmpl-mock-{next(self._ids)}",
            model=str(body.get("model", "mock")),
            reasoning_style=self.reasoning_style,
        )

    def _frame(self, event: Any) -> bytes:
        data = event if isinstance(event, str) else json.dumps(event, separators=(",", ":"))
        return f"data: {data}\n\n".encode()


def _image_parts(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """(`messages.[i].content.[j]`, part) for every `image_url` part, in order."""
    found: list[tuple[str, dict[str, Any]]] = []
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            if isinstance(part, dict) and part.get("type") == "image_url":
                found.append((f"messages.[{i}].content.[{j}]", part))
    return found


def image_urls(request: RecordedRequest) -> list[str]:
    """The URL of every `image_url` part the request sent, in order."""
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages")
    return [
        str((part.get("image_url") or {}).get("url"))
        for _, part in _image_parts(messages if isinstance(messages, list) else [])
    ]
