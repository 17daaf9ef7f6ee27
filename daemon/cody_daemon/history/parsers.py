"""Which parser reads which format, and telling formats apart by content."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InvalidParams, Issue
from .base import Parser
from .claude_code import ClaudeCodeParser
from .claude_stream import ClaudeStreamParser
from .codex_exec import CodexExecParser
from .codex_rollout import CodexRolloutParser
from .cody_session import CodySessionParser
from .lines import SessionFileReader, decode_line

__all__ = ["AGENT_OF", "PARSERS", "detect_format", "new_parser"]

PARSERS: dict[str, Callable[[], Parser]] = {
    "codex-rollout": CodexRolloutParser,
    "codex-exec-json": CodexExecParser,
    "claude-session": ClaudeCodeParser,
    "claude-stream-json": ClaudeStreamParser,
    "cody-session": CodySessionParser,
}
AGENT_OF = {name: factory().agent for name, factory in PARSERS.items()}

_DETECT_LINES = 64
_DETECT_BYTES = 8 * 1024 * 1024
_EXEC_EVENTS = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
    }
)
_CODEX_TYPES = frozenset({"response_item", "event_msg", "turn_context", "compacted"})
_CLAUDE_SESSION_TYPES = frozenset(
    {"summary", "queue-operation", "file-history-snapshot", "custom-title"}
)
_STREAM_TYPES = frozenset({"stream_event", "result", "control_request", "control_response"})


def new_parser(format_name: str) -> Parser:
    return PARSERS[format_name]()


def _format_of(obj: dict[str, Any]) -> str | None:
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind == "session_meta" and isinstance(payload, dict):
        cody = payload.get("originator") == "cody-daemon" or "cliVersion" in payload
        return "cody-session" if cody else "codex-rollout"
    if kind in _CODEX_TYPES and "payload" in obj:
        return "codex-rollout"
    if kind in _EXEC_EVENTS:
        return "codex-exec-json"
    if "sessionId" in obj or "parentUuid" in obj or kind in _CLAUDE_SESSION_TYPES:
        return "claude-session"
    if kind in _STREAM_TYPES or ("session_id" in obj and kind in ("system", "assistant", "user")):
        return "claude-stream-json"
    if "record_type" in obj or ("id" in obj and "timestamp" in obj and "type" not in obj):
        return "codex-rollout"
    return None


def detect_format(reader: SessionFileReader) -> str:
    """The format of an open file, from its first lines; InvalidParams when none fits."""
    for line in reader.head(_DETECT_BYTES):
        if line.number > _DETECT_LINES:
            break
        obj = decode_line(line.raw)
        if obj is not None:
            found = _format_of(obj)
            if found is not None:
                return found
    raise unrecognised(reader.path)


def unrecognised(path: Path) -> InvalidParams:
    return InvalidParams(
        f"{path} is not a session file Cody can read: its first lines are not Codex, "
        "Claude Code or Cody JSONL.",
        [
            Issue(
                key="path", message="not a Codex, Claude Code or Cody session file", value=str(path)
            )
        ],
    )
