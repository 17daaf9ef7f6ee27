"""What an MCP tool result becomes: the model's text, its images, and the client's content.

`render_result(result)` maps a `CallToolResult` block by block (docs/mcp.md "Tool results"):

- text: as it is;
- an image: an image part for the model (`images`; the engine decides whether the model gets
  it: engine/tool_images.py) and a one-line marker in the text, so the model knows where it
  was and what it was; never its base64 in the text;
- audio, and embedded binary resources that are not images: a one-line note (type, size);
- a resource link: a reference line the model can follow with `readMcpResource`;
- an embedded text resource: its URI and text;
- `structuredContent`: as JSON only when no block is text (the spec asks servers to put its
  serialised form in a text block too: then that is what the model reads), with every
  binary-looking value (long base64, `data:` URLs) replaced by a note of its size.

The client's content keeps everything as ACP blocks (images, audio, links, resources), after
the model's text. The model's text is capped at `MAX_OUTPUT_CHARS`.

This module imports the `mcp` SDK's types only inside functions (the SDK is heavy).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cody_protocol.content import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    ContentToolCallContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolCallContent,
)

from ...core.history import ImagePart
from ...core.image_rules import image_type

if TYPE_CHECKING:
    from mcp_types import CallToolResult
    from mcp_types import EmbeddedResource as McpEmbedded
    from mcp_types import ResourceLink as McpLink

__all__ = [
    "MAX_OUTPUT_CHARS",
    "RenderedResult",
    "b64_size",
    "cap_text",
    "elide_binary",
    "render_result",
]

MAX_OUTPUT_CHARS = 100_000
MIN_BINARY_CHARS = 256
"""A string value of structured content this long that is all base64 is taken for binary."""
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


@dataclass(slots=True)
class RenderedResult:
    text: str
    """What the model reads."""
    images: list[ImagePart] = field(default_factory=list)
    """Images for the model, in order (the engine checks them against the model and the
    image limits before any is stored or sent)."""
    content: list[ToolCallContent] = field(default_factory=list)
    """What the client shows: the text, then every non-text block as it came."""


def render_result(result: CallToolResult) -> RenderedResult:
    """See the module docstring."""
    from mcp_types import AudioContent as McpAudio
    from mcp_types import BlobResourceContents as McpBlob
    from mcp_types import EmbeddedResource as McpEmbedded
    from mcp_types import ImageContent as McpImage
    from mcp_types import ResourceLink as McpLink
    from mcp_types import TextContent as McpText

    parts: list[str] = []
    images: list[ImagePart] = []
    shown: list[ContentBlock] = []
    has_text = False
    for block in result.content:
        if isinstance(block, McpText):
            has_text = True
            parts.append(block.text)
        elif isinstance(block, McpImage):
            parts.append(_image_marker(block.mime_type, block.data, images))
            shown.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, McpAudio):
            parts.append(f"[audio: {block.mime_type}, {b64_size(block.data):,} bytes]")
            shown.append(AudioContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, McpLink):
            parts.append(_link_line(block.uri, block.name, block.mime_type, block.description))
            shown.append(link_block(block))
        elif isinstance(block, McpEmbedded):
            resource = block.resource
            if isinstance(resource, McpBlob):
                mime = resource.mime_type or "application/octet-stream"
                if image_type(mime) is not None:
                    parts.append(f"[resource {resource.uri}]")
                    parts.append(_image_marker(mime, resource.blob, images))
                else:
                    size = b64_size(resource.blob)
                    parts.append(f"[resource {resource.uri}: {mime}, {size:,} bytes]")
                shown.append(embedded_block(block))
            else:
                has_text = True
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
                shown.append(embedded_block(block))
    if not has_text and result.structured_content is not None:
        structured = elide_binary(result.structured_content)
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    text = "\n".join(parts)
    if not text:
        text = (
            "(the tool reported an error without a message)" if result.is_error else "(no output)"
        )
    text = cap_text(text)
    content: list[ToolCallContent] = []
    if shown:
        content = [
            ContentToolCallContent(content=TextContent(text=text)),
            *(ContentToolCallContent(content=block) for block in shown),
        ]
    return RenderedResult(text=text, images=images, content=content)


def link_block(block: McpLink) -> ResourceLink:
    """An MCP resource link as the ACP block (the same fields)."""
    return ResourceLink(
        uri=block.uri,
        name=block.name,
        title=block.title,
        description=block.description,
        mime_type=block.mime_type,
    )


def embedded_block(block: McpEmbedded) -> EmbeddedResource:
    """An MCP embedded resource (text or blob) as the ACP block."""
    from mcp_types import BlobResourceContents as McpBlob

    resource = block.resource
    contents: TextResourceContents | BlobResourceContents = (
        BlobResourceContents(uri=resource.uri, blob=resource.blob, mime_type=resource.mime_type)
        if isinstance(resource, McpBlob)
        else TextResourceContents(
            uri=resource.uri, text=resource.text, mime_type=resource.mime_type
        )
    )
    return EmbeddedResource(resource=contents)


def _image_marker(mime_type: str, data: str, images: list[ImagePart]) -> str:
    """The text line standing for an image, and its part for the model when it can be one."""
    size = b64_size(data)
    mime = image_type(mime_type)
    if mime is None:
        return f"[image: {mime_type}, {size:,} bytes; a type models do not read]"
    images.append(ImagePart(image_url=f"data:{mime};base64,{''.join(data.split())}"))
    return f"[image {len(images)}: {mime}, {size:,} bytes]"


def _link_line(uri: str, name: str, mime_type: str | None, description: str | None) -> str:
    about = [name]
    if mime_type:
        about.append(mime_type)
    line = f"[resource link: {uri} ({', '.join(about)})"
    if description:
        line += f": {description}"
    return line + "; read it with readMcpResource]"


def cap_text(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    cut = len(text) - MAX_OUTPUT_CHARS
    return f"{text[:MAX_OUTPUT_CHARS]}\n[output cut: {cut} more characters]"


def elide_binary(value: Any) -> Any:
    """`value` (JSON) with every binary-looking string replaced by a note of its size."""
    if isinstance(value, dict):
        return {key: elide_binary(item) for key, item in value.items()}
    if isinstance(value, list):
        return [elide_binary(item) for item in value]
    if isinstance(value, str) and len(value) >= MIN_BINARY_CHARS:
        size = _binary_size(value)
        if size is not None:
            return f"[binary data elided: {size:,} bytes]"
    return value


def _binary_size(text: str) -> int | None:
    """The decoded size when `text` is a `data:` URL or base64 (standard or URL-safe)."""
    if text.startswith("data:") and ";base64," in text[:200]:
        return b64_size(text.partition(";base64,")[2])
    if _BASE64.fullmatch(text) is None:
        return None
    try:
        if "-" in text or "_" in text:
            return len(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        return len(binascii.a2b_base64(text, strict_mode=True))
    except (binascii.Error, ValueError):
        return None


def b64_size(data: str) -> int:
    """The decoded size of base64 `data` (estimated from its length)."""
    data = data.strip()
    return len(data) * 3 // 4 - data[-2:].count("=")
