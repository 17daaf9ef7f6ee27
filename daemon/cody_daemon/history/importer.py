"""Turning unified messages into a Cody history (what `_cody/history/import` writes).

Kept: user text, assistant text, reasoning text (as reasoning without any provider's opaque
data, which no other provider could use), tool calls with their results (plans are tool
calls: `TodoWrite`), in order. Dropped: injected context (`isMeta`), `system` notes,
compaction markers and summaries (the conversation they summarize is imported whole), and
sub-agent turns. Inline (base64) images the user attached stay images of the user message when
they pass the rules every image does (core/image_rules.py: type, size, count per message and
per session), else they become a short note; linked images become a note too.

Invariant (core/history.py): every imported call has exactly one result right after its
call group; a call the source never answered gets the store's `INTERRUPTED_OUTPUT`, and a
result whose call is unknown is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    ImagePart,
    MessageItem,
    ReasoningItem,
    SummaryPart,
    TextPart,
    user_message,
)
from ..core.image_rules import ImageTally, admit_image, left_out
from ..ids import new_id
from ..store.reader import INTERRUPTED_OUTPUT
from .model import Msg

__all__ = ["ImportPlan", "plan_import"]


@dataclass(slots=True)
class ImportPlan:
    items: list[HistoryItem] = field(default_factory=list)
    messages: int = 0
    tool_calls: int = 0
    skipped_messages: int = 0
    dropped_results: int = 0
    images_left_out: int = 0
    """Inline images that break core/image_rules.py, replaced by a note."""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if block.get("type") == "text":
            parts.append(block["text"])
        elif block.get("type") == "image":
            parts.append("[image omitted]")
    return "\n".join(parts)


class _Builder:
    def __init__(self, plan: ImportPlan) -> None:
        self.plan = plan
        self.open: list[str] = []
        self.known: set[str] = set()
        self.renamed: dict[str, str] = {}
        """A source id used twice -> the id its latest call got here."""
        self.images = ImageTally()
        """The images imported so far (the session's, core/image_rules.py)."""

    def close_open_calls(self) -> None:
        for call_id in self.open:
            self.plan.items.append(
                FunctionCallOutputItem(call_id=call_id, output=INTERRUPTED_OUTPUT, status="failed")
            )
        self.open.clear()

    def user(self, msg: Msg) -> None:
        texts: list[str] = []
        images: list[ImagePart] = []
        in_message = ImageTally()
        for block in msg.content:
            if block["type"] == "tool_result":
                call_id = self.renamed.get(block["tool_use_id"], block["tool_use_id"])
                if call_id in self.open:
                    self.open.remove(call_id)
                    self.plan.items.append(
                        FunctionCallOutputItem(
                            call_id=call_id,
                            output=_content_text(block["content"]),
                            status="failed" if block.get("is_error") else "completed",
                        )
                    )
                else:
                    self.plan.dropped_results += 1
            elif block["type"] == "text":
                texts.append(block["text"])
            elif block["type"] == "image":
                image = _image_part(block)
                problem = (
                    "only inline (base64) images are imported"
                    if image is None
                    else admit_image(image, in_message, self.images)
                )
                if image is not None and problem is None:
                    images.append(image)
                else:
                    self.plan.images_left_out += image is not None
                    texts.append(left_out(problem or "").text)
        text = "\n\n".join(t for t in texts if t.strip())
        if text or images:
            self.close_open_calls()
            self.plan.items.append(user_message(new_id(), text, images))

    def assistant(self, msg: Msg) -> None:
        for block in msg.content:
            kind = block["type"]
            if kind == "text" and block["text"].strip():
                last = self.plan.items[-1] if self.plan.items else None
                if isinstance(last, MessageItem) and last.role == "assistant" and not self.open:
                    last.content.append(TextPart(type="output_text", text=block["text"]))
                else:
                    self.plan.items.append(
                        MessageItem(
                            id=new_id(),
                            role="assistant",
                            content=[TextPart(type="output_text", text=block["text"])],
                        )
                    )
            elif kind == "thinking" and block["thinking"].strip():
                self.plan.items.append(
                    ReasoningItem(id=new_id(), summary=[SummaryPart(text=block["thinking"])])
                )
            elif kind == "tool_use":
                call_id = block["id"] or f"call_{new_id()}"
                if call_id in self.known:
                    fresh = f"{call_id}_{new_id()}"
                    self.renamed[call_id] = fresh
                    call_id = fresh
                self.known.add(call_id)
                self.open.append(call_id)
                self.plan.tool_calls += 1
                self.plan.items.append(
                    FunctionCallItem(
                        call_id=call_id,
                        name=block["name"],
                        arguments=orjson.dumps(block["input"]).decode(),
                    )
                )
            elif kind == "tool_result":  # a server tool's result inside the assistant message
                self.user(Msg("user", [block], msg.line))


def plan_import(messages: Iterable[Msg]) -> ImportPlan:
    """The history items a new Cody session gets for `messages` (in their order)."""
    plan = ImportPlan()
    builder = _Builder(plan)
    for msg in messages:
        plan.messages += 1
        if msg.is_meta or msg.compaction or msg.is_sidechain or msg.role == "system":
            plan.skipped_messages += 1
        elif msg.role == "user":
            builder.user(msg)
        else:
            builder.assistant(msg)
    builder.close_open_calls()
    return plan


def _image_part(block: dict[str, Any]) -> ImagePart | None:
    """An inline image block as a user message part (a `data:` URL), else None."""
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return None
    media_type, data = source.get("media_type"), source.get("data")
    if not isinstance(media_type, str) or not isinstance(data, str) or not data:
        return None
    return ImagePart(image_url=f"data:{media_type};base64,{data}")
