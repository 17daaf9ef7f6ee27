"""Replaying a session's history to a client (`session/load`), and prompt text conversion."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import get_args

from cody_protocol.content import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from cody_protocol.updates import ToolKind

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
)
from ..tools.registry import ToolRegistry
from .events import AgentText, AgentThought, EngineEvent, ToolCallOpened, UserImage, UserText
from .toolcalls import describe_call, text_content

__all__ = ["prompt_to_text", "replay_events"]


def replay_events(history: Sequence[HistoryItem], registry: ToolRegistry) -> Iterator[EngineEvent]:
    """The history as client events: messages as chunks, each tool call as one final `tool_call`."""
    outputs = {item.call_id: item for item in history if isinstance(item, FunctionCallOutputItem)}
    for item in history:
        if isinstance(item, MessageItem):
            if item.role == "user":
                if item.text or not item.images:
                    yield UserText(item.text)
                for image in item.images:
                    yield UserImage(data=image.data, mime_type=image.mime_type)
            elif item.role == "assistant" and item.text:
                yield AgentText(item.text)
        elif isinstance(item, ReasoningItem):
            if item.text:
                yield AgentThought(item.text)
        elif isinstance(item, FunctionCallItem):
            info = describe_call(registry, item.name, item.arguments)
            output = outputs.get(item.call_id)
            status = output.status if output is not None else "failed"
            text = output.output if output is not None else '{"error": "interrupted"}'
            raw = {**((output.raw_output or {}) if output else {}), "output": text}
            yield ToolCallOpened(
                call_id=item.call_id,
                title=item.title or info.title,
                kind=_kind(item.kind) or info.kind,
                raw_input=info.raw_input,
                status=status,
                content=text_content(text),
                raw_output=raw,
            )


TOOL_KINDS = frozenset(get_args(ToolKind))


def _kind(value: str | None) -> ToolKind | None:
    return value if value in TOOL_KINDS else None  # type: ignore[return-value]


def prompt_to_text(blocks: Sequence[ContentBlock]) -> str:
    """Flatten ACP prompt blocks into the user message text the model sees (images travel
    as parts of the message, engine/images.py)."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource: {block.name} <{block.uri}>]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f'<file uri="{resource.uri}">\n{resource.text}\n</file>')
            else:
                parts.append(f"[binary resource omitted: {resource.uri}]")
        elif isinstance(block, AudioContent):
            parts.append("[audio omitted: this agent accepts text and images only]")
        # ImageContent: attached to the message as image parts (engine/images.py)
    return "\n\n".join(parts)
