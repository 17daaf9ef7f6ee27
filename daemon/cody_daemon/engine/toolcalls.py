"""Describing tool calls for clients (title, kind, raw input), live and on replay."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from cody_protocol.updates import ToolKind
from pydantic import BaseModel

from ..tools.base import GrantKey, Tool, ToolArgumentError, ToolContext, ToolError, ToolResult
from ..tools.registry import ToolRegistry

__all__ = [
    "LiveOutput",
    "argument_problem",
    "DescribedCall",
    "describe_call",
    "describe_grant",
    "error_result",
    "text_content",
    "wire_raw_output",
]

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


def text_content(text: str) -> list[ToolCallContent]:
    return [ContentToolCallContent(content=TextContent(text=text))]


def describe_call(registry: ToolRegistry, name: str, arguments: str) -> DescribedCall:
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
        tool=tool, title=tool.title(args), kind=tool.kind, raw_input=raw, args=args, error=None
    )


def argument_problem(tool: Tool[Any], args: BaseModel, ctx: ToolContext) -> str | None:
    """Why the call's arguments cannot even be checked by policy, or None (issue 8.10).

    The policy hooks resolve paths; a value the OS refuses (a NUL byte in a path) must fail
    this call only, as a tool error the model can read, never the whole turn.
    """
    try:
        tool.grant_key(args, ctx)
        tool.sandbox_check(args, ctx)
        tool.runs_unsandboxed(args, ctx)
    except ToolError as exc:
        return exc.message
    except ValueError as exc:
        text = str(exc)
        if "null byte" in text or "null character" in text:
            return f"invalid arguments for {tool.name}: a path must not contain a NUL byte"
        return f"invalid arguments for {tool.name}: {text}"
    return None


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
