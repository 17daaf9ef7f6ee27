"""Content blocks (ACP `ContentBlock`) and tool call content (ACP `ToolCallContent`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._base import WireModel

__all__ = [
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "ContentToolCallContent",
    "DiffToolCallContent",
    "EmbeddedResource",
    "ImageContent",
    "ResourceLink",
    "TerminalToolCallContent",
    "TextContent",
    "TextResourceContents",
    "ToolCallContent",
]


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    annotations: dict[str, Any] | None = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    uri: str | None = None


class AudioContent(WireModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str


class ResourceLink(WireModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


class TextResourceContents(WireModel):
    uri: str
    text: str
    mime_type: str | None = None


class BlobResourceContents(WireModel):
    uri: str
    blob: str
    mime_type: str | None = None


class EmbeddedResource(WireModel):
    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents


ContentBlock = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]


class ContentToolCallContent(WireModel):
    """A content block shown as a tool call's output."""

    type: Literal["content"] = "content"
    content: ContentBlock


class DiffToolCallContent(WireModel):
    """A file edit shown as a diff. `old_text` is absent for a new file."""

    type: Literal["diff"] = "diff"
    path: str
    old_text: str | None = None
    new_text: str


class TerminalToolCallContent(WireModel):
    """A terminal shown in the tool call, by id.

    Cody never asks the client to run anything (`terminal/create`): the id names the
    display-only terminal announced in the `tool_call`'s `_meta.terminal_info` (the Zed
    convention), and the command's output reaches it through `_meta.terminal_output`."""

    type: Literal["terminal"] = "terminal"
    terminal_id: str


ToolCallContent = Annotated[
    ContentToolCallContent | DiffToolCallContent | TerminalToolCallContent,
    Field(discriminator="type"),
]
