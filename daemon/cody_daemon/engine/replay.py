"""Replaying a session's history to a client (`session/load`), and prompt text conversion.

The replay shows each item as the client first saw it: messages and thoughts as chunks with
their `messageId`, a user message with the content blocks the client sent (resources,
links), and each tool call as one final `tool_call` with the title, kind, locations and
content (diffs) it was shown with, followed by the plan it published. Files written before
calls kept their display (`FunctionCallOutputItem.display`) get the call described again
and its output as text. Calls imported from Codex or Claude Code (tools Cody's registry does
not know, named in Claude Code's vocabulary) are shown with their command or file.

A replay inside a live session (`/history`) passes `id_suffix`: every tool call id and message
id it shows then gets that suffix, so no id the client has seen in the session is sent again
(ACP ids are unique per session; a client would otherwise update the original call).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, get_args

from cody_protocol.content import (
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolCallContent,
)
from cody_protocol.updates import ToolCallLocation, ToolKind
from pydantic import TypeAdapter, ValidationError

from ..backends.display import CLAUDE_TOOL_KINDS, claude_tool_display
from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
)
from ..tools.registry import ToolRegistry
from .events import (
    AgentText,
    AgentThought,
    CallDecision,
    EngineEvent,
    PlanChanged,
    ToolCallOpened,
    UserImage,
    UserText,
)
from .toolcalls import describe_call, text_content

__all__ = ["client_content", "prompt_to_text", "replay_events"]

_CONTENT: TypeAdapter[list[ToolCallContent]] = TypeAdapter(list[ToolCallContent])
_LOCATIONS: TypeAdapter[list[ToolCallLocation]] = TypeAdapter(list[ToolCallLocation])
_KINDS: frozenset[str] = frozenset(get_args(ToolKind))
_PLAN_STATUSES = ("pending", "in_progress", "completed")


def replay_events(
    history: Sequence[HistoryItem], registry: ToolRegistry, *, id_suffix: str = ""
) -> Iterator[EngineEvent]:
    """The history as client events: messages as chunks, each tool call as one final
    `tool_call`; `id_suffix` is appended to every id shown (see the module docstring)."""
    outputs = {item.call_id: item for item in history if isinstance(item, FunctionCallOutputItem)}
    for item in history:
        if isinstance(item, MessageItem):
            message_id = item.id + id_suffix
            if item.role == "user":
                blocks = tuple(item.client_content or ())
                if item.text or not item.images or blocks:
                    yield UserText(item.text, message_id=message_id, blocks=blocks)
                for image in item.images:
                    yield UserImage(
                        data=image.data, mime_type=image.mime_type, message_id=message_id
                    )
            elif item.role == "assistant" and item.text:
                yield AgentText(item.text, message_id=message_id)
        elif isinstance(item, ReasoningItem):
            if item.text:
                yield AgentThought(item.text, message_id=item.id + id_suffix)
        elif isinstance(item, FunctionCallItem):
            yield from _replay_call(item, outputs.get(item.call_id), registry, id_suffix)


def _replay_call(
    item: FunctionCallItem,
    output: FunctionCallOutputItem | None,
    registry: ToolRegistry,
    id_suffix: str,
) -> Iterator[EngineEvent]:
    info = describe_call(registry, item.name, item.arguments)
    if info.tool is None and isinstance(info.raw_input, dict) and item.name in CLAUDE_TOOL_KINDS:
        # An imported call (Codex, Claude Code: history/vocabulary.py names it as Claude Code
        # does): its command or file, not the bare tool name.
        shown, shown_kind = claude_tool_display(item.name, info.raw_input)
        info = replace(info, title=shown, kind=shown_kind)
    status = output.status if output is not None else "failed"
    text = output.output if output is not None else '{"error": "interrupted"}'
    raw = {**((output.raw_output or {}) if output else {}), "output": text}
    display = (output.display if output is not None else None) or {}
    title = display.get("title")
    kind = display.get("kind")
    yield ToolCallOpened(
        call_id=f"{item.call_id}{id_suffix}",
        title=title if isinstance(title, str) else (item.title or info.title),
        kind=_kind(kind) or _kind(item.kind) or info.kind,
        raw_input=info.raw_input,
        status=status,
        content=_parsed(_CONTENT, display.get("content")) or text_content(text),
        raw_output=raw,
        locations=_parsed(_LOCATIONS, display.get("locations")) or None,
        decision=_decision(display.get("decision")),
    )
    plan = _plan(display.get("plan"))
    if plan is not None:
        yield PlanChanged(plan)


_DECIDERS = ("rule", "hook", "grant", "policy", "sandbox", "allowlist", "user", "timeout")


def _decision(value: Any) -> CallDecision | None:
    """A stored decision, or None when it is absent or malformed (a hand-edited file)."""
    if not isinstance(value, dict):
        return None
    by, detail, outcome = value.get("by"), value.get("detail"), value.get("outcome")
    if by not in _DECIDERS or not isinstance(detail, str) or outcome not in ("allow", "deny"):
        return None
    return CallDecision(by, detail, outcome)


def _kind(value: Any) -> ToolKind | None:
    return value if isinstance(value, str) and value in _KINDS else None  # type: ignore[return-value]


def _parsed(adapter: TypeAdapter[list[Any]], value: Any) -> list[Any]:
    """A stored display part, or [] when it is absent or unreadable (a hand-edited file)."""
    if not isinstance(value, list):
        return []
    try:
        return adapter.validate_python(value)
    except ValidationError:
        return []


def _plan(value: Any) -> tuple[tuple[str, Any], ...] | None:
    if not isinstance(value, list):
        return None
    entries = []
    for entry in value:
        if not isinstance(entry, dict):
            return None
        step, status = entry.get("content"), entry.get("status")
        if not isinstance(step, str) or status not in _PLAN_STATUSES:
            return None
        entries.append((step, status))
    return tuple(entries)


def client_content(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]] | None:
    """The blocks to keep with the user message for the replay: None for plain text (the
    message text replays it exactly)."""
    if all(isinstance(block, TextContent | ImageContent) for block in blocks):
        return None  # images are kept as parts of the message (engine/images.py)
    return [block.wire() for block in blocks if not isinstance(block, ImageContent)]


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
        # ImageContent: attached to the message as image parts (engine/images.py)
    return "\n\n".join(parts)
