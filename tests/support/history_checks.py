"""Independent checks of unified messages against the raw session files they came from.

`expected_messages(path, format)` counts, straight from the raw lines, how many unified
messages a file must give (so a parser that drops a line fails); `check_conversation(...)`
checks the invariants a reader relies on: every message validates against the protocol
model, every tool call has exactly one result with its id, every raw text and tool call of
the file is present.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from cody_protocol.history import UnifiedMessage

__all__ = ["check_conversation", "expected_messages", "raw_lines", "texts_of", "tool_ids"]

_CODEX_ITEMS = {
    "reasoning",
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "function_call_output",
    "custom_tool_call_output",
}
_EXEC_TOOLS = {"command_execution", "file_change", "mcp_tool_call", "web_search", "todo_list"}


def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _content_present(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content)
    return isinstance(content, list) and len(content) > 0


def expected_messages(path: Path, format_name: str) -> int:
    lines = raw_lines(path)
    if format_name == "codex-rollout":
        count = 0
        for line in lines:
            payload = line.get("payload") or {}
            if line.get("type") == "compacted":
                count += 1
            elif line.get("type") == "response_item":
                kind = payload.get("type")
                if kind == "message" and payload.get("content") or kind in _CODEX_ITEMS:
                    count += 1
                elif kind == "web_search_call":
                    count += 2
        return count
    if format_name == "codex-exec-json":
        count = 0
        for line in lines:
            if line.get("type") == "item.completed":
                count += 2 if line["item"]["type"] in _EXEC_TOOLS else 1
            elif line.get("type") in ("turn.failed", "error"):
                count += 1
        return count
    ids = {
        (line.get("message") or {}).get("id") or line.get("uuid")
        for line in lines
        if line.get("type") == "assistant"
    }
    return len(ids) + sum(_claude_message_line(line, format_name) for line in lines)


def _claude_message_line(line: dict[str, Any], format_name: str) -> bool:
    """A Claude Code line (not an assistant part) that is a message of its own."""
    kind = line.get("type")
    if kind == "user":
        return _content_present((line.get("message") or {}).get("content"))
    if kind == "system":
        if line.get("subtype") == "compact_boundary":
            return True
        return format_name == "claude-session" and bool(str(line.get("content") or "").strip())
    if kind == "result":
        return bool(line.get("is_error") or line.get("subtype") != "success")
    return False


def texts_of(messages: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for message in messages:
        for block in message["content"]:
            if block["type"] == "text":
                parts.append(block["text"])
            elif block["type"] == "thinking":
                parts.append(block["thinking"])
    return "\n".join(parts)


def tool_ids(messages: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str]]:
    uses: Counter[str] = Counter()
    results: Counter[str] = Counter()
    for message in messages:
        for block in message["content"]:
            if block["type"] == "tool_use":
                uses[block["id"]] += 1
            elif block["type"] == "tool_result":
                results[block["tool_use_id"]] += 1
    return uses, results


def check_conversation(messages: list[dict[str, Any]], path: Path, format_name: str) -> None:
    """Every message valid, nothing lost, every call answered once, raw texts present."""
    for message in messages:
        UnifiedMessage.model_validate(message)
        assert message["content"], message
        assert message["source"]["format"] == format_name
    assert len(messages) == expected_messages(path, format_name), (
        f"{path.name}: {len(messages)} messages, the raw file has {expected_messages(path, format_name)}"
    )
    uses, results = tool_ids(messages)
    assert all(count == 1 for count in uses.values()), uses
    assert dict(results) == dict(uses), f"calls {dict(uses)} vs results {dict(results)}"
    text = texts_of(messages)
    for line in raw_lines(path):
        for raw in _raw_texts(line):
            assert raw in text, f"{path.name}: text {raw[:60]!r} is missing"


def _raw_texts(line: dict[str, Any]) -> list[str]:
    payload = line.get("payload")
    if isinstance(payload, dict) and payload.get("type") == "message":
        return [p["text"] for p in payload.get("content") or [] if p.get("text")]
    message = line.get("message")
    if line.get("type") in ("user", "assistant") and isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, str):
            return [content]
        return [
            p.get("text") or p.get("thinking")
            for p in content or []
            if p.get("type") in ("text", "thinking") and (p.get("text") or p.get("thinking"))
        ]
    item = line.get("item")
    if line.get("type") == "item.completed" and item.get("type") in ("agent_message", "reasoning"):
        return [item["text"]] if item.get("text") else []
    return []
