"""`readMcpResource {server, uri}`: the contents of a resource of one of the session's MCP servers.

Tools are shared daemon-wide but MCP servers belong to a session, so this tool is built per
session around that session's manager (`McpSessionManager.session_tools()` adds it). Reads need
no approval (docs/protocol.md "Approvals"). Invariants: text contents are returned as they are
(several are separated by a `[uri]` header line); binary contents become a one-line
description; an unknown or failed server, or a server error, raises ToolError saying which and
why.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..base import Tool, ToolContext, ToolResult

__all__ = ["McpResourceReader", "ReadMcpResourceArgs", "ReadMcpResourceTool"]


class McpResourceReader(Protocol):
    """What the tool needs from a session's MCP manager."""

    def server_names(self) -> list[str]: ...

    async def read_resource(self, server: str, uri: str) -> str:
        """The resource's text; raises ToolError when it cannot be read."""
        ...


class ReadMcpResourceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    server: str = Field(min_length=1, description="Name of the MCP server that has the resource.")
    uri: str = Field(min_length=1, description="URI of the resource, as the server lists it.")


class ReadMcpResourceTool(Tool[ReadMcpResourceArgs]):
    name = "readMcpResource"
    kind = "read"
    requires_approval = False
    args_model = ReadMcpResourceArgs

    def __init__(self, reader: McpResourceReader) -> None:
        self._reader = reader
        names = ", ".join(reader.server_names()) or "none"
        self.description = (
            "Read a resource (a file, document or record an MCP server exposes) by its URI. "
            f"Returns its text; binary resources are described, not returned. Servers: {names}."
        )

    def title(self, args: ReadMcpResourceArgs) -> str:
        return f"Read {args.uri} from {args.server}"

    async def run(self, args: ReadMcpResourceArgs, ctx: ToolContext) -> ToolResult:
        text = await self._reader.read_resource(args.server, args.uri)
        return ToolResult(output=text, raw_output={"server": args.server, "uri": args.uri})
