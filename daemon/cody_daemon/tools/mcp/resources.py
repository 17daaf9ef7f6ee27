"""The model's tools for MCP resources: `listMcpResources {server?, cursor?}`,
`listMcpResourceTemplates {server?}` and `readMcpResource {server, uri}`.

Tools are shared daemon-wide but MCP servers belong to a session, so these are built per
session around that session's manager (`McpSessionManager.session_tools()` adds them when a
server offering resources runs). None of them asks (they only read: docs/protocol.md
"Approvals"). Invariants:

- a listing without `server` covers every running server that offers resources (each one
  paged through up to `MAX_PAGES`); a server that fails is named with why, the others are
  still listed; `cursor` pages one server's listing and so needs `server`;
- a listing is JSON text: `{resources: [{server, uri, name, title?, mimeType?, description?,
  size?}], nextCursor?, failed?: [{server, error}]}` (templates: `uriTemplate`);
- a read returns text contents as they are (several are separated by a `[uri]` header line),
  images as images for the model (as tool results' are), other binary contents as a
  one-line description;
- an unknown server, a server without resources or a server error raises ToolError saying
  which and why; the output is capped at `MAX_OUTPUT_CHARS`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from cody_protocol.content import (
    ContentToolCallContent,
    ImageContent,
    TextContent,
    ToolCallContent,
)
from pydantic import BaseModel, ConfigDict, Field

from ...core.history import ImagePart
from ...core.image_rules import image_type
from ..base import Tool, ToolContext, ToolError, ToolFacts, ToolResult
from .results import b64_size, cap_text

__all__ = [
    "MAX_PAGES",
    "SESSION_TOOL_CLASSES",
    "ListMcpResourceTemplatesTool",
    "ListMcpResourcesTool",
    "McpResources",
    "ReadMcpResourceTool",
    "resource_text",
]

MAX_PAGES = 20


class McpResources(Protocol):
    """What the tools need from a session's MCP manager."""

    def resource_servers(self) -> list[str]:
        """The servers that run (or can be restarted) and offer resources."""
        ...

    async def read_resource(self, server: str, uri: str) -> Any:
        """The server's `ReadResourceResult`; raises ToolError."""
        ...

    async def list_resources(self, server: str, cursor: str | None) -> Any:
        """One page: the server's `ListResourcesResult`; raises ToolError."""
        ...

    async def list_resource_templates(self, server: str, cursor: str | None) -> Any:
        """One page: the server's `ListResourceTemplatesResult`; raises ToolError."""
        ...


def _servers_line(resources: McpResources) -> str:
    return ", ".join(resources.resource_servers()) or "none"


class ListMcpResourcesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    server: str | None = Field(
        default=None, description="Only this MCP server's resources (default: every server's)."
    )
    cursor: str | None = Field(
        default=None,
        description="The nextCursor of the previous page of the same server (needs server).",
    )


class ListMcpResourcesTool(Tool[ListMcpResourcesArgs]):
    name = "listMcpResources"
    kind = "read"
    facts = ToolFacts(changes="nothing")
    args_model = ListMcpResourcesArgs

    def __init__(self, resources: McpResources) -> None:
        self._resources = resources
        self.description = (
            "List the resources (files, documents, records) the session's MCP servers expose, "
            "with their URIs; read one with readMcpResource. Servers with resources: "
            f"{_servers_line(resources)}."
        )

    def title(self, args: ListMcpResourcesArgs) -> str:
        return f"List the resources of {args.server}" if args.server else "List MCP resources"

    async def run(self, args: ListMcpResourcesArgs, ctx: ToolContext) -> ToolResult:
        listing = await _listing(
            self._resources, args.server, args.cursor, "resources", _resource_entry
        )
        return ToolResult(output=cap_text(json.dumps(listing, ensure_ascii=False, indent=1)))


class ListMcpResourceTemplatesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    server: str | None = Field(
        default=None,
        description="Only this MCP server's resource templates (default: every server's).",
    )


class ListMcpResourceTemplatesTool(Tool[ListMcpResourceTemplatesArgs]):
    name = "listMcpResourceTemplates"
    kind = "read"
    facts = ToolFacts(changes="nothing")
    args_model = ListMcpResourceTemplatesArgs

    def __init__(self, resources: McpResources) -> None:
        self._resources = resources
        self.description = (
            "List the resource templates of the session's MCP servers: URI patterns "
            "(RFC 6570, such as file:///{path}) to fill in and read with readMcpResource. "
            f"Servers with resources: {_servers_line(resources)}."
        )

    def title(self, args: ListMcpResourceTemplatesArgs) -> str:
        what = f" of {args.server}" if args.server else ""
        return f"List the MCP resource templates{what}"

    async def run(self, args: ListMcpResourceTemplatesArgs, ctx: ToolContext) -> ToolResult:
        listing = await _listing(
            self._resources, args.server, None, "resourceTemplates", _template_entry
        )
        return ToolResult(output=cap_text(json.dumps(listing, ensure_ascii=False, indent=1)))


class ReadMcpResourceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    server: str = Field(min_length=1, description="Name of the MCP server that has the resource.")
    uri: str = Field(min_length=1, description="URI of the resource, as the server lists it.")


class ReadMcpResourceTool(Tool[ReadMcpResourceArgs]):
    name = "readMcpResource"
    kind = "read"
    facts = ToolFacts(changes="nothing")
    args_model = ReadMcpResourceArgs

    def __init__(self, resources: McpResources) -> None:
        self._resources = resources
        self.description = (
            "Read a resource (a file, document or record an MCP server exposes) by its URI "
            "(listMcpResources lists them). Returns its text; images are shown to you, other "
            f"binary contents described. Servers with resources: {_servers_line(resources)}."
        )

    def title(self, args: ReadMcpResourceArgs) -> str:
        return f"Read {args.uri} from {args.server}"

    async def run(self, args: ReadMcpResourceArgs, ctx: ToolContext) -> ToolResult:
        result = await self._resources.read_resource(args.server, args.uri)
        text, images = resource_text(result.contents)
        content: list[ToolCallContent] = [ContentToolCallContent(content=TextContent(text=text))]
        content += [
            ContentToolCallContent(content=ImageContent(data=image.data, mime_type=image.mime_type))
            for image in images
        ]
        return ToolResult(
            output=text,
            raw_output={"server": args.server, "uri": args.uri},
            content=content if images else [],
            images=images,
        )


def resource_text(contents: Sequence[Any]) -> tuple[str, list[ImagePart]]:
    """The text of a resource's contents, and its images (see the module docstring)."""
    parts: list[str] = []
    images: list[ImagePart] = []
    for item in contents:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            body = text
        else:
            blob: str = item.blob
            mime = item.mime_type or "application/octet-stream"
            accepted = image_type(mime)
            if accepted is not None:
                images.append(
                    ImagePart(image_url=f"data:{accepted};base64,{''.join(blob.split())}")
                )
                body = f"[image {len(images)}: {accepted}, {b64_size(blob):,} bytes]"
            else:
                body = f"[binary resource: {mime}, {b64_size(blob):,} bytes]"
        parts.append(f"[{item.uri}]\n{body}" if len(contents) > 1 else body)
    text = "\n\n".join(parts) if parts else "(the resource is empty)"
    return cap_text(text), images


async def _listing(
    resources: McpResources,
    server: str | None,
    cursor: str | None,
    key: str,
    entry: Any,
) -> dict[str, Any]:
    """`{key: [...], nextCursor?, failed?}` for one server's page or every server's list."""
    fetch = resources.list_resources if key == "resources" else resources.list_resource_templates
    attribute = "resources" if key == "resources" else "resource_templates"
    if server is not None:
        page = await fetch(server, cursor)
        listing: dict[str, Any] = {key: [entry(server, item) for item in getattr(page, attribute)]}
        if page.next_cursor:
            listing["nextCursor"] = page.next_cursor
        return listing
    if cursor is not None:
        raise ToolError("cursor pages one server's listing: give the server it came from too")
    items: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    for name in resources.resource_servers():
        try:
            page_cursor: str | None = None
            for _ in range(MAX_PAGES):
                page = await fetch(name, page_cursor)
                items.extend(entry(name, item) for item in getattr(page, attribute))
                page_cursor = page.next_cursor
                if not page_cursor:
                    break
        except ToolError as exc:
            failed.append({"server": name, "error": exc.message})
    listing = {key: items}
    if failed:
        listing["failed"] = failed
    return listing


def _resource_entry(server: str, resource: Any) -> dict[str, Any]:
    entry = {"server": server, "uri": str(resource.uri), "name": resource.name}
    return _optional(entry, resource, ("title", "mime_type", "description", "size"))


def _template_entry(server: str, template: Any) -> dict[str, Any]:
    entry = {"server": server, "uriTemplate": template.uri_template, "name": template.name}
    return _optional(entry, template, ("title", "mime_type", "description"))


def _optional(entry: dict[str, Any], item: Any, names: tuple[str, ...]) -> dict[str, Any]:
    for name in names:
        value = getattr(item, name, None)
        if value is not None:
            entry["mimeType" if name == "mime_type" else name] = value
    return entry


SESSION_TOOL_CLASSES: tuple[type[Tool[Any]], ...] = (
    ListMcpResourcesTool,
    ListMcpResourceTemplatesTool,
    ReadMcpResourceTool,
)
"""The tools a session's MCP manager adds besides the servers' own (their names are
`tools/mcp.SESSION_TOOLS`; their facts join the registry's: `ToolRegistry.facts`)."""
