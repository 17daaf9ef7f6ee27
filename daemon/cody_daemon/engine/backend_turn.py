"""One turn of a codex/claude session: the agent CLI runs it, the engine shows and keeps it.

The same contract as the native TurnRunner (engine/turn.py), so clients, the session file,
`session/load` replay and resume cannot tell the loops apart:
- the user message, streamed text and thoughts, tool calls and their results, usage, cost,
  approvals and the turn end are written to the session file in the native format; the
  CLI's own conversation id is written as a `backend` event as soon as it is known;
- every `tool_call` sent to the client reaches `completed` or `failed` before the turn
  returns (also on cancel, timeout or a CLI failure), and the history holds an output for
  every call;
- each approval the CLI asks for goes through Cody's policy (policy/approval.py) with the
  facts Cody's own loop would have: the allowlist, the login-file refusal, the sandbox, session
  rejections and grants, then the approval policy (a Cody tool that needs no approval in
  Cody's loop needs none here; a command the CLI would run outside any sandbox while the
  session's sandbox mode asks for one counts as unsandboxed); only an `Ask` reaches the
  client, with the session's approval timeout;
- everything the CLI reports is redacted (engine/backend_guard.py) before it is stored or
  sent;
- cancel (task cancel, or `cancelled` chosen in an approval) and the per-turn timeout
  (`backend_timeout_s`) stop the CLI (interrupt, then kill its process tree) and keep the
  partial text; a CLI failure is raised as a classified `ProviderError` after cleanup.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cody_protocol.prompt import TokenUsage
from cody_protocol.updates import ToolCallLocation

from ..backends.base import (
    DENIED,
    AgentBackend,
    Answer,
    ApprovalAsk,
    BackendEvent,
    BackendSettings,
    CostReported,
    PlanUpdated,
    ResumeIdAssigned,
    TextDelta,
    ThoughtDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    UsageReported,
)
from ..backends.failures import cli_timeout
from ..core.history import FunctionCallItem, FunctionCallOutputItem, user_message
from ..core.tooling import ToolFacts
from ..errors import ProviderError
from ..ids import new_id
from ..policy.approval import Allow, CallFacts, Deny, decide, decided_by
from ..policy.rule_proposals import propose_rules
from ..policy.rules import allow_rule_void, subject_from_grant_key
from ..providers.pricing import Price, cost_usd, price_for
from .backend_guard import BackendGuard
from .checkpoints import TurnCheckpoint
from .events import (
    AgentText,
    AgentThought,
    CallDecision,
    PlanChanged,
    TitleChanged,
    ToolCallOpened,
    ToolCallProgress,
    UsageChanged,
)
from .ports import ApprovalAnswer, ApprovalReply, ApprovalRequest, ClientLink
from .session import Session, TurnOutcome
from .settings import BACKEND_DEFAULT_MODEL
from .streamed import StreamedItem
from .toolcalls import LiveOutput, describe_grant, text_content, wire_raw_output
from .usage import add_usage

__all__ = ["BackendTurnRunner"]

logger = logging.getLogger(__name__)

DEFAULT_WINDOW = 200_000


class _Cancelled(Exception):
    """The client chose `cancelled` in an approval: the turn stops."""


@dataclass
class _Turn:
    turn_id: str
    usage_turn: TokenUsage = field(default_factory=TokenUsage)
    usage_last: TokenUsage = field(default_factory=TokenUsage)
    cost_last: float = 0.0
    cost_turn: float = 0.0
    costed: bool = False
    failure_seen: bool = False
    open_calls: set[str] = field(default_factory=set)
    running: set[str] = field(default_factory=set)
    live: dict[str, LiveOutput] = field(default_factory=dict)


class BackendTurnRunner:
    def __init__(
        self,
        session: Session,
        agent: AgentBackend,
        link: ClientLink,
        price: Price | None,
        guard: BackendGuard,
        *,
        checkpoint: TurnCheckpoint | None = None,
        rules_file: Path | None = None,
        refresh_rules: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.session = session
        self.checkpoint = checkpoint
        """The CLI changes files unseen: the checkpoint is complete before it starts."""
        self.agent = agent
        self.link = link
        self.price = price
        self.guard = guard
        self.rules_file = rules_file
        """The user config, where `allow_project` saves rules (None: not offered)."""
        self.refresh_rules = refresh_rules
        self.state = _Turn(turn_id=new_id())
        self._message: StreamedItem | None = None
        self._thought: StreamedItem | None = None
        self._window = DEFAULT_WINDOW

    def backend_settings(self) -> BackendSettings:
        return backend_settings_of(
            self.session,
            self.guard.tool_facts,
            protected=self.guard.protected,
            hidden_files=self.guard.secrets.sources.login_files,
        )

    async def run(self, prompt_text: str) -> TurnOutcome:
        session = self.session
        session.grants.turn_rejected.clear()
        session.file.append(
            "turn_context",
            {
                "turnId": self.state.turn_id,
                "cwd": str(session.cwd),
                **session.settings.persisted(),
            },
        )
        item = user_message(new_id("msg_"), prompt_text)
        session.history.append(item)
        session.file.append("response_item", item.payload())
        if self.checkpoint is not None:
            self.checkpoint.start(self.state.turn_id)
        if (title := session.title_from_prompt(prompt_text)) is not None:
            self._emit(TitleChanged(title))
        stop = "end_turn"
        failure: BaseException | None = None
        timeout = session.settings.backend_timeout_s
        try:
            if self.refresh_rules is not None:
                await self.refresh_rules()
            if self.checkpoint is not None:
                await self.checkpoint.before_change()
            stop = await asyncio.wait_for(
                self.agent.run_turn(
                    prompt_text, self.backend_settings(), self._on_event, self._approve
                ),
                timeout,
            )
        except asyncio.CancelledError:
            stop = "cancelled"
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await self.agent.stop()
        except _Cancelled:
            stop = "cancelled"
            await self.agent.stop()
        except TimeoutError:
            failure = cli_timeout(self.agent.kind, timeout)
            await self.agent.stop()
        except ProviderError as exc:
            failure = exc
            await self.agent.stop()
        except Exception as exc:
            logger.exception("the %s backend failed", self.agent.kind)
            failure = exc
            await self.agent.stop()
        self._finish_text()
        self._close_open_calls("cancelled" if failure is None else "the turn failed")
        if self.checkpoint is not None:
            await self.checkpoint.finish()
        failure = await session.record_turn_end(self.state.turn_id, stop, failure)
        await self.link.flush(session.id)
        if failure is not None:
            raise failure
        state = self.state
        return TurnOutcome(
            stop_reason=stop,
            turn_id=state.turn_id,
            last=state.usage_last,
            turn=state.usage_turn,
            total=session.usage_total,
            cost=(
                (state.cost_last, state.cost_turn, session.cost_total_usd) if state.costed else None
            ),
        )

    # -- events -----------------------------------------------------------------------------

    def _on_event(self, event: BackendEvent) -> None:
        event = self.guard.redact_event(event)  # before anything is stored or sent
        if isinstance(event, TextDelta):
            if self._thought is not None:
                self._thought.finish()
                self._thought = None
            if self._message is None:
                self._message = StreamedItem("message", self.session.history, self.session.file)
            self._message.add(event.text)
            self._emit(AgentText(event.text))
        elif isinstance(event, ThoughtDelta):
            if self._message is not None:
                self._message.finish()
                self._message = None
            if self._thought is None:
                self._thought = StreamedItem("reasoning", self.session.history, self.session.file)
            self._thought.add(event.text)
            self._emit(AgentThought(event.text))
        elif isinstance(event, ToolStarted):
            self._tool_started(event)
        elif isinstance(event, ToolOutput):
            self._tool_output(event)
        elif isinstance(event, ToolFinished):
            self._tool_finished(event)
        elif isinstance(event, PlanUpdated):
            self._emit(PlanChanged(event.entries))
        elif isinstance(event, UsageReported):
            self._usage(event)
        elif isinstance(event, CostReported):
            self._cost(event.cost_usd)
        elif isinstance(event, ResumeIdAssigned):
            self.session.backend_resume_id = event.resume_id
            self.session.file.append(
                "event",
                {"kind": "backend", "backend": self.agent.kind, "resumeId": event.resume_id},
            )

    def _finish_text(self) -> None:
        for item in (self._message, self._thought):
            if item is not None:
                item.finish()
        self._message = self._thought = None

    def _tool_started(self, event: ToolStarted) -> None:
        if event.call_id in self.state.open_calls:
            return
        self._finish_text()
        call = FunctionCallItem(
            call_id=event.call_id,
            name=event.tool,
            arguments=event.arguments,
            title=event.title,
            kind=event.kind,
        )
        self.session.history.append(call)
        self.session.file.append("response_item", call.payload())
        self.state.open_calls.add(event.call_id)
        self._emit(
            ToolCallOpened(
                call_id=event.call_id,
                title=event.title,
                kind=event.kind,
                raw_input=event.raw_input,
                content=event.content,
                locations=[ToolCallLocation(path=path) for path in event.locations] or None,
            )
        )

    def _running(self, call_id: str, decision: CallDecision | None = None) -> None:
        if call_id in self.state.open_calls and call_id not in self.state.running:
            self.state.running.add(call_id)
            self._emit(ToolCallProgress(call_id=call_id, status="in_progress", decision=decision))

    def _tool_output(self, event: ToolOutput) -> None:
        if event.call_id not in self.state.open_calls:
            return
        self._running(event.call_id)
        live = self.state.live.get(event.call_id)
        if live is None:
            call_id = event.call_id
            live = LiveOutput(
                lambda text: self._emit(
                    ToolCallProgress(call_id=call_id, content=text_content(text))
                )
            )
            self.state.live[call_id] = live
        live.add(event.text)

    def _tool_finished(self, event: ToolFinished) -> None:
        if event.call_id not in self.state.open_calls:
            return
        live = self.state.live.pop(event.call_id, None)
        if live is not None:
            live.close()
        self._finish_call(
            event.call_id, event.status, event.output, event.content, event.raw_output
        )
        if event.status == "failed":
            self.state.failure_seen = True

    def _finish_call(
        self,
        call_id: str,
        status: str,
        output: str,
        content: Any = None,
        raw_output: dict[str, Any] | None = None,
    ) -> None:
        result_status: Literal["completed", "failed"] = (
            "completed" if status == "completed" else "failed"
        )
        item = FunctionCallOutputItem(
            call_id=call_id, output=output, status=result_status, raw_output=raw_output
        )
        self.session.history.append(item)
        self.session.file.append("response_item", item.payload())
        self.state.open_calls.discard(call_id)
        self.state.running.discard(call_id)
        self._emit(
            ToolCallProgress(
                call_id=call_id,
                status=result_status,
                content=content or text_content(output),
                raw_output=wire_raw_output(output, raw_output),
            )
        )

    def _close_open_calls(self, why: str) -> None:
        for call_id in sorted(self.state.open_calls):
            self._finish_call(call_id, "failed", f'{{"error": "{why}"}}', text_content(why))

    def _usage(self, event: UsageReported) -> None:
        session, state = self.session, self.state
        counts = event.last
        last = TokenUsage(
            input_tokens=counts.input,
            output_tokens=counts.output,
            total_tokens=counts.input + counts.output,
            thought_tokens=counts.reasoning,
            cached_read_tokens=counts.cached_read,
            cached_write_tokens=counts.cached_write,
        )
        state.usage_last = last
        state.usage_turn = add_usage(state.usage_turn, last)
        session.usage_total = add_usage(session.usage_total, last)
        line: dict[str, Any] = {
            "kind": "usage",
            "turnId": state.turn_id,
            "last": last.model_dump(),
            "total": session.usage_total.model_dump(),
        }
        if self.price is None and self.agent.priced_model is not None:
            self.price = price_for(*self.agent.priced_model)
        if self.price is not None:
            cost = cost_usd(self.price, last)
            state.cost_last = cost
            state.cost_turn += cost
            state.costed = True
            session.cost_total_usd += cost
            line["costUsd"] = {"last": cost, "total": session.cost_total_usd}
        session.file.append("event", line)
        self._window = event.context_window or self._window
        self._emit(
            UsageChanged(
                used=counts.input + counts.output,
                size=self._window,
                cost_usd=session.cost_total_usd if state.costed else None,
            )
        )

    def _cost(self, amount: float) -> None:
        """A turn cost the agent computed itself (recorded as a usage event without tokens)."""
        session, state = self.session, self.state
        state.cost_last = amount
        state.cost_turn += amount
        state.costed = True
        session.cost_total_usd += amount
        session.file.append(
            "event",
            {
                "kind": "usage",
                "turnId": state.turn_id,
                "last": TokenUsage().model_dump(),
                "total": session.usage_total.model_dump(),
                "costUsd": {"last": amount, "total": session.cost_total_usd},
            },
        )
        last = state.usage_last
        self._emit(
            UsageChanged(
                used=last.input_tokens + last.output_tokens,
                size=self._window,
                cost_usd=session.cost_total_usd,
            )
        )

    # -- approvals --------------------------------------------------------------------------

    async def _approve(self, ask: ApprovalAsk) -> Answer:
        session = self.session
        settings = session.settings
        allowed = self.backend_settings().allowed_tools
        refusal = await asyncio.to_thread(self.guard.credential_refusal, ask)
        ask = self.guard.redact_ask(ask)
        tool = ask.cody_tool or ask.title
        subject = subject_from_grant_key(ask.grant_key, session.cwd)
        declared = self.guard.tool_facts.get(ask.cody_tool) if ask.cody_tool else None
        rule = settings.rules.evaluate(tool, subject, declared)
        void = await asyncio.to_thread(allow_rule_void, rule, subject, os.environ) if rule else None
        facts = CallFacts(
            tool_name=tool,
            requires_approval=self.guard.requires_approval(ask),
            allowed_by_allowlist=allowed is None or (ask.cody_tool in allowed),
            sandbox_violation=ask.sandbox_violation,
            credential_refusal=refusal,
            unsandboxed=ask.runs_unsandboxed and settings.sandbox_mode != "danger-full-access",
            sandbox_unavailable=settings.sandbox_unavailable,
            no_sandbox_because=f"{self.agent.display_name} would run it outside any sandbox",
            known_safe=ask.known_safe,
            grant_key=ask.grant_key,
            policy=settings.approval_policy,
            failure_seen=self.state.failure_seen,
            rule=rule,
            allow_rule_void=void,
        )
        verdict = decide(facts, session.grants)
        if isinstance(verdict, Deny):
            by, detail = decided_by(verdict)
            self._record(ask, tool, "deny", verdict.reason, CallDecision(by, detail, "deny"))  # type: ignore[arg-type]
            if verdict.reason == "sandbox":
                self.state.failure_seen = True
            return Answer("reject_once", verdict.message)
        if isinstance(verdict, Allow):
            by, detail = decided_by(verdict)
            decision = CallDecision(by, detail, "allow")  # type: ignore[arg-type]
            self._record(ask, tool, "allow", verdict.reason, decision)
            self._running(ask.call_id, decision)
            return Answer("allow_session" if verdict.reason == "grant" else "allow_once")
        proposal = None
        if verdict.rule is None and self.rules_file is not None:
            proposal = propose_rules(tool, subject, session.cwd, declared)
        request = ApprovalRequest(
            call_id=ask.call_id,
            title=ask.title,
            kind=ask.kind,
            raw_input=ask.raw_input,
            content=ask.content,
            grant_key=describe_grant(self._shown_key(ask)),
            sandboxed=(not ask.runs_unsandboxed) if ask.kind == "execute" else None,
            project_rules=proposal,
            project=str(session.cwd) if proposal else None,
        )
        reason = "user"
        try:
            reply = await asyncio.wait_for(
                self.link.request_approval(session.id, request),
                timeout=settings.approval_timeout_s,
            )
        except TimeoutError:
            reply, reason = ApprovalReply("reject_once"), "timeout"
        answer: ApprovalAnswer = reply.answer
        if answer == "invalid" or (answer == "allow_project" and not proposal):
            answer, reason = "reject_once", "invalid answer"
        elif reply.updated_input is not None:
            # The agent CLI runs its own call: an edited one cannot be put in its place, and
            # running the original instead of what the user approved would be wrong.
            answer, reason = "reject_once", "edited input (not supported by agent CLIs)"
            decision = CallDecision(
                "user",
                f"the user edited the input, which {self.agent.display_name} cannot run",
                "deny",
            )
            self._record(ask, tool, answer, reason, decision)
            session.grants.turn_rejected.add(ask.grant_key)
            return Answer(
                "reject_once",
                f"{DENIED}: the user edited this call's input, which this agent cannot run",
            )
        detail = f"answered {answer}" if reason == "user" else reason
        if answer == "allow_project" and proposal:
            detail = await self._save_rules(proposal)
        outcome: Literal["allow", "deny"] = (
            "allow" if answer in ("allow_once", "allow_session", "allow_project") else "deny"
        )
        decision = CallDecision("timeout" if reason == "timeout" else "user", detail, outcome)
        self._record(ask, tool, answer, reason, decision)
        if answer == "cancelled":
            raise _Cancelled()
        grants = session.grants
        if answer in ("allow_session", "allow_project"):
            grants.allowed.add(ask.grant_key)
        elif answer == "reject_session":
            grants.rejected.add(ask.grant_key)
        elif answer == "reject_once":
            grants.turn_rejected.add(ask.grant_key)
        if outcome == "allow":
            self._running(ask.call_id, decision)
            remembered = answer in ("allow_session", "allow_project")
            return Answer("allow_session" if remembered else "allow_once")
        refused: Literal["reject_once", "reject_session"] = (
            "reject_session" if answer == "reject_session" else "reject_once"
        )
        return Answer(refused, f"{DENIED}: {reply.message}" if reply.message else DENIED)

    async def _save_rules(self, rules: list[str]) -> str:
        """`allow_project`: the rules saved to the user config, as for Cody's own loop."""
        from .approvals import save_project_rules

        assert self.rules_file is not None
        return await save_project_rules(
            self.rules_file,
            str(self.session.cwd),
            rules,
            self.refresh_rules,
            "allowed for this project",
        )

    def _record(
        self, ask: ApprovalAsk, tool: str, decision: str, reason: str, audit: CallDecision
    ) -> None:
        self.session.file.append(
            "event",
            {
                "kind": "approval",
                "turnId": self.state.turn_id,
                "callId": ask.call_id,
                "tool": tool,
                "decision": decision,
                "reason": reason,
                "grantKey": list(self._shown_key(ask)),
                "by": audit.by,
                "detail": audit.detail,
            },
        )

    def _shown_key(self, ask: ApprovalAsk) -> tuple[str, ...]:
        """The grant key as stored and shown (redacted; the key itself stays exact)."""
        return tuple(self.guard.secrets.redact(part) for part in ask.grant_key)

    def _emit(self, event: Any) -> None:
        self.link.emit(self.session.id, event)


def backend_settings_of(
    session: Session,
    tool_facts: Mapping[str, ToolFacts],
    *,
    protected: tuple[Path, ...] = (),
    hidden_files: tuple[Path, ...] = (),
) -> BackendSettings:
    """The session's settings as a backend takes them (`tool_facts`: what Cody's tools can
    do, `ToolRegistry.facts()`; `protected`: Cody's own directories; `hidden_files`: the
    login files)."""
    from ..policy.allowlist import allowed_tools

    settings = session.settings
    return BackendSettings(
        approval_policy=settings.approval_policy,
        sandbox_mode=settings.sandbox_mode,
        model=None if settings.model == BACKEND_DEFAULT_MODEL else settings.model,
        reasoning_effort=settings.reasoning_effort,
        allowed_tools=allowed_tools(settings.allowed_tools, settings.phase, tool_facts),
        tool_facts=tool_facts,
        project_trusted=settings.project_trusted,
        protected=protected,
        hidden_files=hidden_files,
    )
