"""One model call of a native turn, streamed: text and reasoning into the history and the
session file as they arrive (engine/streamed.py), then to the client; tool calls recorded
once the stream ends.

Invariants: every streamed item is finished (its text in the file) also when the call fails
or is cancelled; a slow client holds the stream back (`wait_writable`), nothing piles up; a
message steered into the turn ends a stream that has asked for no tool yet
(engine/steering.py, `until_steered`), which then ends `STEERED`; each reasoning block is
its own item, with its own signature.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.history import FunctionCallItem
from ..providers.base import (
    ModelProvider,
    ModelRequest,
    ReasoningDelta,
    ReasoningDone,
    StreamEnd,
    TextDelta,
    ToolCallRequested,
    UsageReport,
)
from .events import AgentText, AgentThought
from .ports import ClientLink
from .session import Session
from .steering import SteerInbox, until_steered
from .streamed import SegmentCadence, StreamedItem

__all__ = ["ModelAnswer", "stream_model_call"]


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    calls: list[ToolCallRequested]
    end: str
    """How the stream ended (`end_turn`, `max_tokens`, `refusal`, or `STEERED`)."""
    text: str
    """The text the model wrote (the final answer, when it asked for no tool)."""
    usage: UsageReport | None
    """The call's last usage report, if the provider sent one."""


async def stream_model_call(
    session: Session,
    provider: ModelProvider,
    request: ModelRequest,
    *,
    link: ClientLink,
    inbox: SteerInbox,
    emit: Callable[[Any], None],
) -> ModelAnswer:
    """Stream `request` into `session` (events through `emit`)."""
    # Streamed text reaches the file first, then the client (engine/streamed.py).
    cadence = SegmentCadence()
    message = StreamedItem(
        "message",
        session.history,
        session.file,
        emit=lambda text: emit(AgentText(text, message.item_id)),
        cadence=cadence,
    )

    def new_thought() -> StreamedItem:
        item = StreamedItem(
            "reasoning",
            session.history,
            session.file,
            emit=lambda text: emit(AgentThought(text, item.item_id)),
            cadence=cadence,
        )
        return item

    thoughts = [new_thought()]
    calls: list[ToolCallRequested] = []
    usage: list[UsageReport] = []

    async def consume() -> str:
        end = "end_turn"
        async with contextlib.aclosing(provider.stream(request)) as stream:
            async for event in stream:
                await link.wait_writable()  # back-pressure from a slow client
                if isinstance(event, TextDelta):
                    message.add(event.text)
                elif isinstance(event, ReasoningDelta):
                    thoughts[-1].add(event.text)
                elif isinstance(event, ReasoningDone):
                    thought = thoughts[-1]
                    if not thought.started and event.item.text:
                        thought.add(event.item.text)
                    thought.set_opaque(
                        encrypted_content=event.item.encrypted_content,
                        signature=event.item.signature,
                        provider=event.item.provider,
                        replay_fields=event.item.replay_fields,
                    )
                    # One reasoning item per block: each carries its own signature.
                    thought.finish()
                    thoughts.append(new_thought())
                elif isinstance(event, ToolCallRequested):
                    calls.append(event)
                elif isinstance(event, UsageReport):
                    usage.append(event)
                elif isinstance(event, StreamEnd):
                    end = event.stop
        return end

    try:
        end = await until_steered(asyncio.ensure_future(consume()), inbox, calls)
    finally:
        thoughts[-1].finish()
        message.finish()
    for call in calls:
        item = FunctionCallItem(call_id=call.call_id, name=call.name, arguments=call.arguments)
        session.history.append(item)
        session.file.append("response_item", item.payload())
    return ModelAnswer(calls, end, message.text, usage[-1] if usage else None)
