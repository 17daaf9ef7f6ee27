"""`mcp__<server>__<tool>`: one tool of an MCP server, as a Cody tool.

Invariants:
- The advertised name matches `[A-Za-z0-9_-]{1,64}` (what the model APIs accept) and is unique
  within a session (`tool_name` takes the names already used).
- The advertised parameters are the server's `inputSchema` (forced to an object schema with
  `properties`); Cody only checks that the arguments are a JSON object: the server validates.
- The grant key is the default one: `("tool", name, canonical JSON of the arguments)`.
- Whether a call asks (`approval`): the server's `requires_approval` when set; else a tool
  the server annotates `readOnlyHint: true` (and not `destructiveHint: true`) does not ask,
  unless `trust_annotations = false`; every other tool asks. Permission rules still apply.
- A result is rendered by results.py (text, images for the model, the full content for the
  client); an `isError` result is a failed ToolResult with the server's text; a call that
  times out or cannot reach the server raises ToolError naming the server (the caller does
  that, see `McpToolCaller`).

This module does not import the `mcp` SDK at import time (it is heavy).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from ...core.tooling import ToolSpec
from ...policy.approval import Escalation
from ..base import (
    OWN_DEADLINE_MARGIN_S,
    Progress,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolFacts,
    ToolResult,
)
from .results import MAX_OUTPUT_CHARS, render_result

if TYPE_CHECKING:
    from mcp_types import CallToolResult, ToolAnnotations

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_OUTPUT_CHARS",
    "Approval",
    "McpTool",
    "McpToolArgs",
    "McpToolCaller",
    "approval_of",
    "tool_name",
]

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 8_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class Approval:
    requires_approval: bool
    read_only: bool
    """Trusted to only read (its annotations, believed): runs unasked like a read-only tool."""


def approval_of(
    requires_approval: bool | None, trust_annotations: bool, annotations: ToolAnnotations | None
) -> Approval:
    """Whether a server's tool asks (see the module docstring)."""
    hinted = (
        annotations is not None
        and annotations.read_only_hint is True
        and annotations.destructive_hint is not True
    )
    read_only = hinted and trust_annotations and requires_approval is not True
    if requires_approval is None:
        return Approval(requires_approval=not read_only, read_only=read_only)
    return Approval(requires_approval=requires_approval, read_only=read_only)


class McpToolArgs(BaseModel):
    """Any JSON object; the fields are the tool's arguments (`model_extra`)."""

    model_config = ConfigDict(extra="allow")

    def arguments(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class McpToolCaller(Protocol):
    """Calls one tool on a running server; raises ToolError (timeout, server gone, ...)."""

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        call_id: str | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> CallToolResult: ...


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """`mcp__<server>__<tool>`, made safe for model APIs and unique among `taken` (updated)."""
    full = f"mcp__{server}__{tool}"
    name = _UNSAFE.sub("_", full)
    if len(name) > MAX_NAME_CHARS or name in taken:
        digest = hashlib.sha256(full.encode()).hexdigest()
        for attempt in range(1000):
            suffix = "_" + (digest[:8] if attempt == 0 else f"{digest[:6]}{attempt}")
            candidate = name[: MAX_NAME_CHARS - len(suffix)] + suffix
            if candidate not in taken:
                name = candidate
                break
    taken.add(name)
    return name


class McpTool(Tool[McpToolArgs]):
    """A server's tool; built by the session's McpSessionManager once the server is ready."""

    kind = "other"
    args_model = McpToolArgs
    requires_approval: bool = True
    """The server's `requires_approval`, else its annotations (`approval_of`): the server's
    configuration may override what the facts would say."""

    def __init__(
        self,
        *,
        name: str,
        server: str,
        remote_name: str,
        description: str | None,
        input_schema: Mapping[str, Any],
        requires_approval: bool,
        caller: McpToolCaller,
        title: str | None = None,
        timeout_s: float | None = None,
        timeout_setting: str | None = None,
        read_only: bool = False,
    ) -> None:
        """`timeout_s`: the server's `tool_timeout_s`, enforced by the caller; the engine's
        limit is a backstop past it. `timeout_setting` names where a user changes it."""
        self.name = name
        self.server = server
        self.remote_name = remote_name
        text = (description or title or "").strip() or f"The {remote_name} tool"
        if len(text) > MAX_DESCRIPTION_CHARS:
            text = text[:MAX_DESCRIPTION_CHARS] + "..."
        self.description = f"{text}\n\n(Tool {remote_name!r} of the MCP server {server!r}.)"
        self.requires_approval = requires_approval
        self._schema = _object_schema(input_schema)
        self._caller = caller
        self._timeout_s = timeout_s
        self._timeout_setting = timeout_setting
        self.read_only = read_only
        """The server annotates the tool read-only and its annotations are trusted
        (`approval_of`): it runs unasked, as a call the sandbox contains."""
        self.facts = ToolFacts(changes="nothing" if read_only else "elsewhere")
        """From the server's annotations, when trusted (`approval_of`); otherwise it may
        change anything on the server's side."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name, description=self.description, parameters=copy.deepcopy(self._schema)
        )

    def parse(self, raw: Any) -> McpToolArgs:
        if raw is None or raw == "":
            raw = {}
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raise ToolArgumentError(
                    f"invalid arguments for {self.name}: not a JSON object"
                ) from None
        if not isinstance(raw, dict):
            raise ToolArgumentError(
                f"invalid arguments for {self.name}: expected a JSON object, "
                f"got {type(raw).__name__}"
            )
        return McpToolArgs.model_validate(raw)

    def title(self, args: McpToolArgs) -> str:
        return f"{self.server}: {self.remote_name}"

    def escalation(self, args: McpToolArgs, ctx: ToolContext) -> tuple[Escalation, str] | None:
        if self.read_only or not self.requires_approval:
            return None
        return "mcp", f"{self.server}'s tool {self.remote_name} runs outside Cody's sandbox"

    def time_limit_s(self, args: McpToolArgs, ctx: ToolContext) -> float:
        """`[tools.<name>] timeout_s` when set, else the server's own limit plus a margin."""
        config = ctx.tool_config.get(self.name)
        if self._timeout_s is None or (config is not None and config.timeout_s is not None):
            return super().time_limit_s(args, ctx)
        return self._timeout_s + OWN_DEADLINE_MARGIN_S

    def time_limit_setting(self) -> str:
        own = super().time_limit_setting()
        if self._timeout_setting is None:
            return own
        return f"{own} (or tool_timeout_s in {self._timeout_setting})"

    async def run(self, args: McpToolArgs, ctx: ToolContext) -> ToolResult:
        result = await self._caller.call_tool(
            self.remote_name, args.arguments(), call_id=ctx.call_id, on_progress=ctx.on_progress
        )
        rendered = render_result(result)
        return ToolResult(
            output=rendered.text,
            success=not result.is_error,
            raw_output={
                "server": self.server,
                "tool": self.remote_name,
                "isError": result.is_error,
            },
            content=rendered.content,
            images=rendered.images,
        )


def _object_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The server's schema as an object schema (model APIs require one at the root)."""
    result = copy.deepcopy(dict(schema))
    result.pop("title", None)
    if result.get("type", "object") != "object":
        result = {}  # a non-object root (allowed from MCP 2026-07-28): accept any object
    result["type"] = "object"
    result.setdefault("properties", {})
    return result
