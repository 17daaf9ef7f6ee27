"""Turning session updates into `cody-client exec --json` events (cody_protocol.exec_events).

Invariants: a run of text (or thought) deltas is closed by one `message.completed` holding the
whole run before any other event is written, and at the end of the turn; at most one final
event (`turn.completed` or `error`) is ever written, and nothing after it (`finished`).
"""

from __future__ import annotations

from typing import Any, TextIO

import orjson
from cody_protocol.content import ContentToolCallContent, TextContent
from cody_protocol.exec_events import (
    ApprovalRequested,
    ErrorEvent,
    MessageCompleted,
    MessageDelta,
    PlanUpdated,
    SessionStarted,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
    UsageUpdated,
)
from cody_protocol.prompt import PromptResult, StructuredOutput
from cody_protocol.updates import (
    AgentMessageChunk,
    AgentThoughtChunk,
    PlanUpdate,
    SessionUpdate,
    ToolCallStart,
    ToolCallStatus,
    ToolCallUpdate,
    UsageUpdate,
)

from .inert import json_document
from .terminal import was_refused

__all__ = ["JsonEvents"]


class JsonEvents:
    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._run_kind: str | None = None
        self._run_parts: list[str] = []
        self._finished: set[str] = set()
        self.denied = False
        self.finished = False
        """The final event (`turn.completed` or `error`) was written."""

    def emit(self, event: Any) -> None:
        if self.finished:
            return
        # orjson escapes C0 controls but writes DEL, C1 and bidi controls as they are.
        self._out.write(json_document(orjson.dumps(event.wire()).decode()) + "\n")
        self._out.flush()

    def _close_run(self) -> None:
        if self._run_kind is not None:
            self.emit(MessageCompleted(kind=self._run_kind, text="".join(self._run_parts)))  # type: ignore[arg-type]
            self._run_kind = None
            self._run_parts = []

    def session_started(self, **fields: Any) -> None:
        self.emit(SessionStarted(**fields))

    def turn_started(self, prompt: str) -> None:
        self.emit(TurnStarted(prompt=prompt))

    def approval(self, tool_call_id: str, title: str, decision: str, reason: str) -> None:
        self._close_run()
        self.emit(
            ApprovalRequested(
                tool_call_id=tool_call_id, title=title, decision=decision, reason=reason
            )
        )

    def on_update(self, update: SessionUpdate) -> None:
        if isinstance(update, AgentMessageChunk | AgentThoughtChunk):
            kind = "text" if isinstance(update, AgentMessageChunk) else "thought"
            text = update.content.text if isinstance(update.content, TextContent) else ""
            if self._run_kind != kind:
                self._close_run()
                self._run_kind = kind
            self._run_parts.append(text)
            self.emit(MessageDelta(kind=kind, text=text))  # type: ignore[arg-type]
            return
        if isinstance(update, ToolCallStart):
            self._close_run()
            self.emit(
                ToolStarted(
                    tool_call_id=update.tool_call_id,
                    title=update.title,
                    kind=update.kind,
                    input=update.raw_input,
                )
            )
            if update.status in ("completed", "failed"):
                self._tool_done(
                    update.tool_call_id, update.status, update.raw_output, update.content
                )
        elif isinstance(update, ToolCallUpdate):
            if update.status in ("completed", "failed"):
                self._close_run()
                self._tool_done(
                    update.tool_call_id, update.status, update.raw_output, update.content
                )
        elif isinstance(update, PlanUpdate):
            self._close_run()
            self.emit(PlanUpdated(entries=update.entries))
        elif isinstance(update, UsageUpdate):
            self._close_run()
            cost = update.cost.amount if update.cost is not None else None
            self.emit(UsageUpdated(used=update.used, size=update.size, cost_usd=cost))

    def _tool_done(
        self, call_id: str, status: ToolCallStatus, raw_output: Any, content: Any
    ) -> None:
        if call_id in self._finished:
            return
        self._finished.add(call_id)
        output = raw_output.get("output") if isinstance(raw_output, dict) else None
        if output is None and content:
            output = "\n".join(
                item.content.text
                for item in content
                if isinstance(item, ContentToolCallContent)
                and isinstance(item.content, TextContent)
            )
        if was_refused(raw_output, output):
            self.denied = True
        self.emit(
            ToolCompleted(tool_call_id=call_id, status=status, output=output, raw_output=raw_output)
        )

    def turn_completed(
        self,
        result: PromptResult,
        exit_code: int,
        final_text: str | None = None,
        output: StructuredOutput | None = None,
    ) -> None:
        self._close_run()
        meta = result.meta.cody if result.meta is not None else None
        self.emit(
            TurnCompleted(
                stop_reason=result.stop_reason,
                exit_code=exit_code,
                turn_id=meta.turn_id if meta else None,
                usage=meta.usage if meta else None,
                cost=meta.cost if meta else None,
                denied=self.denied,
                final_text=final_text,
                output=output,
            )
        )
        self.finished = True

    def error(
        self, message: str, exit_code: int, code: int | None = None, data: Any = None
    ) -> None:
        self._close_run()
        self.emit(ErrorEvent(message=message, exit_code=exit_code, code=code, data=data))
        self.finished = True
