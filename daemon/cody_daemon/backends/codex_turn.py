"""One turn of the Codex CLI, translated: its app-server events in, `BackendEvent`s out, and each
approval it asks put to Cody (backends/codex_app_server.py says how the CLI is driven).

Events (typed in codex_protocol.py): `item/started`, `item/completed`,
`item/agentMessage/delta`, `item/reasoning/*Delta`, `item/commandExecution/outputDelta`,
`turn/plan/updated`, `thread/tokenUsage/updated`, `error`, `turn/completed {turn: {status,
error}}`. Approvals are server requests (`item/commandExecution/requestApproval`,
`item/fileChange/requestApproval`) answered `accept` / `acceptForSession` / `decline` (the
turn goes on) / `cancel` (the turn stops).

Invariants:
- events of another turn (a late event of an interrupted one) are ignored;
- a server request other than the two approvals is answered with an error (Codex counts
  that as a decline), never left pending;
- what an approval asks Cody (and how a tool item looks) is backends/codex_tools.py's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from ..errors import ProviderError
from .base import (
    Answer,
    ApprovalAsk,
    Decision,
    PlanStatus,
    PlanUpdated,
    StopReason,
    TextDelta,
    ThoughtDelta,
    TokenCounts,
    ToolFinished,
    ToolOutput,
    TurnIO,
    UsageReported,
)
from .codex_protocol import (
    AgentMessageDeltaNotification,
    CommandExecutionApprovalDecision,
    CommandExecutionOutputDeltaNotification,
    CommandExecutionRequestApprovalParams,
    CommandExecutionThreadItem,
    ErrorNotification,
    FileChangeRequestApprovalParams,
    ItemCompletedNotification,
    ItemStartedNotification,
    McpToolCallThreadItem,
    NotificationMethod,
    ReasoningSummaryPartAddedNotification,
    ReasoningThreadItem,
    ThreadItem,
    ThreadTokenUsage,
    ThreadTokenUsageUpdatedNotification,
    TokenUsageBreakdown,
    Turn,
    TurnCompletedNotification,
    TurnError,
    TurnPlanStep,
    TurnPlanStepStatus,
    TurnPlanUpdatedNotification,
)
from .codex_tools import command_ask, command_finished, describe_item, edit_ask
from .failures import classify
from .peer import Message, view

if TYPE_CHECKING:
    from .codex_app_server import CodexBackend

__all__ = ["CodexTurn", "RpcFailed"]

_OUTPUT_TAIL: Final = 8192
_DECISIONS: Final[dict[Decision, CommandExecutionApprovalDecision]] = {
    "allow_once": "accept",
    "allow_session": "acceptForSession",
    "reject_once": "decline",
    "reject_session": "decline",
    "cancelled": "cancel",
}
_PLAN_STATUS: Final[dict[TurnPlanStepStatus, PlanStatus]] = {
    "pending": "pending",
    "inProgress": "in_progress",
    "completed": "completed",
}
_APPROVALS: Final = ("item/commandExecution/requestApproval", "item/fileChange/requestApproval")


class RpcFailed(Exception):
    """The CLI answered a request with an error."""

    def __init__(self, method: str, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else str(error)
        super().__init__(f"{method}: {message}")
        self.detail = str(message)


class CodexTurn:
    """The events of one turn, translated (see the module docstring)."""

    def __init__(self, backend: CodexBackend, thread_id: str, turn_id: str, io: TurnIO) -> None:
        self.backend = backend
        self.io = io
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.cwd: Path = backend.launch.cwd
        self.items: dict[str, ThreadItem] = {}
        """Tool items started in this turn (for approval previews and results)."""
        self.streamed: set[str] = set()
        """Message/reasoning items whose text arrived as deltas."""
        self.output: dict[str, str] = {}
        self.last_error: TurnError | None = None

    async def run(self) -> StopReason:
        while True:
            message = await self.backend.next_message()
            method = str(message.get("method", ""))
            params = message.get("params")
            params = params if isinstance(params, dict) else {}
            if "id" in message:
                await self._server_request(message["id"], method, params)
                continue
            if params.get("turnId") not in (None, self.turn_id):
                continue
            if method == "turn/completed":
                turn = view(Turn, view(TurnCompletedNotification, params).get("turn"))
                if turn.get("id") != self.turn_id:
                    continue
                return self._finish(turn)
            self._notification(cast(NotificationMethod, method), params)

    def _finish(self, turn: Turn) -> StopReason:
        status = turn.get("status")
        if status == "completed":
            return "end_turn"
        if status == "interrupted":
            return "cancelled"
        error = turn.get("error") or self.last_error
        raise _turn_error(view(TurnError, error))

    # notifications

    def _notification(self, method: NotificationMethod, params: Message) -> None:
        if method == "item/agentMessage/delta":
            delta = view(AgentMessageDeltaNotification, params)
            self.streamed.add(str(delta.get("itemId")))
            self.io.emit(TextDelta(str(delta.get("delta", ""))))
        elif method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            delta = view(AgentMessageDeltaNotification, params)  # the same fields
            self.streamed.add(str(delta.get("itemId")))
            self.io.emit(ThoughtDelta(str(delta.get("delta", ""))))
        elif method == "item/reasoning/summaryPartAdded":
            part = view(ReasoningSummaryPartAddedNotification, params)
            if _int(part.get("summaryIndex")) > 0:
                self.io.emit(ThoughtDelta("\n\n"))
        elif method == "item/started":
            self._item_started(_item(view(ItemStartedNotification, params).get("item")))
        elif method == "item/completed":
            self._item_completed(_item(view(ItemCompletedNotification, params).get("item")))
        elif method == "item/commandExecution/outputDelta":
            output = view(CommandExecutionOutputDeltaNotification, params)
            item_id, text = str(output.get("itemId")), str(output.get("delta", ""))
            self.output[item_id] = (self.output.get(item_id, "") + text)[-_OUTPUT_TAIL:]
            self.io.emit(ToolOutput(item_id, text))
        elif method == "turn/plan/updated":
            plan = view(TurnPlanUpdatedNotification, params).get("plan")
            steps = [view(TurnPlanStep, step) for step in plan if isinstance(step, dict)]
            entries = (
                tuple(
                    (str(step.get("step", "")), _PLAN_STATUS.get(step.get("status"), "pending"))
                    for step in steps
                )
                if isinstance(plan, list)
                else ()
            )
            self.io.emit(PlanUpdated(entries))
        elif method == "thread/tokenUsage/updated":
            usage = view(
                ThreadTokenUsage,
                view(ThreadTokenUsageUpdatedNotification, params).get("tokenUsage"),
            )
            last = view(TokenUsageBreakdown, usage.get("last"))
            window = usage.get("modelContextWindow")
            self.io.emit(
                UsageReported(
                    last=TokenCounts(
                        input=_int(last.get("inputTokens")),
                        output=_int(last.get("outputTokens")),
                        cached_read=_int(last.get("cachedInputTokens")),
                        cached_write=_int(last.get("cacheWriteInputTokens")),
                        reasoning=_int(last.get("reasoningOutputTokens")),
                    ),
                    context_window=window if isinstance(window, int) else None,
                )
            )
        elif method == "error":
            error = view(ErrorNotification, params)
            if not error.get("willRetry"):
                self.last_error = view(TurnError, error.get("error"))

    def _item_started(self, item: ThreadItem) -> None:
        started = describe_item(item, self.cwd)
        if started is None:
            return
        self.items[started.call_id] = item
        self.io.emit(started)

    def _item_completed(self, item: ThreadItem) -> None:
        kind = item.get("type")
        item_id = str(item.get("id", ""))
        if kind == "agentMessage":
            text = item.get("text")
            if item_id not in self.streamed and text:
                self.io.emit(TextDelta(str(text)))
            return
        if kind == "reasoning":
            if item_id not in self.streamed:
                summary = view(ReasoningThreadItem, item).get("summary")
                summary = summary if isinstance(summary, list) else []
                joined = "\n\n".join(str(s) for s in summary if s)
                if joined:
                    self.io.emit(ThoughtDelta(joined))
            return
        if item_id not in self.items:
            if describe_item(item, self.cwd) is None:
                return
            self._item_started(item)
        if kind == "commandExecution":
            command = view(CommandExecutionThreadItem, item)
            self.io.emit(command_finished(command, self.output.get(item_id, "")))
        elif kind == "fileChange":
            status = str(item.get("status", ""))
            ok = status == "completed"
            text = "applied" if ok else ("User denied approval" if status == "declined" else status)
            self.io.emit(
                ToolFinished(call_id=item_id, status="completed" if ok else "failed", output=text)
            )
        else:
            call = view(McpToolCallThreadItem, item)
            status = str(call.get("status", ""))
            error, result = call.get("error"), call.get("result")
            ok = status in ("completed", "") and not error
            text = json.dumps(result if ok else error) if (result or error) else status
            self.io.emit(
                ToolFinished(call_id=item_id, status="completed" if ok else "failed", output=text)
            )

    # approvals

    async def _server_request(self, request_id: Any, method: str, params: Message) -> None:
        if method not in _APPROVALS:
            self.backend.respond(request_id, error=f"{method} is not supported by Cody")
            return
        ask = await asyncio.to_thread(self._ask, method, params)  # reads git config files
        answer: Answer = await self.io.approve(ask)
        self.backend.respond(request_id, {"decision": _DECISIONS[answer.decision]})

    def _ask(self, method: str, params: Message) -> ApprovalAsk:
        item = self.items.get(str(params.get("itemId", "")))
        settings = self.io.settings
        if method == "item/commandExecution/requestApproval":
            request = view(CommandExecutionRequestApprovalParams, params)
            command = view(CommandExecutionThreadItem, item)
            return command_ask(request, command, self.cwd, settings, self.backend.launch.env)
        return edit_ask(view(FileChangeRequestApprovalParams, params), item, self.cwd, settings)


def _item(value: object) -> ThreadItem:
    return cast(ThreadItem, view(dict[str, Any], value))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _turn_error(error: TurnError) -> ProviderError:
    message = str(error.get("message") or "the turn failed")
    info = error.get("codexErrorInfo")
    status: int | None = None
    code: str | None = None
    if isinstance(info, str):
        code = info
    elif isinstance(info, dict) and info:
        code, detail = next(iter(info.items()))
        if isinstance(detail, dict) and isinstance(detail.get("httpStatusCode"), int):
            status = int(detail["httpStatusCode"])
    if error.get("additionalDetails"):
        message += f" ({error.get('additionalDetails')})"
    return classify("codex", message, status=status, code=code)
