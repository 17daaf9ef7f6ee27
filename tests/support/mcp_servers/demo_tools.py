"""The demo MCP server shared by the stdio and HTTP scripts.

Tools: `add(a, b)`, `shout(text)`, `fail(message)` (always an error result),
`sleep(seconds)` (for tool timeouts), `pixel()` (an image), `stats()` (structured
content only), `crash(code)` (the server process exits at once: only for stdio), `unlock()`
(adds the tool `secret()` and sends `notifications/tools/list_changed`), `ask_name()` (asks the
user for a name and an age: elicitation). Resources:
`demo://greeting` (text) and `demo://blob` (binary).
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent
from pydantic import BaseModel, Field

GREETING = "Hello from the demo resource.\nSecond line."


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, description="Your age in years")


PIXEL_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def build_server() -> MCPServer:
    server = MCPServer("demo", log_level="WARNING")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Upper-case a text.")
    def shout(text: str) -> str:
        return text.upper() + "!"

    @server.tool(description="Always fails with the given message.")
    def fail(message: str) -> str:
        raise ToolError(f"failed on purpose: {message}")

    @server.tool(description="Sleep, then say how long.")
    async def sleep(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="A one-pixel image.")
    def pixel() -> CallToolResult:
        return CallToolResult(
            content=[ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")]
        )

    @server.tool(description="Structured statistics only.")
    def stats() -> CallToolResult:
        return CallToolResult(content=[], structured_content={"files": 3, "ok": True})

    @server.tool(description="Exit the server process at once with the given code.")
    def crash(code: int) -> str:
        print(f"demo: crashing with code {code} as asked", file=sys.stderr, flush=True)
        os._exit(code)

    def secret() -> str:
        return "the unlocked secret"

    @server.tool(description="Offer one more tool, secret, and say so (tools/list_changed).")
    async def unlock(ctx: Context) -> str:
        server.add_tool(secret, description="Only there after unlock.")
        await ctx.request_context.session.send_tool_list_changed()
        return "unlocked"

    @server.tool(description="Ask the user for their name and age.")
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", Person)
        if answer.action == "accept":
            return f"Hello {answer.data.name}, {answer.data.age}"
        return f"no answer ({answer.action})"

    @server.resource("demo://greeting", mime_type="text/plain")
    def greeting() -> str:
        return GREETING

    @server.resource("demo://blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\x01\x02\x03"

    return server
