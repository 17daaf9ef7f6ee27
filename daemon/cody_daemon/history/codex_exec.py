"""`codex exec --json` output: `thread.started`, `turn.started`, `item.*`, `turn.completed`.

Only `item.completed` carries finished items (`item.started` / `item.updated` are progress
and are not doubled). A command, file change, MCP call, web search or plan item becomes a
`tool_use` message and its `tool_result` (Codex reports both in one item). `turn.completed`
usage (as Codex reports it) goes to the turn's last model message. The prompt itself is not
in this output, so exec transcripts have no user messages. Item ids repeat in every run
(`item_0`, ...), so message ids are prefixed with the turn number: `t2:item_3`.
"""

from __future__ import annotations

from typing import Any

import orjson

from .base import Parser, text_of
from .model import Msg, text_block, thinking_block, tool_result_block, tool_use_block, usage

__all__ = ["CodexExecParser"]

_PROGRESS = frozenset({"item.started", "item.updated"})


class CodexExecParser(Parser):
    agent = "codex"
    format = "codex-exec-json"

    def __init__(self) -> None:
        super().__init__()
        self.turn = 0
        self._last_output: Msg | None = None

    def boundary(self, obj: dict[str, Any]) -> bool:
        return obj.get("type") == "turn.started"

    def end_chunk(self, out: list[Msg], *, eof: bool) -> None:
        self._last_output = None

    def snapshot(self) -> dict[str, Any]:
        return {"turn": self.turn}

    def restore(self, state: dict[str, Any]) -> None:
        turn = state.get("turn")
        self.turn = turn if isinstance(turn, int) else 0

    def feed(self, line: int, obj: dict[str, Any], out: list[Msg]) -> bool:
        kind = obj.get("type")
        if kind == "thread.started":
            self.session_id = text_of(obj.get("thread_id")) or self.session_id
            return True
        if kind == "turn.started":
            self.turn += 1
            self._last_output = None
            return True
        if kind in _PROGRESS:
            return True
        if kind == "item.completed":
            item = obj.get("item")
            return isinstance(item, dict) and self._item(line, item, obj, out)
        if kind == "turn.completed":
            reported = obj.get("usage")
            if isinstance(reported, dict) and self._last_output is not None:
                self._last_output.usage = usage(
                    input_tokens=reported.get("input_tokens"),
                    cached=reported.get("cached_input_tokens"),
                    output=reported.get("output_tokens"),
                    reasoning=reported.get("reasoning_output_tokens"),
                )
            self._last_output = None
            return True
        if kind in ("turn.failed", "error"):
            error = obj.get("error")
            message = text_of(error.get("message")) if isinstance(error, dict) else ""
            message = message or text_of(obj.get("message")) or "Codex reported an error."
            out.append(Msg("system", [text_block(message)], line, is_meta=True, original=obj))
            return True
        return False

    def _item(self, line: int, item: dict[str, Any], obj: dict[str, Any], out: list[Msg]) -> bool:
        kind = item.get("type")
        item_id = f"t{self.turn}:{text_of(item.get('id')) or f'line-{line}'}"
        if kind == "agent_message":
            return self._output(
                Msg("assistant", [text_block(text_of(item.get("text")))], line), item_id, obj, out
            )
        if kind == "reasoning":
            return self._output(
                Msg("assistant", [thinking_block(text_of(item.get("text")))], line),
                item_id,
                obj,
                out,
            )
        if kind == "error":
            text = text_of(item.get("message")) or "Codex reported an error."
            out.append(
                Msg("system", [text_block(text)], line, id=item_id, is_meta=True, original=obj)
            )
            return True
        call = _tool_call(kind, item)
        if call is None:
            return False
        name, tool_input, result, failed = call
        self._output(
            Msg("assistant", [tool_use_block(item_id, name, tool_input)], line), item_id, obj, out
        )
        out.append(
            Msg("user", [tool_result_block(item_id, result, is_error=failed)], line, original=obj)
        )
        return True

    def _output(self, msg: Msg, item_id: str, obj: dict[str, Any], out: list[Msg]) -> bool:
        msg.id = item_id
        msg.original = obj
        out.append(msg)
        self._last_output = msg
        return True


def _tool_call(kind: Any, item: dict[str, Any]) -> tuple[str, dict[str, Any], str, bool] | None:
    """(unified name, input, result text, failed) of a tool-like exec item."""
    status = text_of(item.get("status"))
    failed = status in ("failed", "declined")
    if kind == "command_execution":
        code = item.get("exit_code")
        failed = failed or (isinstance(code, int) and code != 0)
        output = text_of(item.get("aggregated_output"))
        if status == "declined" and not output:
            output = "The command was declined."
        return "Bash", {"command": text_of(item.get("command"))}, output, failed
    if kind == "file_change":
        raw_changes = item.get("changes")
        changes: list[Any] = raw_changes if isinstance(raw_changes, list) else []
        paths = ", ".join(text_of(c.get("path")) for c in changes if isinstance(c, dict))
        return "Edit", {"changes": changes}, f"File change {status or 'completed'}: {paths}", failed
    if kind == "mcp_tool_call":
        name = f"mcp__{text_of(item.get('server'))}__{text_of(item.get('tool'))}"
        arguments = item.get("arguments")
        error = item.get("error")
        if isinstance(error, dict):
            return name, _object(arguments), text_of(error.get("message")), True
        result = item.get("result")
        text = (
            result if isinstance(result, str) else orjson.dumps(result).decode() if result else ""
        )
        return name, _object(arguments), text, failed
    if kind == "web_search":
        return "WebSearch", {"query": text_of(item.get("query"))}, "Web search completed.", failed
    if kind == "todo_list":
        todos = [
            {
                "content": text_of(entry.get("text")),
                "status": "completed" if entry.get("completed") else "pending",
                "activeForm": text_of(entry.get("text")),
            }
            for entry in item.get("items") or []
            if isinstance(entry, dict)
        ]
        return "TodoWrite", {"todos": todos}, "Plan updated.", failed
    return None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {} if value is None else {"arguments": value}
