"""Describing tool calls for clients (title, kind, raw input), live and on replay."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from cody_protocol.updates import ToolKind
from pydantic import BaseModel

from ..tools.base import Tool, ToolArgumentError
from ..tools.registry import ToolRegistry

__all__ = ["DescribedCall", "describe_call", "text_content"]


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
