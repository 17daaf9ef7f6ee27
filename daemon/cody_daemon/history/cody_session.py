"""Cody's own session files, read with the store's rules (store/reader.py).

The items are the store's (`core.history`, validated by `HISTORY_ITEM`), streamed segments of
one item are merged with the store's `merge_segment`, `usage` events go to the last model
message before them, and a call still open at the end of the file gets the store's
`INTERRUPTED_OUTPUT` result, exactly as `session/load` repairs it. Unlike `read_session`, the
file is read a chunk at a time, so pages of a long session never hold the whole history.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidationError

from ..core.history import (
    HISTORY_ITEM,
    FunctionCallItem,
    FunctionCallOutputItem,
    ImagePart,
    MessageItem,
    ReasoningItem,
)
from ..store.reader import INTERRUPTED_OUTPUT, merge_segment
from .base import Parser, text_of
from .model import (
    Msg,
    image_block,
    text_block,
    thinking_block,
    tool_result_block,
    tool_use_block,
    usage,
)
from .vocabulary import map_tool

__all__ = ["CodySessionParser"]

_Streamed = MessageItem | ReasoningItem


class CodySessionParser(Parser):
    agent = "cody"
    format = "cody-session"

    def __init__(self) -> None:
        super().__init__()
        self.model: str | None = None
        self._segments: dict[str, tuple[_Streamed, Msg]] = {}
        self._awaiting_usage: Msg | None = None
        self._open_calls: dict[str, int] = {}
        """Calls without a result yet: call id -> line."""

    def boundary(self, obj: dict[str, Any]) -> bool:
        return obj.get("type") == "turn_context"

    def settled(self) -> bool:
        return self._awaiting_usage is None

    def end_chunk(self, out: list[Msg], *, eof: bool) -> None:
        self._segments.clear()
        self._awaiting_usage = None
        if eof:
            for call_id, line in self._open_calls.items():
                block = tool_result_block(call_id, INTERRUPTED_OUTPUT, is_error=True)
                out.append(Msg("user", [block], line))
            self._open_calls.clear()

    def snapshot(self) -> dict[str, Any]:
        state: dict[str, Any] = {"open": self._open_calls} if self._open_calls else {}
        if self.model:
            state["model"] = self.model
        return state

    def restore(self, state: dict[str, Any]) -> None:
        model = state.get("model")
        self.model = model if isinstance(model, str) else None
        calls = state.get("open")
        self._open_calls = dict(calls) if isinstance(calls, dict) else {}

    def feed(self, line: int, obj: dict[str, Any], out: list[Msg]) -> bool:
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return False
        timestamp = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
        self.note_time(timestamp)
        if kind == "response_item":
            try:
                item = HISTORY_ITEM.validate_python(payload)
            except ValidationError:
                return False
            self._item(line, timestamp, item, obj, out)
            return True
        if kind == "event":
            if payload.get("kind") == "usage":
                self._usage(payload.get("last"))
            elif payload.get("kind") == "title" and isinstance(payload.get("title"), str):
                self.title = payload["title"]
            return True
        if kind == "turn_context":
            self.model = text_of(payload.get("model")) or self.model
            return True
        if kind == "session_meta":
            self.session_id = text_of(payload.get("id")) or self.session_id
            self.cwd = text_of(payload.get("cwd")) or self.cwd
            self.started_at = text_of(payload.get("created")) or self.started_at
            return True
        return False

    def _item(
        self, line: int, timestamp: str | None, item: Any, obj: dict[str, Any], out: list[Msg]
    ) -> None:
        if isinstance(item, MessageItem | ReasoningItem):
            known = self._segments.get(item.id)
            if known is not None and type(known[0]) is type(item):
                target, msg = known
                merge_segment(target, item)
                msg.content = _blocks(target)
                msg.extra_lines.append(obj)
                return
            role = "assistant" if isinstance(item, ReasoningItem) else item.role
            msg = Msg(
                "system" if role == "developer" else role,
                _blocks(item),
                line,
                timestamp,
                item.id,
                is_meta=role == "developer",
                original=obj,
            )
            self._segments[item.id] = (item, msg)
            self._add(msg, out, model_output=role == "assistant")
        elif isinstance(item, FunctionCallItem):
            try:
                raw = orjson.loads(item.arguments) if item.arguments.strip() else {}
            except orjson.JSONDecodeError:
                raw = {"arguments": item.arguments}
            tool_input = raw if isinstance(raw, dict) else {"arguments": raw}
            name, mapped = map_tool("cody", item.name, tool_input)
            self._open_calls[item.call_id] = line
            msg = Msg(
                "assistant",
                [tool_use_block(item.call_id, name, mapped)],
                line,
                timestamp,
                item.call_id,
                original=obj,
            )
            self._add(msg, out, model_output=True)
        elif isinstance(item, FunctionCallOutputItem):
            self._open_calls.pop(item.call_id, None)
            block = tool_result_block(item.call_id, item.output, is_error=item.status == "failed")
            out.append(Msg("user", [block], line, timestamp, original=obj))

    def _add(self, msg: Msg, out: list[Msg], *, model_output: bool) -> None:
        out.append(msg)
        if model_output:
            msg.model = self.model
            self._awaiting_usage = msg

    def _usage(self, last: Any) -> None:
        if not isinstance(last, dict) or self._awaiting_usage is None:
            return
        self._awaiting_usage.usage = usage(
            input_tokens=last.get("input_tokens"),
            cached=last.get("cached_read_tokens"),
            output=last.get("output_tokens"),
            reasoning=last.get("thought_tokens"),
        )
        self._awaiting_usage = None


def _blocks(item: _Streamed) -> list[dict[str, Any]]:
    if isinstance(item, ReasoningItem):
        return [thinking_block(item.text)]
    if not item.images:
        return [text_block(item.text)]
    return [
        image_block(part.image_url) if isinstance(part, ImagePart) else text_block(part.text)
        for part in item.content
    ]
