"""Live command output for clients that show a display-only terminal (Zed's convention).

For a client that declared `clientCapabilities._meta.terminal_output = true`, a call of a
live-output tool (`ToolCallOpened.live_cwd`) becomes a terminal the client only displays
(cody_protocol.terminal): the `tool_call` carries `content: [{type: "terminal"}]` and
`_meta.terminal_info`, each output increment `_meta.terminal_output`, and the final update
`_meta.terminal_exit`. The command itself runs in Cody's sandbox like any other: nothing is
ever asked of the client's `terminal/*` methods.

Invariants: the terminal id is the tool call id; every terminal announced gets exactly one
`terminal_exit`, on the call's final update (also for a call that was refused or never ran);
the final update shows the terminal alone when the client saw the whole stream, and the
terminal plus the final (head + tail) text when the stream was cut short or never started.
Other clients get `rpc/updates.py`'s mapping (output as appended text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cody_protocol.content import TerminalToolCallContent, ToolCallContent
from cody_protocol.terminal import TerminalExitMeta, TerminalInfoMeta, TerminalOutputMeta
from cody_protocol.updates import ToolCallStart, ToolCallUpdate

from ..engine.events import (
    EngineEvent,
    ToolCallOpened,
    ToolCallOutput,
    ToolCallOutputEnd,
    ToolCallProgress,
)
from .updates import decision_meta

__all__ = ["TerminalView"]


@dataclass(slots=True)
class _Terminal:
    started: bool = False
    end: ToolCallOutputEnd | None = None


class TerminalView:
    """Per-call terminal state for one connection (see the module docstring)."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], _Terminal] = {}

    def updates(self, session_id: str, event: EngineEvent) -> list[dict[str, Any]] | None:
        """The updates for `event` when it concerns a terminal; None: map it as usual."""
        if isinstance(event, ToolCallOpened):
            if event.live_cwd is None or event.status != "pending":
                return None
            self._open[(session_id, event.call_id)] = _Terminal()
            meta = {
                "terminal_info": TerminalInfoMeta(
                    terminal_id=event.call_id, cwd=event.live_cwd
                ).wire()
            }
            return [
                ToolCallStart(
                    tool_call_id=event.call_id,
                    title=event.title,
                    kind=event.kind,
                    status=event.status,
                    raw_input=event.raw_input,
                    content=_terminal(event.call_id),
                    meta=meta,
                ).wire()
            ]
        call_id = _call_id(event)
        terminal = self._open.get((session_id, call_id)) if call_id is not None else None
        if terminal is None:
            return None
        if isinstance(event, ToolCallOutput):
            data = TerminalOutputMeta(terminal_id=event.call_id, data=event.text).wire()
            return [
                ToolCallUpdate(tool_call_id=event.call_id, meta={"terminal_output": data}).wire()
            ]
        if isinstance(event, ToolCallOutputEnd):
            terminal.end = event
            return []
        if not isinstance(event, ToolCallProgress):
            return None
        if event.status == "in_progress":
            terminal.started = True
            update = ToolCallUpdate(
                tool_call_id=event.call_id,
                status="in_progress",
                title=event.title,
                raw_input=event.raw_input,
                content=_terminal(event.call_id),
                meta=decision_meta(event.decision),
            )
            return [update.wire()]
        if event.status not in ("completed", "failed"):
            return None
        del self._open[(session_id, event.call_id)]
        end = terminal.end
        content: list[ToolCallContent] = list(event.content or [])
        if terminal.started and end is not None:
            # The command's own text (the first block) is what the terminal showed; blocks
            # added after it (the diagnostics of engine/diagnostics.py) are kept.
            content = _terminal(event.call_id) + (content[1:] if end.complete else content)
        exit_code = end.exit_code if end is not None else None
        exit_meta = TerminalExitMeta(
            terminal_id=event.call_id,
            exit_code=exit_code if exit_code is not None and exit_code >= 0 else None,
            signal=end.signal if end is not None else None,
        )
        return [
            ToolCallUpdate(
                tool_call_id=event.call_id,
                status=event.status,
                content=content,
                raw_output=event.raw_output,
                meta={
                    "terminal_exit": exit_meta.model_dump(mode="json"),
                    **(decision_meta(event.decision) or {}),
                },
            ).wire()
        ]


def _call_id(event: EngineEvent) -> str | None:
    if isinstance(event, ToolCallOutput | ToolCallOutputEnd | ToolCallProgress):
        return event.call_id
    return None


def _terminal(call_id: str) -> list[ToolCallContent]:
    return [TerminalToolCallContent(terminal_id=call_id)]
