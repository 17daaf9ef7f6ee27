"""Translate the Anthropic Messages API event stream into `ModelEvent`s.

Events per https://docs.anthropic.com/en/api/messages-streaming: `message_start`, then per
content block `content_block_start` / `content_block_delta`* / `content_block_stop`, then
`message_delta` (stop reason, cumulative usage) and `message_stop`; `ping` anywhere; an
`error` event (e.g. `overloaded_error`) instead of the rest.

Invariants:
- `text_delta`/`thinking_delta` become `TextDelta`/`ReasoningDelta` in arrival order;
- a `tool_use` block becomes one `ToolCallRequested` at its `content_block_stop`, arguments
  being the concatenated `input_json_delta` pieces (`"{}"` when there were none);
- a `thinking` block becomes one `ReasoningDone` at its stop, carrying its full text, its
  `signature` and the provider id; a `redacted_thinking` block one carrying its `data` as
  `encrypted_content`;
- `message_stop` yields `UsageReport` (input = uncached + cache read + cache creation) then
  `StreamEnd` and sets `finished`; an `error` event raises a classified `ProviderError`;
- unknown event and block types are ignored (the API may add them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..core.history import ReasoningItem, SummaryPart
from .base import (
    ModelEvent,
    ReasoningDelta,
    ReasoningDone,
    StopKind,
    StreamEnd,
    TextDelta,
    ToolCallRequested,
    UsageReport,
)
from .http_errors import classify, error_info
from .sse import StreamSettings

__all__ = ["MessagesStreamState"]

_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


@dataclass(slots=True)
class _Block:
    type: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    data: str | None = None


@dataclass(slots=True)
class MessagesStreamState:
    """Content blocks being assembled, usage, and the terminal events of one response."""

    settings: StreamSettings
    blocks: dict[Any, _Block] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    message_id: str | None = None
    stop_reason: str | None = None
    tool_calls: int = 0
    finished: bool = False

    def handle(self, data: dict[str, Any]) -> list[ModelEvent]:
        etype = data.get("type")
        if etype == "content_block_delta":
            return self._delta(data.get("index"), _obj(data.get("delta")))
        if etype == "content_block_start":
            return self._start(data.get("index"), _obj(data.get("content_block")))
        if etype == "content_block_stop":
            return self._stop(data.get("index"))
        if etype == "message_start":
            message = _obj(data.get("message"))
            self.message_id = _opt_str(message.get("id"))
            self._add_usage(message.get("usage"))
        elif etype == "message_delta":
            reason = _obj(data.get("delta")).get("stop_reason")
            self.stop_reason = _opt_str(reason) or self.stop_reason
            self._add_usage(data.get("usage"))
        elif etype == "message_stop":
            return self._finish()
        elif etype == "error":
            settings = self.settings
            raise classify(
                provider=settings.provider,
                info=error_info(data),
                env_key=settings.env_key,
                secrets=settings.secrets,
            )
        return []  # `ping` and event types added after this was written

    def _start(self, index: Any, block: dict[str, Any]) -> list[ModelEvent]:
        kind = str(block.get("type"))
        self.blocks[index] = _Block(
            kind, id=str(block.get("id") or ""), name=str(block.get("name") or "")
        )
        if kind == "thinking" and block.get("thinking"):
            return self._delta(index, {"type": "thinking_delta", "thinking": block["thinking"]})
        if kind == "text" and block.get("text"):
            return [TextDelta(str(block["text"]))]
        if kind == "redacted_thinking":
            self.blocks[index].data = _opt_str(block.get("data"))
        elif kind == "tool_use" and block.get("input"):
            self.blocks[index].parts.append(orjson.dumps(block["input"]).decode())
        return []

    def _delta(self, index: Any, delta: dict[str, Any]) -> list[ModelEvent]:
        dtype = delta.get("type")
        block = self.blocks.get(index)
        if dtype == "thinking_delta":
            text = str(delta.get("thinking") or "")
            if block is not None:
                block.parts.append(text)
            return [ReasoningDelta(text)]
        if block is None:
            return []
        if dtype == "input_json_delta":
            block.parts.append(str(delta.get("partial_json") or ""))
        elif dtype == "signature_delta":
            block.signature = (block.signature or "") + str(delta.get("signature") or "")
        return []

    def _stop(self, index: Any) -> list[ModelEvent]:
        block = self.blocks.pop(index, None)
        if block is None:
            return []
        if block.type == "tool_use":
            self.tool_calls += 1
            arguments = "".join(block.parts) or "{}"
            return [ToolCallRequested(call_id=block.id, name=block.name, arguments=arguments)]
        if block.type in _THINKING_BLOCKS:
            item = ReasoningItem(
                id=f"{self.message_id or 'msg'}:{index}",
                summary=[SummaryPart(text="".join(block.parts))] if block.parts else [],
                signature=block.signature,
                encrypted_content=block.data,
                provider=self.settings.provider,
            )
            return [ReasoningDone(item)]
        return []

    def _add_usage(self, usage: Any) -> None:
        if isinstance(usage, dict):  # `message_delta` counts are cumulative: later wins
            self.usage.update((k, v) for k, v in usage.items() if isinstance(v, int))

    def _finish(self) -> list[ModelEvent]:
        self.finished = True
        events: list[ModelEvent] = []
        usage = self.usage
        if usage:
            cache_read = usage.get("cache_read_input_tokens", 0)
            cache_write = usage.get("cache_creation_input_tokens", 0)
            events.append(
                UsageReport(
                    input_tokens=usage.get("input_tokens", 0) + cache_read + cache_write,
                    cached_input_tokens=cache_read,
                    cache_write_tokens=cache_write,
                    output_tokens=usage.get("output_tokens", 0),
                )
            )
        reason = self.stop_reason
        stop: StopKind
        if reason in ("max_tokens", "model_context_window_exceeded"):
            stop = "max_tokens"
        elif reason == "refusal":
            stop = "refusal"
        else:  # end_turn, tool_use, stop_sequence, pause_turn
            stop = "tool_use" if self.tool_calls else "end_turn"
        events.append(StreamEnd(stop=stop, response_id=self.message_id))
        return events


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
