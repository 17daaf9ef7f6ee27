"""The requests Cody makes of a running MCP server: listings, the log level, a call's
deadline, and their failures in words (which server, what, why, and where to change the
limit).

Invariants: a tool call is cancelled (on the wire: `notifications/cancelled`) when it passes
the server's `tool_timeout_s`, not counting the time spent waiting for the user's answers to
the server's elicitations (`ClientFeatures.user_wait_s`, `eliciting`); every failure becomes
a ToolError naming the server.

This module imports the `mcp` SDK only inside functions.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, TypeVar

from ..base import ToolError
from .client_features import ClientFeatures
from .server_log import McpLevel
from .specs import McpServerSpec

if TYPE_CHECKING:
    from mcp.client.client import Client
    from mcp_types import Prompt
    from mcp_types import Tool as McpToolDef

__all__ = [
    "MAX_PAGES",
    "USER_WAIT_SLICE_S",
    "all_prompts",
    "all_tools",
    "request_error",
    "set_log_level",
    "timeout_error",
    "within_deadline",
]

log = logging.getLogger(__name__)
MAX_PAGES = 50
"""A listing stops after this many pages (a paginator that never ends cannot hang a start)."""

T = TypeVar("T")
USER_WAIT_SLICE_S = 1.0
"""How often a call waiting on the user checks its deadline again."""


async def within_deadline(
    call: asyncio.Future[T], spec: McpServerSpec, features: ClientFeatures, what: str
) -> T:
    """`call`'s result; cancelled past `tool_timeout_s` (see the module docstring)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + spec.tool_timeout_s
    waited = features.user_wait_s
    try:
        while True:
            remaining = deadline + (features.user_wait_s - waited) - loop.time()
            if features.eliciting:
                remaining = max(remaining, USER_WAIT_SLICE_S)
            if remaining <= 0:
                raise timeout_error(spec, what)
            done, _ = await asyncio.wait({call}, timeout=remaining)
            if call in done:
                return call.result()
    finally:
        if not call.done():
            call.cancel()
            await asyncio.wait({call})


def timeout_error(spec: McpServerSpec, what: str) -> ToolError:
    return ToolError(
        f"MCP server {spec.name!r} did not answer {what} within {spec.tool_timeout_s:g} s; if "
        f"it needs longer, raise tool_timeout_s in {spec.config_key}",
        raw_output={"timedOut": True, "timeoutS": spec.tool_timeout_s},
    )


def request_error(spec: McpServerSpec, reason: str | None, exc: Exception, what: str) -> ToolError:
    """`exc` (the SDK's) as a ToolError; `reason`: why the server stopped, when it did."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    name = spec.name
    if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
        return timeout_error(spec, what)
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        why = f": {reason}" if reason else ""
        return ToolError(f"MCP server {name!r} closed the connection during {what}{why}")
    if isinstance(exc, MCPError):
        return ToolError(f"MCP server {name!r} refused {what}: {exc.message}")
    return ToolError(f"MCP server {name!r} failed {what}: {type(exc).__name__}: {exc}")


async def all_tools(client: Client) -> list[McpToolDef]:
    tools: list[McpToolDef] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


async def all_prompts(client: Client) -> list[Prompt]:
    prompts: list[Prompt] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_prompts(cursor=cursor, cache_mode="refresh")
        prompts.extend(page.prompts)
        cursor = page.next_cursor
        if cursor is None:
            break
    return prompts


async def set_log_level(client: Client, level: McpLevel, server: str) -> None:
    """`logging/setLevel` (a server that refuses it still works)."""
    import mcp_types

    request = mcp_types.SetLevelRequest(params=mcp_types.SetLevelRequestParams(level=level))
    try:
        await client.session.send_request(request, mcp_types.EmptyResult)
    except Exception as exc:
        log.info("MCP server %s refused logging/setLevel: %s", server, exc)
