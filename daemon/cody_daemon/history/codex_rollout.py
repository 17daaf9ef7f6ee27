"""Codex rollout files: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

Lines are `{timestamp, type, payload}` (older files: bare items). Used:
- `session_meta` (id, cwd), `turn_context` (the model of the following items);
- `response_item`: `message` (developer messages and injected context flagged `isMeta`),
  `reasoning` (content, else summary -> `thinking`), `function_call` (+`_output`),
  `custom_tool_call` (+`_output`), `local_shell_call`, `web_search_call`;
- `event_msg` `token_count`: `last_token_usage` attached to the last model message before it
  (the UI duplicates `user_message` / `agent_message` / `item_completed` are not doubled);
- `compacted`: a `system` message flagged `compaction` holding what replaced the history.
Known bookkeeping lines (`world_state`, `token_usage_record`, `ghost_snapshot`, ...) are
ignored; anything else is reported as not understood.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

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

__all__ = ["CodexRolloutParser", "INJECTED_PREFIXES", "codex_output", "is_injected"]

INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<skills_instructions>",
    "<permissions instructions>",
)
"""User-role texts Codex injects itself (flagged `isMeta`, never a title)."""

_IGNORED_TOP = frozenset(
    {"world_state", "token_usage_record", "thread_settings", "state", "warning", "inter_agent"}
)
_IGNORED_ITEMS = frozenset({"ghost_snapshot", "other"})
_EXIT = re.compile(r"(?m)^(?:Process exited with code|Exit code:) (-?\d+)\s*$")
_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)


def is_injected(text: str) -> bool:
    return text.lstrip().startswith(INJECTED_PREFIXES)


def codex_output(output: Any) -> tuple[Any, bool]:
    """A Codex tool output as tool_result content, and whether it reports a failure."""
    if isinstance(output, dict):
        content, failed = codex_output(output.get("content", output.get("output", "")))
        return content, failed or output.get("success") is False
    if isinstance(output, list):
        blocks: list[dict[str, Any]] = []
        for part in output:
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("input_text", "output_text", "text"):
                blocks.append(text_block(text_of(part.get("text"))))
            elif part.get("type") == "input_image" and isinstance(part.get("image_url"), str):
                blocks.append(image_block(part["image_url"]))
        return blocks, False
    text = output if isinstance(output, str) else "" if output is None else str(output)
    if text.startswith("{") and '"output"' in text[:200]:
        try:
            wrapped = orjson.loads(text)
        except orjson.JSONDecodeError:
            wrapped = None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
            metadata = wrapped.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            return wrapped["output"], isinstance(code, int) and code != 0
    head = text[:2000]
    match = _EXIT.search(head)
    failed = bool(match and int(match.group(1)) != 0)
    failed = failed or head.startswith(("exec_command failed", "apply_patch failed"))
    failed = failed or "rejected by user" in head or "aborted by user" in head
    return text, failed


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            return {"arguments": raw}
        return value if isinstance(value, dict) else {"arguments": value}
    return {}


class CodexRolloutParser(Parser):
    agent = "codex"
    format = "codex-rollout"

    def __init__(self) -> None:
        super().__init__()
        self.model: str | None = None
        self._awaiting_usage: Msg | None = None

    # -- chunking -------------------------------------------------------------------------

    def boundary(self, obj: dict[str, Any]) -> bool:
        kind = obj.get("type")
        if kind == "turn_context":
            return True
        payload = obj.get("payload")
        return (
            kind == "event_msg"
            and isinstance(payload, dict)
            and payload.get("type") == "task_started"
        )

    def settled(self) -> bool:
        return self._awaiting_usage is None

    def end_chunk(self, out: list[Msg], *, eof: bool) -> None:
        self._awaiting_usage = None

    def snapshot(self) -> dict[str, Any]:
        return {"model": self.model} if self.model else {}

    def restore(self, state: dict[str, Any]) -> None:
        model = state.get("model")
        self.model = model if isinstance(model, str) else None

    # -- lines ----------------------------------------------------------------------------

    def feed(self, line: int, obj: dict[str, Any], out: list[Msg]) -> bool:
        kind = obj.get("type")
        payload = obj.get("payload")
        timestamp = obj.get("timestamp")
        if "payload" not in obj:
            return self._legacy(line, obj, out)
        self.note_time(timestamp)
        if not isinstance(payload, dict):
            return False
        if kind == "response_item":
            return self._item(line, timestamp, payload, obj, out)
        if kind == "event_msg":
            self._event(payload)
            return True
        if kind == "session_meta":
            self.session_id = text_of(payload.get("id")) or self.session_id
            self.cwd = text_of(payload.get("cwd")) or self.cwd
            if isinstance(payload.get("timestamp"), str):
                self.started_at = self.started_at or payload["timestamp"]
            return True
        if kind == "turn_context":
            self.model = text_of(payload.get("model")) or self.model
            self.cwd = self.cwd or text_of(payload.get("cwd")) or None
            return True
        if kind == "compacted":
            text = text_of(payload.get("message")) or "Conversation compacted."
            out.append(
                Msg("system", [text_block(text)], line, timestamp, compaction=True, original=obj)
            )
            return True
        return kind in _IGNORED_TOP

    def _legacy(self, line: int, obj: dict[str, Any], out: list[Msg]) -> bool:
        """Rollouts before `{type, payload}`: a bare meta line, then bare items."""
        if obj.get("type") in _ITEM_TYPES:
            return self._item(line, obj.get("timestamp"), obj, obj, out)
        if "record_type" in obj:
            return True
        if "id" in obj and "type" not in obj and self.session_id is None:
            self.session_id = text_of(obj.get("id")) or None
            self.note_time(obj.get("timestamp"))
            return True
        return obj.get("type") in _IGNORED_ITEMS

    def _item(
        self, line: int, timestamp: Any, item: dict[str, Any], obj: dict[str, Any], out: list[Msg]
    ) -> bool:
        kind = item.get("type")
        ts = timestamp if isinstance(timestamp, str) else None
        item_id = item.get("id") if isinstance(item.get("id"), str) else None
        if kind == "message":
            return self._message(line, ts, item, obj, out)
        if kind == "reasoning":
            msg = Msg("assistant", [thinking_block(_reasoning_text(item))], line, ts, item_id)
            return self._model_output(msg, obj, out)
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = text_of(item.get("call_id")) or item_id or f"call-line-{line}"
            if kind == "function_call":
                name = text_of(item.get("name"))
                tool_input = _arguments(item.get("arguments"))
            elif kind == "custom_tool_call":
                name = text_of(item.get("name"))
                tool_input = {"input": item.get("input")}
            else:
                name = "local_shell"
                action = item.get("action")
                tool_input = dict(action) if isinstance(action, dict) else {}
                tool_input.pop("type", None)
            unified, mapped = map_tool("codex", name, tool_input)
            msg = Msg("assistant", [tool_use_block(call_id, unified, mapped)], line, ts, item_id)
            return self._model_output(msg, obj, out)
        if kind in ("function_call_output", "custom_tool_call_output"):
            call_id = text_of(item.get("call_id"))
            if not call_id:
                return False
            content, failed = codex_output(item.get("output"))
            block = tool_result_block(call_id, content, is_error=failed)
            out.append(Msg("user", [block], line, ts, item_id, original=obj))
            return True
        if kind == "web_search_call":
            return self._web_search(line, ts, item, obj, out)
        if kind in ("compaction", "compaction_summary"):
            text = "Context compacted (the provider's summary is encrypted)."
            out.append(Msg("system", [text_block(text)], line, ts, compaction=True, original=obj))
            return True
        return kind in _IGNORED_ITEMS

    def _message(
        self, line: int, ts: str | None, item: dict[str, Any], obj: dict[str, Any], out: list[Msg]
    ) -> bool:
        role = item.get("role")
        blocks: list[dict[str, Any]] = []
        for part in item.get("content") or []:
            if not isinstance(part, dict):
                continue
            part_type = part.get("type")
            if part_type in ("input_text", "output_text", "text"):
                blocks.append(text_block(text_of(part.get("text"))))
            elif part_type == "refusal":
                blocks.append(text_block(text_of(part.get("refusal"))))
            elif part_type == "input_image" and isinstance(part.get("image_url"), str):
                blocks.append(image_block(part["image_url"]))
        if not blocks:
            return True
        item_id = item.get("id") if isinstance(item.get("id"), str) else None
        metadata = obj.get("metadata")
        compaction = isinstance(metadata, dict) and metadata.get("compaction_output") is True
        if role == "assistant":
            msg = Msg("assistant", blocks, line, ts, item_id, compaction=compaction)
            return self._model_output(msg, obj, out)
        if role == "user":
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            msg = Msg("user", blocks, line, ts, item_id, is_meta=is_injected(text), original=obj)
        elif role in ("developer", "system"):
            msg = Msg("system", blocks, line, ts, item_id, is_meta=True, original=obj)
        else:
            return False
        out.append(msg)
        return True

    def _model_output(self, msg: Msg, obj: dict[str, Any], out: list[Msg]) -> bool:
        msg.model = self.model
        msg.original = obj
        out.append(msg)
        self._awaiting_usage = msg
        return True

    def _web_search(
        self, line: int, ts: str | None, item: dict[str, Any], obj: dict[str, Any], out: list[Msg]
    ) -> bool:
        action = item.get("action")
        tool_input = (
            {k: v for k, v in action.items() if k != "type"} if isinstance(action, dict) else {}
        )
        call_id = text_of(item.get("id")) or f"web-search-line-{line}"
        status = text_of(item.get("status")) or "completed"
        use = Msg(
            "assistant", [tool_use_block(call_id, "WebSearch", tool_input)], line, ts, call_id
        )
        self._model_output(use, obj, out)
        note = f"Web search {status} (Codex does not store the results)."
        result = tool_result_block(call_id, note, is_error=status == "failed")
        out.append(Msg("user", [result], line, ts, original=obj))
        return True

    def _event(self, payload: dict[str, Any]) -> None:
        if payload.get("type") != "token_count" or self._awaiting_usage is None:
            return
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        if not isinstance(last, dict):
            return
        self._awaiting_usage.usage = usage(
            input_tokens=last.get("input_tokens"),
            cached=last.get("cached_input_tokens"),
            output=last.get("output_tokens"),
            reasoning=last.get("reasoning_output_tokens"),
        )
        self._awaiting_usage = None


def _reasoning_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, list):
        texts = [text_of(p.get("text")) for p in content if isinstance(p, dict)]
        if any(texts):
            return "".join(texts)
    summary = item.get("summary")
    if isinstance(summary, list):
        return "\n\n".join(text_of(p.get("text")) for p in summary if isinstance(p, dict))
    return ""
