"""The parsers' working form of a unified message, and its wire form.

Parsers build `Msg` objects (plain slots, cheap: a 100 MB file makes hundreds of thousands)
and only the messages of the page being answered become wire dicts (`to_wire`), in exactly
the shape of `cody_protocol.history.UnifiedMessage` (a unit test validates them against it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "Msg",
    "SourceInfo",
    "image_block",
    "sort_key",
    "text_block",
    "thinking_block",
    "tool_result_block",
    "tool_use_block",
    "usage",
]


@dataclass(frozen=True, slots=True)
class SourceInfo:
    agent: str
    format: str
    path: str
    session_id: str | None


@dataclass(slots=True)
class Msg:
    role: str
    content: list[dict[str, Any]]
    line: int
    timestamp: str | None = None
    id: str | None = None
    model: str | None = None
    usage: dict[str, int] | None = None
    is_meta: bool = False
    is_sidechain: bool = False
    compaction: bool = False
    original: Any = None
    extra_lines: list[Any] = field(default_factory=list)
    """Raw lines merged into this message after the first (Claude Code split messages)."""
    size: int = 0
    """Bytes of the line it came from (pages are bounded in bytes too)."""

    @property
    def text(self) -> str:
        return "".join(block["text"] for block in self.content if block["type"] == "text")

    def to_wire(self, source: SourceInfo, *, include_original: bool) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "source": {
                "agent": source.agent,
                "format": source.format,
                "path": source.path,
                "line": self.line,
            },
        }
        if source.session_id:
            wire["source"]["sessionId"] = source.session_id
        if self.id is not None:
            wire["id"] = self.id
        if self.timestamp is not None:
            wire["timestamp"] = self.timestamp
        if self.model is not None:
            wire["model"] = self.model
        if self.usage is not None:
            wire["usage"] = self.usage
        if self.is_meta:
            wire["isMeta"] = True
        if self.is_sidechain:
            wire["isSidechain"] = True
        if self.compaction:
            wire["compaction"] = True
        if include_original and self.original is not None:
            wire["_original"] = (
                [self.original, *self.extra_lines] if self.extra_lines else self.original
            )
        return wire


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def thinking_block(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text}


def tool_use_block(call_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def tool_result_block(call_id: str, content: Any, *, is_error: bool) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}


def image_block(url_or_data: str, media_type: str | None = None) -> dict[str, Any]:
    """An image from a URL, a `data:` URL or base64 data with its media type."""
    if url_or_data.startswith("data:") and ";base64," in url_or_data:
        head, _, data = url_or_data.partition(";base64,")
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": head[5:] or None, "data": data},
        }
    if media_type is not None:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": url_or_data},
        }
    return {"type": "image", "source": {"type": "url", "url": url_or_data}}


def usage(
    *, input_tokens: Any = 0, cached: Any = 0, output: Any = 0, reasoning: Any = 0
) -> dict[str, int]:
    return {
        "input_tokens": _int(input_tokens),
        "cached_input_tokens": _int(cached),
        "output_tokens": _int(output),
        "reasoning_tokens": _int(reasoning),
    }


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def sort_key(timestamp: str | None) -> float | None:
    """Seconds since the epoch for an ISO-8601 timestamp, None when absent or unreadable."""
    if not timestamp or not isinstance(timestamp, str):
        return None
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return None
