"""`claude -p --output-format stream-json --verbose [--include-partial-messages]` output.

Like a session file, but lines carry `session_id` (snake case), sub-agent messages have a
`parent_tool_use_id` (flagged `isSidechain`), and with partial messages the `stream_event`
lines repeat the model's stream. Those are not doubled: a message's blocks come from its
`assistant` lines; the stream only adds the final output token count (`message_delta`) and,
when the output was cut before an `assistant` line was written (an interrupted turn), the
blocks that exist only as deltas. `result` lines that report a failure become `system`
messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .base import text_of
from .claude_code import ClaudeCodeParser, claude_usage
from .model import Msg, text_block, thinking_block, tool_use_block

__all__ = ["ClaudeStreamParser"]

_IGNORED = frozenset(
    {
        "control_request",
        "control_response",
        "control_cancel_request",
        "keep_alive",
        "rate_limit_event",
    }
)


@dataclass(slots=True)
class _Streaming:
    """One message being streamed: its blocks by index, and how many `assistant` lines had."""

    line: int
    model: str | None
    usage: dict[str, Any]
    sidechain: bool
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)


class ClaudeStreamParser(ClaudeCodeParser):
    format = "claude-stream-json"

    def __init__(self) -> None:
        super().__init__()
        self._streams: dict[str, _Streaming] = {}
        self._current: str | None = None
        self._delivered: dict[str, int] = {}
        self._after_compact = False

    def boundary(self, obj: dict[str, Any]) -> bool:
        return not self._streams and obj.get("parent_tool_use_id") is None and super().boundary(obj)

    def settled(self) -> bool:
        return not self._streams and super().settled()

    def end_chunk(self, out: list[Msg], *, eof: bool) -> None:
        for message_id in list(self._streams):
            self._finish_stream(message_id, out)
        self._delivered.clear()
        super().end_chunk(out, eof=eof)

    def feed(self, line: int, obj: dict[str, Any], out: list[Msg]) -> bool:
        kind = obj.get("type")
        if self.session_id is None and isinstance(obj.get("session_id"), str):
            self.session_id = obj["session_id"]
        if kind == "stream_event":
            self._last_was_assistant = False
            event = obj.get("event")
            return isinstance(event, dict) and self._event(line, event, obj, out)
        if kind == "system":
            self._last_was_assistant = False
            if obj.get("subtype") == "init":
                self.cwd = self.cwd or text_of(obj.get("cwd")) or None
                return True
            if obj.get("subtype") == "compact_boundary":
                self._after_compact = True
                out.append(
                    Msg(
                        "system",
                        [text_block("Conversation compacted")],
                        line,
                        compaction=True,
                        original=obj,
                    )
                )
            return True
        if kind == "assistant":
            self._last_was_assistant = True
            message = obj.get("message")
            message_id = text_of(message.get("id")) if isinstance(message, dict) else ""
            blocks = message.get("content") if isinstance(message, dict) else None
            if message_id and isinstance(blocks, list):
                self._delivered[message_id] = self._delivered.get(message_id, 0) + len(blocks)
            sidechain = obj.get("parent_tool_use_id") is not None
            return self._assistant_line(line, _timestamp(obj), obj, out, sidechain=sidechain)
        if kind == "user":
            self._last_was_assistant = False
            before = len(out)
            if not self._user(line, _timestamp(obj), obj, out):
                return False
            for msg in out[before:]:
                msg.is_sidechain = msg.is_sidechain or obj.get("parent_tool_use_id") is not None
                if self._after_compact and obj.get("isSynthetic"):
                    msg.compaction = True
            self._after_compact = False
            return True
        if kind == "result":
            self._last_was_assistant = False
            if obj.get("is_error") or obj.get("subtype") not in (None, "success"):
                detail = text_of(obj.get("result")) or ", ".join(
                    str(e) for e in obj.get("errors") or [] if isinstance(e, str)
                )
                text = f"Claude Code ended the turn: {text_of(obj.get('subtype')) or 'error'}"
                out.append(
                    Msg(
                        "system",
                        [text_block(f"{text}. {detail}".strip())],
                        line,
                        is_meta=True,
                        original=obj,
                    )
                )
            return True
        return kind in _IGNORED

    # -- partial messages -----------------------------------------------------------------

    def _event(self, line: int, event: dict[str, Any], obj: dict[str, Any], out: list[Msg]) -> bool:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            if not isinstance(message, dict):
                return False
            message_id = text_of(message.get("id")) or f"stream-line-{line}"
            self._streams[message_id] = _Streaming(
                line,
                text_of(message.get("model")) or None,
                dict(message.get("usage") or {}),
                obj.get("parent_tool_use_id") is not None,
            )
            self._current = message_id
            return True
        stream = self._streams.get(self._current or "")
        if stream is None:
            return kind in ("ping", "message_stop", "content_block_stop", "error")
        index = event.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block")
            if isinstance(block, dict):
                stream.blocks[index] = {**block, "_json": ""}
        elif kind == "content_block_delta" and isinstance(index, int) and index in stream.blocks:
            _apply_delta(stream.blocks[index], event.get("delta"))
        elif kind == "message_delta":
            spent = event.get("usage")
            if isinstance(spent, dict):
                stream.usage.update({k: v for k, v in spent.items() if v is not None})
        elif kind == "message_stop" and self._current is not None:
            self._finish_stream(self._current, out)
        return True

    def _finish_stream(self, message_id: str, out: list[Msg]) -> None:
        stream = self._streams.pop(message_id)
        if self._current == message_id:
            self._current = None
        delivered = self._delivered.get(message_id, 0)
        missing: list[dict[str, Any]] = []
        for index in sorted(stream.blocks):
            block = _finished_block(stream.blocks[index]) if index >= delivered else None
            if block is not None:
                missing.append(block)
        final_usage = claude_usage(stream.usage)
        existing = self._assistant.get(message_id)
        if existing is not None:
            existing.content.extend(missing)
            existing.usage = final_usage or existing.usage
        elif missing:
            msg = Msg(
                "assistant",
                missing,
                stream.line,
                id=message_id,
                model=stream.model,
                usage=final_usage,
                is_sidechain=stream.sidechain,
            )
            out.append(msg)


def _timestamp(obj: dict[str, Any]) -> str | None:
    value = obj.get("timestamp")
    return value if isinstance(value, str) else None


def _apply_delta(block: dict[str, Any], delta: Any) -> None:
    if not isinstance(delta, dict):
        return
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = text_of(block.get("text")) + text_of(delta.get("text"))
    elif kind == "thinking_delta":
        block["thinking"] = text_of(block.get("thinking")) + text_of(delta.get("thinking"))
    elif kind == "input_json_delta":
        block["_json"] = text_of(block.get("_json")) + text_of(delta.get("partial_json"))


def _finished_block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return text_block(text_of(block.get("text"))) if block.get("text") else None
    if kind == "thinking":
        return thinking_block(text_of(block.get("thinking")))
    if kind in ("tool_use", "server_tool_use"):
        try:
            parsed = orjson.loads(block["_json"]) if block.get("_json") else block.get("input")
        except orjson.JSONDecodeError:
            parsed = {"partial_json": block["_json"]}
        tool_input = parsed if isinstance(parsed, dict) else {}
        return tool_use_block(text_of(block.get("id")), text_of(block.get("name")), tool_input)
    return None
