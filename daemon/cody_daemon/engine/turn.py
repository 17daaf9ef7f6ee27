"""One turn: model call -> tool calls -> approvals -> results -> model, until the model stops.

Invariants:
- at most `max_tool_iterations` model calls per turn, then stop `max_turn_requests`;
- an unknown tool, invalid arguments, a refused or failing call become error results for
  the model, and the turn goes on;
- every `tool_call` sent to the client reaches `completed` or `failed` before the turn
  returns, also when it is cancelled or the provider fails; the history then holds an
  output for every call, so any provider accepts it next turn;
- cancellation (task cancel, or `cancelled` chosen in an approval) keeps the partial
  assistant text and answers `cancelled`; provider errors propagate after cleanup.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cody_protocol.content import ToolCallContent
from cody_protocol.prompt import TokenUsage

from ..core.history import FunctionCallItem, FunctionCallOutputItem, user_message
from ..errors import StorageError
from ..ids import new_id
from ..policy.approval import Allow, Ask, CallFacts, Deny, decide
from ..policy.safe_commands import is_known_safe
from ..policy.sandbox import SandboxPolicy
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
from ..providers.pricing import Price, cost_usd
from ..store.reader import make_title
from ..tools.base import GrantKey, ToolContext, ToolError, ToolResult
from ..tools.registry import ToolRegistry
from .events import (
    AgentText,
    AgentThought,
    PlanChanged,
    TitleChanged,
    ToolCallOpened,
    ToolCallProgress,
    UsageChanged,
)
from .instructions import build_instructions
from .ports import ApprovalAnswer, ApprovalRequest, ClientLink
from .session import Session, TurnOutcome
from .streamed import SegmentCadence, StreamedItem
from .toolcalls import (
    DescribedCall,
    LiveOutput,
    argument_problem,
    describe_call,
    describe_grant,
    error_result,
    text_content,
    wire_raw_output,
)
from .usage import add_usage, usage_from_report

__all__ = ["TurnCancelled", "TurnEnv", "TurnRunner"]

logger = logging.getLogger(__name__)

DENIED = "User denied approval"


class TurnCancelled(Exception):
    """The client answered an approval with `cancelled`: the turn stops."""


@dataclass(kw_only=True)
class TurnEnv:
    provider: ModelProvider
    context_window: int
    tools: ToolRegistry
    allowed: frozenset[str] | None
    link: ClientLink
    sandbox: SandboxPolicy
    env: Mapping[str, str] = field(default_factory=dict)
    price: Price | None = None
    """The model's price, only when its calls are billed per token (else no cost is shown)."""


@dataclass(slots=True)
class _OpenCall:
    call_id: str
    name: str


@dataclass
class _TurnState:
    turn_id: str
    usage_turn: TokenUsage = field(default_factory=TokenUsage)
    usage_last: TokenUsage = field(default_factory=TokenUsage)
    failure_seen: bool = False
    cost_last: float = 0.0
    cost_turn: float = 0.0
    open_calls: dict[str, _OpenCall] = field(default_factory=dict)


class TurnRunner:
    def __init__(self, session: Session, env: TurnEnv) -> None:
        self.session = session
        self.env = env
        self.state = _TurnState(turn_id=new_id())

    # -- public ---------------------------------------------------------------------------

    async def run(self, prompt_text: str) -> TurnOutcome:
        session = self.session
        session.grants.turn_rejected.clear()
        settings = session.settings
        session.file.append(
            "turn_context",
            {"turnId": self.state.turn_id, "cwd": str(session.cwd), **settings.persisted()},
        )
        user_item = user_message(new_id("msg_"), prompt_text)
        session.file.append("response_item", user_item.payload())
        session.history.append(user_item)
        if session.title is None and prompt_text.strip():
            session.title = make_title(prompt_text)
            session.file.append("event", {"kind": "title", "title": session.title})
            self._emit(TitleChanged(session.title))
        stop = "end_turn"
        failure: BaseException | None = None
        try:
            stop = await self._loop()
        except asyncio.CancelledError:
            stop = "cancelled"
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        except TurnCancelled:
            stop = "cancelled"
        except BaseException as exc:
            failure = exc
        self._close_open_calls("cancelled" if failure is None else "the turn failed")
        try:
            session.file.append(
                "event",
                {
                    "kind": "turn_end",
                    "turnId": self.state.turn_id,
                    "stopReason": stop if failure is None else "error",
                },
            )
            await session.file.sync()
        except StorageError as exc:  # the disk is full: the turn ends with that error
            failure = failure or exc
        await self.env.link.flush(session.id)
        if failure is not None:
            raise failure
        return TurnOutcome(
            stop_reason=stop,
            turn_id=self.state.turn_id,
            last=self.state.usage_last,
            turn=self.state.usage_turn,
            total=session.usage_total,
            cost=(
                (self.state.cost_last, self.state.cost_turn, session.cost_total_usd)
                if self.env.price is not None
                else None
            ),
        )

    # -- the loop -------------------------------------------------------------------------

    async def _loop(self) -> str:
        settings = self.session.settings
        tools = self.env.tools.tools(self.env.allowed)
        specs = [tool.spec() for tool in tools]
        instructions = build_instructions(
            cwd=self.session.cwd,
            sandbox_mode=settings.sandbox_mode,
            approval_policy=settings.approval_policy,
            tools=[tool.name for tool in tools],
        )
        for _ in range(settings.max_tool_iterations):
            request = ModelRequest(
                model=settings.model,
                instructions=instructions,
                history=list(self.session.history),
                tools=specs,
                session_id=self.session.id,
                reasoning_effort=settings.reasoning_effort,
                reasoning_summary=settings.reasoning_summary,
            )
            calls, end = await self._model_call(request)
            if not calls:
                return {"max_tokens": "max_tokens", "refusal": "refusal"}.get(end, "end_turn")
            await self._run_calls(calls)
        logger.info("turn stopped after %d model calls", settings.max_tool_iterations)
        return "max_turn_requests"

    async def _model_call(self, request: ModelRequest) -> tuple[list[ToolCallRequested], str]:
        session = self.session
        # Streamed text reaches the file first, then the client (engine/streamed.py).
        cadence = SegmentCadence()
        message = StreamedItem(
            "message",
            session.history,
            session.file,
            emit=lambda text: self._emit(AgentText(text)),
            cadence=cadence,
        )

        def new_thought() -> StreamedItem:
            return StreamedItem(
                "reasoning",
                session.history,
                session.file,
                emit=lambda text: self._emit(AgentThought(text)),
                cadence=cadence,
            )

        thought = new_thought()
        calls: list[ToolCallRequested] = []
        end = "end_turn"
        usage: UsageReport | None = None
        try:
            async with contextlib.aclosing(self.env.provider.stream(request)) as stream:
                async for event in stream:
                    await self.env.link.wait_writable()  # back-pressure from a slow client
                    if isinstance(event, TextDelta):
                        message.add(event.text)
                    elif isinstance(event, ReasoningDelta):
                        thought.add(event.text)
                    elif isinstance(event, ReasoningDone):
                        if not thought.started and event.item.text:
                            thought.add(event.item.text)
                        thought.set_opaque(
                            encrypted_content=event.item.encrypted_content,
                            signature=event.item.signature,
                            provider=event.item.provider,
                        )
                        # One reasoning item per block: each carries its own signature.
                        thought.finish()
                        thought = new_thought()
                    elif isinstance(event, ToolCallRequested):
                        calls.append(event)
                    elif isinstance(event, UsageReport):
                        usage = event
                    elif isinstance(event, StreamEnd):
                        end = event.stop
        finally:
            thought.finish()
            message.finish()
        for call in calls:
            item = FunctionCallItem(call_id=call.call_id, name=call.name, arguments=call.arguments)
            session.history.append(item)
            session.file.append("response_item", item.payload())
        if usage is not None:
            self._record_usage(usage)
        return calls, end

    def _record_usage(self, report: UsageReport) -> None:
        session = self.session
        last = usage_from_report(report)
        self.state.usage_last = last
        self.state.usage_turn = add_usage(self.state.usage_turn, last)
        session.usage_total = add_usage(session.usage_total, last)
        event: dict[str, Any] = {
            "kind": "usage",
            "turnId": self.state.turn_id,
            "last": last.model_dump(),
            "total": session.usage_total.model_dump(),
        }
        cost_total: float | None = None
        if self.env.price is not None:
            self.state.cost_last = cost_usd(self.env.price, last)
            self.state.cost_turn += self.state.cost_last
            session.cost_total_usd += self.state.cost_last
            cost_total = session.cost_total_usd
            event["costUsd"] = {"last": self.state.cost_last, "total": cost_total}
        session.file.append("event", event)
        used = report.input_tokens + report.output_tokens
        self._emit(UsageChanged(used=used, size=self.env.context_window, cost_usd=cost_total))

    # -- tool calls -----------------------------------------------------------------------

    async def _run_calls(self, calls: list[ToolCallRequested]) -> None:
        described = [describe_call(self.env.tools, c.name, c.arguments) for c in calls]
        for call, info in zip(calls, described, strict=True):
            self.state.open_calls[call.call_id] = _OpenCall(call.call_id, call.name)
            self._emit(
                ToolCallOpened(
                    call_id=call.call_id, title=info.title, kind=info.kind, raw_input=info.raw_input
                )
            )
        for call, info in zip(calls, described, strict=True):
            await self._run_call(call, info)

    async def _run_call(self, call: ToolCallRequested, info: DescribedCall) -> None:
        if info.error is not None or info.tool is None or info.args is None:
            self._finish_call(call.call_id, error_result(info.error or "invalid call"))
            self.state.failure_seen = True
            return
        tool, args = info.tool, info.args
        live = LiveOutput(lambda text: self._emit_live_output(call.call_id, text))
        ctx = ToolContext(
            session_id=self.session.id,
            call_id=call.call_id,
            cwd=self.session.cwd,
            sandbox=self.env.sandbox,
            on_output=live.add,
            env=self.env.env,
            tool_config=self.session.settings.tool_config,
            on_plan=lambda entries: self._emit(PlanChanged(tuple(entries))),
        )
        problem = argument_problem(tool, args, ctx)
        if problem is not None:
            self._finish_call(call.call_id, error_result(problem))
            self.state.failure_seen = True
            return
        settings = self.session.settings
        grant_key = tool.grant_key(args, ctx)
        unsandboxed = tool.runs_unsandboxed(args, ctx)
        facts = CallFacts(
            tool_name=tool.name,
            requires_approval=tool.requires_approval,
            allowed_by_allowlist=self.env.allowed is None or tool.name in self.env.allowed,
            sandbox_violation=tool.sandbox_check(args, ctx),
            unsandboxed=unsandboxed,
            sandbox_unavailable=settings.sandbox_unavailable,
            known_safe=tool.name == "exec" and is_known_safe(getattr(args, "command", "")),
            grant_key=grant_key,
            policy=settings.approval_policy,
            failure_seen=self.state.failure_seen,
        )
        verdict = decide(facts, self.session.grants)
        if isinstance(verdict, Ask):
            allowed = await self._ask(
                call_id=call.call_id,
                tool_name=tool.name,
                info=info,
                grant_key=grant_key,
                unsandboxed=unsandboxed,
                ctx=ctx,
            )
            if not allowed:
                self._finish_call(call.call_id, error_result(DENIED))
                return
        elif isinstance(verdict, Deny):
            self._record_decision(call.call_id, tool.name, "deny", verdict.reason, grant_key)
            self._finish_call(call.call_id, error_result(verdict.message))
            if verdict.reason == "sandbox":
                self.state.failure_seen = True
            return
        else:
            assert isinstance(verdict, Allow)
            self._record_decision(call.call_id, tool.name, "allow", verdict.reason, grant_key)
        self._emit(ToolCallProgress(call_id=call.call_id, status="in_progress"))
        try:
            result = await tool.run(args, ctx)
        except ToolError as exc:
            result = error_result(exc.message, exc.raw_output)
        except (asyncio.CancelledError, TurnCancelled):
            raise
        except Exception as exc:
            logger.exception("tool %s raised", tool.name)
            result = error_result(f"internal error in {tool.name}: {exc.__class__.__name__}: {exc}")
        live.close()
        if not result.success:
            self.state.failure_seen = True
        self._finish_call(call.call_id, result)

    async def _ask(
        self,
        *,
        call_id: str,
        tool_name: str,
        info: DescribedCall,
        grant_key: GrantKey,
        unsandboxed: bool,
        ctx: ToolContext,
    ) -> bool:
        assert info.tool is not None and info.args is not None
        request = ApprovalRequest(
            call_id=call_id,
            title=info.title,
            kind=info.kind,
            raw_input=info.raw_input,
            content=info.tool.preview(info.args, ctx),
            grant_key=describe_grant(grant_key),
            sandboxed=(not unsandboxed) if info.tool.kind == "execute" else None,
        )
        reason = "user"
        answer: ApprovalAnswer
        try:
            answer = await asyncio.wait_for(
                self.env.link.request_approval(self.session.id, request),
                timeout=self.session.settings.approval_timeout_s,
            )
        except TimeoutError:
            answer, reason = "reject_once", "timeout"
        if answer == "invalid":
            answer, reason = "reject_once", "invalid answer"
        if answer == "cancelled":
            self._record_decision(call_id, tool_name, "cancelled", reason, grant_key)
            raise TurnCancelled()
        grants = self.session.grants
        if answer == "allow_session":
            grants.allowed.add(grant_key)
        elif answer == "reject_session":
            grants.rejected.add(grant_key)
        elif answer == "reject_once":
            grants.turn_rejected.add(grant_key)
        self._record_decision(call_id, tool_name, answer, reason, grant_key)
        return answer in ("allow_once", "allow_session")

    def _record_decision(
        self, call_id: str, tool: str, decision: str, reason: str, grant_key: GrantKey
    ) -> None:
        self.session.file.append(
            "event",
            {
                "kind": "approval",
                "turnId": self.state.turn_id,
                "callId": call_id,
                "tool": tool,
                "decision": decision,
                "reason": reason,
                "grantKey": list(grant_key),
            },
        )

    def _finish_call(self, call_id: str, result: ToolResult) -> None:
        status: Literal["completed", "failed"] = "completed" if result.success else "failed"
        item = FunctionCallOutputItem(
            call_id=call_id, output=result.output, status=status, raw_output=result.raw_output
        )
        self.session.history.append(item)
        self.state.open_calls.pop(call_id, None)
        content: list[ToolCallContent] = result.content or text_content(result.output)
        try:
            self.session.file.append("response_item", item.payload())
        finally:  # the client sees the call closed even when the disk is full
            self._emit(
                ToolCallProgress(
                    call_id=call_id,
                    status=status,
                    content=content,
                    raw_output=wire_raw_output(result.output, result.raw_output),
                )
            )

    def _close_open_calls(self, why: str) -> None:
        for call_id in list(self.state.open_calls):
            with contextlib.suppress(StorageError):  # the turn already fails with it
                self._finish_call(call_id, error_result(why))

    def _emit_live_output(self, call_id: str, text: str) -> None:
        self._emit(ToolCallProgress(call_id=call_id, content=text_content(text)))

    def _emit(self, event: Any) -> None:
        self.env.link.emit(self.session.id, event)
