"""Claude Code session files: `<config dir>/projects/<encoded cwd>/<session id>.jsonl`.

One line per message part: `user` / `assistant` (Anthropic-shaped `message`), `system`,
plus bookkeeping (`summary`, `attachment`, `queue-operation`, `file-history-snapshot`, ...).
An assistant message written over several lines (one per content block, same `message.id`)
becomes one message; its usage is counted once. `isMeta` lines and command echoes
(`<command-name>`, `<local-command-stdout>`) are flagged `isMeta`; `isSidechain` lines
(sub-agents) `isSidechain`; the `compact_boundary` line and the summary after it
(`isCompactSummary`) `compaction`.
"""

from __future__ import annotations

from typing import Any

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

__all__ = ["COMMAND_PREFIXES", "ClaudeCodeParser", "claude_blocks", "claude_usage"]

COMMAND_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<system-reminder>",
)
"""User-role texts Claude Code writes itself (flagged `isMeta`, never a title)."""

_IGNORED = frozenset(
    {
        "attachment",
        "queue-operation",
        "last-prompt",
        "mode",
        "file-history-snapshot",
        "progress",
        "permission-mode",
        "agent-name",
        "tag",
        "pr-link",
    }
)


def claude_usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, dict):
        return None
    cache_read = raw.get("cache_read_input_tokens") or 0
    cache_write = raw.get("cache_creation_input_tokens") or 0
    base = raw.get("input_tokens") or 0
    total_input = sum(v for v in (base, cache_read, cache_write) if isinstance(v, int))
    return usage(input_tokens=total_input, cached=cache_read, output=raw.get("output_tokens"))


def _result_content(value: Any) -> Any:
    if isinstance(value, list):
        blocks = []
        for part in value:
            if isinstance(part, dict) and part.get("type") == "text":
                blocks.append(text_block(text_of(part.get("text"))))
            elif isinstance(part, dict) and part.get("type") == "image":
                image = _image(part)
                if image is not None:
                    blocks.append(image)
        return blocks
    return value if isinstance(value, str) else "" if value is None else str(value)


def _image(part: dict[str, Any]) -> dict[str, Any] | None:
    source = part.get("source")
    if not isinstance(source, dict):
        return None
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return image_block(source["url"])
    if isinstance(source.get("data"), str):
        return image_block(source["data"], text_of(source.get("media_type")) or "image/png")
    return None


def claude_blocks(content: Any) -> list[dict[str, Any]]:
    """Anthropic content (a string or blocks) as unified blocks; unknown block types dropped."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    blocks: list[dict[str, Any]] = []
    if not isinstance(content, list):
        return blocks
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            blocks.append(text_block(text_of(part.get("text"))))
        elif kind == "thinking":
            blocks.append(thinking_block(text_of(part.get("thinking"))))
        elif kind == "redacted_thinking":
            blocks.append(thinking_block(""))
        elif kind in ("tool_use", "server_tool_use"):
            tool_input = part.get("input")
            blocks.append(
                tool_use_block(
                    text_of(part.get("id")),
                    text_of(part.get("name")),
                    tool_input if isinstance(tool_input, dict) else {},
                )
            )
        elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            blocks.append(
                tool_result_block(
                    text_of(part.get("tool_use_id")),
                    _result_content(part.get("content")),
                    is_error=part.get("is_error") is True,
                )
            )
        elif kind == "image":
            image = _image(part)
            if image is not None:
                blocks.append(image)
        elif kind == "document":
            title = text_of(part.get("title")) or "document"
            blocks.append(text_block(f"[{title} attached]"))
    return blocks


def _is_command_echo(blocks: list[dict[str, Any]]) -> bool:
    text = "".join(b["text"] for b in blocks if b["type"] == "text").lstrip()
    return text.startswith(COMMAND_PREFIXES)


class ClaudeCodeParser(Parser):
    agent = "claude"
    format = "claude-session"

    def __init__(self) -> None:
        super().__init__()
        self._assistant: dict[str, Msg] = {}
        """Assistant messages of this chunk by message id (split lines merge into them)."""
        self._last_was_assistant = False

    def boundary(self, obj: dict[str, Any]) -> bool:
        """A prompt the user typed (not a tool result, summary, command echo or sub-agent)."""
        if obj.get("type") != "user" or obj.get("isMeta") or obj.get("isSidechain"):
            return False
        if obj.get("isCompactSummary"):
            return False
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            if any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
                return False
            content = "".join(
                text_of(p.get("text"))
                for p in content
                if isinstance(p, dict) and p.get("type") == "text"
            )
        return isinstance(content, str) and not content.lstrip().startswith(COMMAND_PREFIXES)

    def settled(self) -> bool:
        return not self._last_was_assistant

    def end_chunk(self, out: list[Msg], *, eof: bool) -> None:
        self._assistant.clear()

    def feed(self, line: int, obj: dict[str, Any], out: list[Msg]) -> bool:
        kind = obj.get("type")
        self._last_was_assistant = kind == "assistant"
        if self.session_id is None and isinstance(obj.get("sessionId"), str):
            self.session_id = obj["sessionId"]
        if self.cwd is None and isinstance(obj.get("cwd"), str):
            self.cwd = obj["cwd"]
        timestamp = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
        self.note_time(timestamp)
        if kind == "user":
            return self._user(line, timestamp, obj, out)
        if kind == "assistant":
            return self._assistant_line(
                line, timestamp, obj, out, sidechain=bool(obj.get("isSidechain"))
            )
        if kind == "system":
            return self._system(line, timestamp, obj, out)
        if kind in ("summary", "custom-title", "ai-title"):
            title = obj.get("summary") or obj.get("customTitle") or obj.get("aiTitle")
            if isinstance(title, str) and title and (kind != "summary" or self.title is None):
                self.title = title
            return True
        return kind in _IGNORED

    def _user(self, line: int, timestamp: str | None, obj: dict[str, Any], out: list[Msg]) -> bool:
        message = obj.get("message")
        if not isinstance(message, dict):
            return False
        blocks = claude_blocks(message.get("content"))
        if not blocks:
            return True
        uid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else None
        out.append(
            Msg(
                "user",
                blocks,
                line,
                timestamp,
                uid,
                is_meta=bool(obj.get("isMeta")) or _is_command_echo(blocks),
                is_sidechain=bool(obj.get("isSidechain")),
                compaction=bool(obj.get("isCompactSummary")),
                original=obj,
            )
        )
        return True

    def _assistant_line(
        self,
        line: int,
        timestamp: str | None,
        obj: dict[str, Any],
        out: list[Msg],
        *,
        sidechain: bool,
    ) -> bool:
        message = obj.get("message")
        if not isinstance(message, dict):
            return False
        blocks = claude_blocks(message.get("content"))
        message_id = text_of(message.get("id")) or text_of(obj.get("uuid"))
        spent = claude_usage(message.get("usage"))
        existing = self._assistant.get(message_id) if message_id else None
        if existing is not None:
            existing.content.extend(blocks)
            existing.extra_lines.append(obj)
            if spent is not None:
                existing.usage = spent
            return True
        msg = Msg(
            "assistant",
            blocks,
            line,
            timestamp,
            message_id or None,
            model=text_of(message.get("model")) or None,
            usage=spent,
            is_sidechain=sidechain,
            original=obj,
        )
        out.append(msg)
        if message_id:
            self._assistant[message_id] = msg
        return True

    def _system(
        self, line: int, timestamp: str | None, obj: dict[str, Any], out: list[Msg]
    ) -> bool:
        content = obj.get("content")
        if obj.get("subtype") == "compact_boundary":
            text = content if isinstance(content, str) and content else "Conversation compacted"
            out.append(
                Msg(
                    "system",
                    [text_block(text)],
                    line,
                    timestamp,
                    text_of(obj.get("uuid")) or None,
                    compaction=True,
                    original=obj,
                )
            )
            return True
        if isinstance(content, str) and content.strip():
            out.append(
                Msg(
                    "system",
                    [text_block(content)],
                    line,
                    timestamp,
                    text_of(obj.get("uuid")) or None,
                    is_meta=True,
                    original=obj,
                )
            )
        return True
