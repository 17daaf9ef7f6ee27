"""The one interface every model provider implements, and the events it streams.

A provider turns a `ModelRequest` (neutral history + tool specs) into an async stream of
`ModelEvent`s. The stream always ends with exactly one `StreamEnd` unless it raises
`ProviderError`. Text and reasoning deltas arrive in order; `ReasoningDone` carries the
complete reasoning item (with provider-opaque data) for the history; `ToolCallRequested`
carries a complete call (arguments assembled from streamed fragments).

Providers never touch the session, the client or the file system.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from cody_protocol.settings import ReasoningEffort, ReasoningSummary

from ..core.history import HistoryItem, ReasoningItem
from ..core.tooling import ToolSpec
from ..errors import ProviderError

__all__ = [
    "OUTPUT_SCHEMA_NAME",
    "ModelEvent",
    "ModelProvider",
    "ModelRequest",
    "ProviderError",
    "ReasoningDelta",
    "ReasoningDone",
    "StopKind",
    "StreamEnd",
    "TextDelta",
    "ToolCallRequested",
    "ToolSpec",
    "UsageReport",
    "takes_output_schema",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    model: str
    instructions: str
    """The system/developer prompt."""
    history: Sequence[HistoryItem]
    """The whole conversation so far, oldest first, ending with the newest input."""
    tools: Sequence[ToolSpec]
    session_id: str
    """Stable per session; providers may use it as a prompt-cache key."""
    reasoning_effort: ReasoningEffort | None = None
    """None: not configured (the provider picks the model's default, see `models`)."""
    reasoning_summary: ReasoningSummary | None = None
    """None: not configured (no summaries on API keys; see `openai_responses`)."""
    max_output_tokens: int | None = None
    output_schema: Mapping[str, Any] | None = None
    """The JSON Schema the answer text must follow, sent as the API's structured output; only
    given to a provider whose `structured_output` is true (engine/final_answer.py)."""
    output_strict: bool = False
    """Ask the API to enforce `output_schema` strictly (only for schemas that allow it)."""
    tool_choice: str | None = None
    """The tool the model must call in this request (None: the model chooses)."""


OUTPUT_SCHEMA_NAME = "cody_output"
"""The `name` of a structured output format (`^[a-zA-Z0-9_-]{1,64}$`, as OpenAI requires)."""


def takes_output_schema(provider: object) -> bool:
    """Whether `provider` sends `ModelRequest.output_schema` as its API's structured output
    (a class attribute `structured_output = True`); others get a `respond` tool instead."""
    return bool(getattr(provider, "structured_output", False))


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDone:
    item: ReasoningItem


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRequested:
    call_id: str
    name: str
    arguments: str
    """JSON text as produced by the model (may be invalid JSON; the engine reports that)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReport:
    """Token usage of one model call, as the server reported it."""

    input_tokens: int = 0
    """All input tokens, including cached ones."""
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    """All output tokens, including reasoning ones."""
    reasoning_tokens: int = 0


StopKind = Literal["end_turn", "tool_use", "max_tokens", "refusal"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamEnd:
    stop: StopKind
    response_id: str | None = None


ModelEvent = (
    TextDelta | ReasoningDelta | ReasoningDone | ToolCallRequested | UsageReport | StreamEnd
)


class ModelProvider(Protocol):
    """A configured provider instance (one per provider id per daemon)."""

    @property
    def id(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream one model call. Cancelling the consumer closes the connection."""
        ...

    async def aclose(self) -> None: ...
