"""Describing tool calls for clients (title, kind, raw input), live and on replay."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_protocol.content import (
    ContentToolCallContent,
    DiffToolCallContent,
    TextContent,
    ToolCallContent,
)
from cody_protocol.updates import ToolCallLocation, ToolKind
from pydantic import BaseModel

from ..tools.base import GrantKey, Tool, ToolArgumentError, ToolResult
from ..tools.registry import ToolRegistry

__all__ = [
    "DISPLAY_CONTENT_MAX_CHARS",
    "LiveOutput",
    "DescribedCall",
    "call_display",
    "describe_call",
    "describe_grant",
    "error_result",
    "text_content",
    "wire_raw_output",
]

logger = logging.getLogger(__name__)

DISPLAY_CONTENT_MAX_CHARS = 1_000_000
"""A call's display content (diffs of whole files) larger than this is not kept for the
replay; the replay then shows the output text."""

_LIVE_OUTPUT_TAIL = 8192
_LIVE_OUTPUT_INTERVAL_S = 0.1


@dataclass(slots=True, kw_only=True)
class DescribedCall:
    tool: Tool[Any] | None
    title: str
    kind: ToolKind
    raw_input: Any
    args: BaseModel | None
    error: str | None
    """Why the call cannot run (unknown tool, bad arguments), or None."""
    locations: list[ToolCallLocation] = field(default_factory=list)
    """The files the call will touch (`Tool.locations`; empty unless a cwd was given)."""


def text_content(text: str) -> list[ToolCallContent]:
    return [ContentToolCallContent(content=TextContent(text=text))]


def describe_call(
    registry: ToolRegistry, name: str, arguments: str, *, cwd: Path | None = None
) -> DescribedCall:
    """Title, kind and parsed arguments of a call; with `cwd`, also the files it will touch."""
    tool = registry.get(name)
    try:
        raw: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        return DescribedCall(
            tool=tool,
            title=name,
            kind=tool.kind if tool else "other",
            raw_input=arguments,
            args=None,
            error=f"arguments for {name} are not valid JSON: {exc.msg} at position {exc.pos}",
        )
    if tool is None:
        known = ", ".join(registry.names())
        return DescribedCall(
            tool=None,
            title=name,
            kind="other",
            raw_input=raw,
            args=None,
            error=f"unknown tool '{name}'; available tools: {known}",
        )
    try:
        args = tool.parse(raw)
    except ToolArgumentError as exc:
        return DescribedCall(
            tool=tool, title=name, kind=tool.kind, raw_input=raw, args=None, error=exc.message
        )
    return DescribedCall(
        tool=tool,
        title=tool.title(args),
        kind=tool.kind,
        raw_input=raw,
        args=args,
        error=None,
        locations=_locations(tool, args, cwd) if cwd is not None else [],
    )


def _locations(tool: Tool[Any], args: BaseModel, cwd: Path) -> list[ToolCallLocation]:
    try:
        return list(tool.locations(args, cwd))
    except Exception:  # a display hint: never a reason for the call to fail
        logger.warning("%s: could not compute the call's locations", tool.name, exc_info=True)
        return []


def call_display(
    *,
    title: str | None,
    kind: str | None,
    locations: list[ToolCallLocation],
    content: list[ToolCallContent],
    plan: list[tuple[str, str]] | None,
) -> dict[str, Any]:
    """What `FunctionCallOutputItem.display` keeps of a call as the client saw it."""
    display: dict[str, Any] = {}
    if title is not None:
        display["title"] = title
    if kind is not None:
        display["kind"] = kind
    if locations:
        display["locations"] = [loc.wire() for loc in locations]
    if _content_chars(content) <= DISPLAY_CONTENT_MAX_CHARS:
        display["content"] = [block.wire() for block in content]
    if plan is not None:
        display["plan"] = [{"content": step, "status": status} for step, status in plan]
    return display


def _content_chars(content: list[ToolCallContent]) -> int:
    total = 0
    for block in content:
        if isinstance(block, DiffToolCallContent):
            total += len(block.old_text or "") + len(block.new_text) + len(block.path)
        else:
            total += len(block.content.model_dump_json())
    return total


def error_result(message: str, raw_output: dict[str, Any] | None = None) -> ToolResult:
    return ToolResult(
        output=json.dumps({"error": message}),
        success=False,
        raw_output=raw_output,
        content=text_content(message),
    )


def wire_raw_output(output: str, raw_output: dict[str, Any] | None) -> dict[str, Any]:
    """`rawOutput` for clients: the tool's metadata plus the text the model received."""
    return {**(raw_output or {}), "output": output}


def describe_grant(key: GrantKey) -> str:
    if key and key[0] == "exec":
        return "the command `" + " ".join(key[1:]) + "`"
    if key and key[0] == "paths":
        return "changes to " + ", ".join(key[1:])
    if len(key) >= 2:
        return f"{key[1]} with these exact arguments"
    return "this call"


class LiveOutput:
    """Throttles a running tool's output into `tool_call_update`s (the tail, every 100 ms)."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self._send = send
        self._tail = ""
        self._last = 0.0
        self._dirty = False
        self._closed = False

    def add(self, chunk: str) -> None:
        if self._closed:
            return
        self._tail = (self._tail + chunk)[-_LIVE_OUTPUT_TAIL:]
        self._dirty = True
        now = time.monotonic()
        if now - self._last >= _LIVE_OUTPUT_INTERVAL_S:
            self._last = now
            self._dirty = False
            self._send(self._tail)

    def close(self) -> None:
        self._closed = True
