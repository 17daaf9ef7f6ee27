"""The neutral conversation history, as stored in session files (`response_item` payloads).

Item shapes follow the Codex rollout style: `message` (role + text parts, and for a user
message `input_image` parts holding a `data:` URL, as Codex stores pasted images), `reasoning`
(summary text + provider-opaque data), `function_call`, `function_call_output`.

Invariants:
- every `function_call` in a history handed to a provider has a matching
  `function_call_output` (the store closes interrupted calls on load);
- provider-opaque fields (`encrypted_content`, `signature`, `replay_fields`) are only sent back
  to the provider named in `ReasoningItem.provider`; other providers get the summary text or
  nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "HISTORY_ITEM",
    "FunctionCallItem",
    "FunctionCallOutputItem",
    "HistoryItem",
    "ImagePart",
    "MessageItem",
    "ReasoningItem",
    "SummaryPart",
    "TextPart",
    "item_key",
    "user_message",
]


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=False, defer_build=True)

    def payload(self) -> dict[str, Any]:
        """The JSON-ready dict written to the session file."""
        return self.model_dump(mode="json", exclude_none=True)


class TextPart(BaseModel):
    type: Literal["input_text", "output_text"]
    text: str


class ImagePart(BaseModel):
    """An image the user attached: `data:<mime type>;base64,<data>` (Codex's rollout shape)."""

    type: Literal["input_image"] = "input_image"
    image_url: str

    @property
    def mime_type(self) -> str:
        head = self.image_url.partition(";base64,")[0]
        return head.removeprefix("data:") or "application/octet-stream"

    @property
    def data(self) -> str:
        """The base64 data (without the `data:` prefix)."""
        return self.image_url.partition(";base64,")[2]


MessagePart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class MessageItem(_Item):
    type: Literal["message"] = "message"
    id: str
    role: Literal["user", "assistant", "developer"]
    content: list[MessagePart]
    client_content: list[dict[str, Any]] | None = None
    """A user message's ACP content blocks as the client sent them, when they were more than
    plain text (resources, links); `session/load` replays them as sent. Never sent to a model
    (it sees `content`); absent in older files."""
    steered: bool | None = None
    """A user message that joined a running turn (`_cody/session/steer`); absent otherwise."""

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.content if isinstance(part, TextPart))

    @property
    def images(self) -> list[ImagePart]:
        return [part for part in self.content if isinstance(part, ImagePart)]


class SummaryPart(BaseModel):
    type: Literal["summary_text"] = "summary_text"
    text: str


class ReasoningItem(_Item):
    type: Literal["reasoning"] = "reasoning"
    id: str
    summary: list[SummaryPart] = Field(default_factory=list)
    encrypted_content: str | None = None
    """Opaque reasoning state (Responses API); only valid for `provider`."""
    signature: str | None = None
    """Opaque thinking signature (Anthropic); only valid for `provider`."""
    provider: str | None = None
    """The provider that produced the opaque fields."""
    replay_fields: dict[str, Any] | None = None
    """Fields sent back verbatim on the assistant message, only to `provider` (Chat
    Completions: DeepSeek's and Kimi's `reasoning_content`, OpenRouter's `reasoning_details`)."""

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.summary)


class FunctionCallItem(_Item):
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str
    """The arguments exactly as the model produced them (a JSON text, maybe invalid)."""
    title: str | None = None
    kind: str | None = None
    """How clients show a call made by an external agent (a session backend), whose tool
    Cody's registry does not know; None for Cody's own tools (their registry describes them)."""


class FunctionCallOutputItem(_Item):
    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str
    """What the model sees as the tool result."""
    status: Literal["completed", "failed"] = "completed"
    raw_output: dict[str, Any] | None = None
    """Structured metadata for clients (exit code, duration, paths); never the full output."""
    display: dict[str, Any] | None = None
    """How the call was shown to the client, so `session/load` replays it as first sent:
    `{title, kind, locations?, content?, plan?}` in ACP wire form (camelCase). `content` is
    left out when it is very large (the replay then shows the output text). Never sent to a
    model; absent in older files (the replay then describes the call again)."""


HistoryItem = Annotated[
    MessageItem | ReasoningItem | FunctionCallItem | FunctionCallOutputItem,
    Field(discriminator="type"),
]

HISTORY_ITEM: TypeAdapter[HistoryItem] = TypeAdapter(HistoryItem)


def user_message(item_id: str, text: str, images: Sequence[ImagePart] = ()) -> MessageItem:
    """A user message: its text, then the images the user attached (in prompt order)."""
    parts: list[TextPart | ImagePart] = [TextPart(type="input_text", text=text), *images]
    return MessageItem(id=item_id, role="user", content=parts)


def item_key(item: HistoryItem) -> str:
    """A key naming one history item across reloads (ids survive; list positions may not)."""
    if isinstance(item, FunctionCallItem):
        return f"call:{item.call_id}"
    if isinstance(item, FunctionCallOutputItem):
        return f"output:{item.call_id}"
    return f"{item.type}:{item.id}"
