"""Live command output for clients that follow ACP: each update holds the output so far.

ACP's `tool_call_update.content` *replaces* what the client shows for the call, so a client
that follows the spec and gets bare increments shows only the latest piece (Toad showed
`line 4` of 8 lines, issue 24.14). For such clients (neither `_meta.terminal_output` nor
`_meta.cody.appendOutput` in their capabilities) every live-output increment becomes an
update whose text is everything the command printed so far.

Invariants: the text of an update is a suffix of the output so far, cut to its last
`SNAPSHOT_CHARS` characters with one leading line saying how many came before; memory per
running call is bounded by that cap; a call's state is dropped with its final update (the
final update itself is mapped as usual: it carries the whole result the model saw).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cody_protocol.content import ContentToolCallContent, TextContent
from cody_protocol.updates import ToolCallUpdate

from ..engine.events import EngineEvent, ToolCallOutput, ToolCallProgress

__all__ = ["SNAPSHOT_CHARS", "OutputSoFar"]

SNAPSHOT_CHARS = 16 * 1024
"""The most of a running command's output one update carries (its latest characters)."""


@dataclass(slots=True)
class _Output:
    tail: str = ""
    dropped: int = 0
    """Characters printed before `tail` (not shown any more)."""


class OutputSoFar:
    """Per-call accumulated output for one connection (see the module docstring)."""

    def __init__(self, limit: int = SNAPSHOT_CHARS) -> None:
        self._limit = limit
        self._calls: dict[tuple[str, str], _Output] = {}

    def updates(self, session_id: str, event: EngineEvent) -> list[dict[str, Any]] | None:
        """The updates for `event` when it is live output; None: map it as usual."""
        if isinstance(event, ToolCallProgress):
            if event.status in ("completed", "failed"):
                self._calls.pop((session_id, event.call_id), None)
            return None
        if not isinstance(event, ToolCallOutput):
            return None
        output = self._calls.setdefault((session_id, event.call_id), _Output())
        output.tail += event.text
        excess = len(output.tail) - self._limit
        if excess > 0:
            output.tail = output.tail[excess:]
            output.dropped += excess
        text = output.tail
        if output.dropped:
            text = f"[... {output.dropped} earlier characters not shown ...]\n{text}"
        update = ToolCallUpdate(
            tool_call_id=event.call_id,
            content=[ContentToolCallContent(content=TextContent(text=text))],
        )
        return [update.wire()]
