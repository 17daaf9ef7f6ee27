"""`_cody/mcp/elicit`: an MCP server asks the user for input, through the client
(docs/protocol.md "Extensions", docs/mcp.md "Elicitation").

The daemon sends it to the client whose prompt is running, as it sends
`session/request_permission`; the client shows the server's message and form (or URL) and
answers with the user's choice. An error answer, a malformed answer or none within
`approval_timeout_s` never leaves the server waiting: they count as `decline` (the timeout as
`cancel`, and the request is withdrawn).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import WireModel

__all__ = ["CodyMcpElicitMeta", "McpElicitMeta", "McpElicitParams", "McpElicitResult"]

ElicitValue = str | int | float | bool | list[str] | None


class CodyMcpElicitMeta(WireModel):
    request_id: str | int
    """Repeats the JSON-RPC id, for clients (Neovim) that never see ids."""


class McpElicitMeta(WireModel):
    cody: CodyMcpElicitMeta


class McpElicitParams(WireModel):
    session_id: str
    server: str
    """The MCP server that asks (its name in the session)."""
    mode: Literal["form", "url"] = "form"
    """`form`: fill in `requestedSchema`; `url`: open `url` (and consent to it)."""
    message: str
    """What the server says it needs, to show the user (the client makes it inert)."""
    requested_schema: dict[str, Any] | None = None
    """`form`: MCP's restricted JSON Schema, an object of flat properties (string, number,
    integer, boolean, enums and string arrays), with `required`."""
    url: str | None = None
    elicitation_id: str | None = None
    tool_call_id: str | None = None
    """The tool call it happens during, when the daemon knows it."""
    meta: McpElicitMeta | None = Field(default=None, alias="_meta")


class McpElicitResult(WireModel):
    action: Literal["accept", "decline", "cancel"]
    """`accept`: the user submitted (or, for `url`, agreed to open the URL); `decline`: said
    no; `cancel`: dismissed without choosing."""
    content: dict[str, ElicitValue] | None = None
    """The form's values, with `accept` in `form` mode only."""
