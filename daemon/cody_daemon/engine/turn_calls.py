"""The tool calls of one native turn: each opened (shown pending), decided by the gate
(engine/approvals.py), run under its time limit, checked for new diagnostics, and finished
(its output in the history and the file, its last update to the client).

Invariants: every call opened is finished exactly once (`finish`, or `close_open` when the
turn ends first), also when its tool raised, its arguments broke the policy checks, or the
disk is full (the client then still sees it closed); a result is redacted before it is
stored or sent; a failing call fails, never the turn; `on-failure` asks at most once to run
a failed sandboxed command again outside the sandbox; a command's `` !`cmd` `` call
(`run_detached`) is shown and decided like any other but never enters the model's history.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from cody_protocol.content import ToolCallContent
from cody_protocol.updates import ToolCallLocation

from ..core.history import FunctionCallOutputItem
from ..errors import StorageError
from ..providers.base import ToolCallRequested
from ..tools.base import PlanStatus, Tool, ToolContext, ToolError, ToolResult
from ..tools.registry import ToolRegistry
from .approvals import CallGate, Decided, Rerun, TurnCancelled
from .checkpoints import may_change_files
from .diagnostics import EditChecks
from .edited_input import edited_note
from .editor_files import editor_files_for
from .events import (
    CallDecision,
    PlanChanged,
    ToolCallOpened,
    ToolCallOutput,
    ToolCallOutputEnd,
    ToolCallProgress,
)
from .secrets import redact_result
from .session import Session
from .time_limit import run_with_time_limit
from .tool_images import admit_tool_images
from .toolcalls import (
    DescribedCall,
    LiveOutput,
    ProgressThrottle,
    call_display,
    describe_call,
    error_result,
    text_content,
    unusable_arguments,
    wire_raw_output,
)
from .turn_env import TurnEnv
from .turn_hooks import TurnHooks, TurnStopped, hook_input

__all__ = ["OpenCall", "TurnCalls"]

logger = logging.getLogger(__name__)

RERUN_TAIL_CHARS = 2000
"""How much of a failed command's output the on-failure question shows."""


@dataclass(slots=True)
class OpenCall:
    """A call shown to the client and not finished yet."""

    call_id: str
    name: str
    title: str = ""
    kind: str = "other"
    locations: list[ToolCallLocation] = field(default_factory=list)
    plan: list[tuple[str, str]] | None = None
    """The plan the call published (`updatePlan`), kept for the replay."""
    decision: CallDecision | None = None
    """What decided that the call runs (kept for the replay)."""


class TurnCalls:
    """The calls of the turn `turn_id` of `session` (one per TurnRunner)."""

    def __init__(
        self,
        session: Session,
        env: TurnEnv,
        *,
        turn_id: str,
        hooks: TurnHooks,
        emit: Callable[[Any], None],
    ) -> None:
        self.session = session
        self.env = env
        self._turn_id = turn_id
        self._hooks = hooks
        self._emit = emit
        self.open_calls: dict[str, OpenCall] = {}
        self.failure_seen = False
        """A call of this turn failed (`on-failure` and the policy weigh it)."""
        self._detached: dict[str, ToolResult | None] = {}
        """Calls of a command's !`cmd`s, not in the model's history: their results."""
        self._gate = CallGate(
            session,
            env.link,
            turn_id=turn_id,
            allowed=env.allowed,
            secrets=env.secrets,
            rules_file=env.rules_file,
            refresh_rules=env.refresh_rules,
            hooks=hooks,
        )
        self._checks = EditChecks(
            env.code,
            session,
            env=env.secrets.child_environment(env.env),
            hidden_files=env.sandbox.hidden_files,
            emit=emit,
            redact=env.secrets.redact,
        )

    async def run_detached(
        self, call: ToolCallRequested, offered: ToolRegistry, absent: Mapping[str, str]
    ) -> ToolResult | None:
        """Run `call` as the user sees it and the approvals decide, outside the model's
        history (a command's `` !`cmd` ``); its result (None: it did not run)."""
        self._detached[call.call_id] = None
        await self.run_batch([call], offered, absent)
        return self._detached.pop(call.call_id, None)

    async def run_batch(
        self, calls: list[ToolCallRequested], offered: ToolRegistry, absent: Mapping[str, str]
    ) -> None:
        """Open every call of a model's answer, then run them in order (`offered`: the tools
        the model was offered; `absent`: the others, with why)."""
        cwd = self.session.cwd
        described = [
            describe_call(offered, c.name, c.arguments, cwd=cwd, absent=absent) for c in calls
        ]
        for call, info in zip(calls, described, strict=True):
            self.open(call, info)
        for call, info in zip(calls, described, strict=True):
            await self._run_call(call, info)

    def open(self, call: ToolCallRequested, info: DescribedCall) -> None:
        """The call is open: shown to the client as pending, to be finished (`finish`)."""
        self.open_calls[call.call_id] = OpenCall(
            call.call_id, call.name, info.title, info.kind, info.locations
        )
        live = info.error is None and info.tool is not None and info.tool.live_output
        self._emit(
            ToolCallOpened(
                call_id=call.call_id,
                title=info.title,
                kind=info.kind,
                raw_input=info.raw_input,
                live_cwd=str(self.session.cwd) if live else None,
                locations=info.locations or None,
            )
        )

    async def _run_call(self, call: ToolCallRequested, info: DescribedCall) -> None:
        if info.error is not None or info.tool is None or info.args is None:
            self.finish(call.call_id, error_result(info.error or "invalid call"))
            self.failure_seen = True
            return
        tool, args = info.tool, info.args
        live = LiveOutput(lambda text: self._emit_live_output(call.call_id, text))
        progress = ProgressThrottle(call.call_id, self._emit, self.env.secrets.redact)
        ctx = ToolContext(
            session_id=self.session.id,
            call_id=call.call_id,
            cwd=self.session.cwd,
            sandbox=self.env.sandbox,
            on_output=live.add if tool.live_output else None,
            env=self.env.env,
            tool_config=self.session.settings.tool_config,
            on_plan=lambda entries: self._publish_plan(call.call_id, entries),
            secrets=self.env.secrets,
            files=editor_files_for(self.env.link, self.session.id),
            processes=self.session.processes,
            turn_id=self._turn_id,
            on_progress=progress,
        )
        self._checks.begin(tool, info.locations)  # servers learn the files before the edit
        decided = await self._decide(call.call_id, info, ctx)
        if decided is None:
            return
        if decided.edited is not None:  # the user edited the arguments: those run
            info = decided.edited
            assert info.args is not None
            args = info.args
            self._checks.begin(tool, info.locations)  # the files it edits now
        try:
            result = await self._execute(
                call.call_id, tool=tool, args=args, ctx=ctx, live=live, decided=decided
            )
        finally:
            progress.close()  # a late report must not reopen the finished call
        if self._may_rerun(tool, ctx, result):
            result = await self._rerun(call.call_id, info, ctx, result)
        result = await self._checks.finish(call.call_id, tool, result)  # diagnostics
        if not result.success:
            self.failure_seen = True
        continues = result.continues  # the process runs on: its output continues the call's
        if decided.edited is not None:
            result = edited_note(result, decided.edited.raw_input)
        self.finish(call.call_id, result, live_continues=continues is not None)
        if continues is not None:
            continues()
        if self._hooks.wants("PostToolUse"):
            await self._hooks.post_tool(
                tool.name,
                hook_input(args, self.session.cwd),
                call.call_id,
                redact_result(self.env.secrets, result),
            )

    async def _decide(
        self, call_id: str, info: DescribedCall, ctx: ToolContext, rerun: Rerun | None = None
    ) -> Decided | None:
        """The gate's decision (None: the call was closed without running)."""
        assert info.tool is not None
        try:
            decided = await self._gate.decide(
                call_id=call_id,
                info=info,
                ctx=ctx,
                failure_seen=self.failure_seen,
                rerun=rerun,
            )
        except (TurnCancelled, TurnStopped):
            raise
        except Exception as exc:  # e.g. a NUL byte in a path: this call fails, not the turn
            logger.info(
                "%s: arguments the policy checks cannot handle", info.tool.name, exc_info=True
            )
            self.finish(call_id, error_result(unusable_arguments(info.tool.name, exc)))
            self.failure_seen = True
            return None
        if not decided.run:
            if rerun is not None:
                return decided
            self.finish(
                call_id,
                error_result(decided.message, {"refused": decided.refused}),
                decision=decided.decision,
            )
            if decided.refused == "sandbox":
                self.failure_seen = True
            return None
        ctx.outside_sandbox = decided.outside_sandbox
        ctx.write_anywhere = decided.write_anywhere
        call = self.open_calls.get(call_id)
        if call is not None:
            call.decision = decided.decision
        return decided

    async def _execute(
        self,
        call_id: str,
        *,
        tool: Tool[Any],
        args: Any,
        ctx: ToolContext,
        live: LiveOutput,
        decided: Decided,
    ) -> ToolResult:
        edited = decided.edited
        if self.env.checkpoint is not None and may_change_files(tool.kind):
            await self.env.checkpoint.before_change()  # the tree as the turn found it
        if edited is not None:  # show what runs now, not what the model asked for
            self._retitle(call_id, edited.title)
        self._emit(
            ToolCallProgress(
                call_id=call_id,
                status="in_progress",
                decision=decided.decision,
                title=edited.title if edited is not None else None,
                raw_input=edited.raw_input if edited is not None else None,
            )
        )
        try:
            result = await run_with_time_limit(
                tool.run(args, ctx),
                tool.time_limit_s(args, ctx),
                tool=tool.name,
                setting=tool.time_limit_setting(),
                paused=self.session.user_waited_s,
            )
        except ToolError as exc:
            result = error_result(exc.message, exc.raw_output)
        except (asyncio.CancelledError, TurnCancelled):
            live.close()  # output a stopping tool still writes is not shown after its end
            raise
        except Exception as exc:
            logger.exception("tool %s raised", tool.name)
            result = error_result(f"internal error in {tool.name}: {exc.__class__.__name__}: {exc}")
        finally:
            live.close()  # the rest of the stream goes out before the call's final update
        if result.live_end is not None:
            end = result.live_end
            self._emit(
                ToolCallOutputEnd(
                    call_id=call_id,
                    exit_code=end.exit_code,
                    signal=end.signal,
                    complete=end.complete and not live.cut,
                )
            )
        return result

    def _may_rerun(self, tool: Tool[Any], ctx: ToolContext, result: ToolResult) -> bool:
        """`on-failure`: a command that failed inside the sandbox may run again outside."""
        raw = result.raw_output or {}
        return (
            self.session.settings.approval_policy == "on-failure"
            and tool.kind == "execute"
            and not result.success
            and not ctx.outside_sandbox
            and raw.get("sandboxed") is True
        )

    async def _rerun(
        self, call_id: str, info: DescribedCall, ctx: ToolContext, failed: ToolResult
    ) -> ToolResult:
        """Ask once to run the failed command again outside the sandbox; the model gets the
        second run's result (or the first one's, when that is refused)."""
        assert info.tool is not None and info.args is not None
        raw = failed.raw_output or {}
        code = raw.get("exitCode")
        rerun = Rerun(
            exit_code=code if isinstance(code, int) else None,
            output_tail=self.env.secrets.redact(failed.output[-RERUN_TAIL_CHARS:]),
        )
        decided = await self._decide(call_id, info, ctx, rerun)
        if decided is None or not decided.run:
            return failed
        live = LiveOutput(lambda text: self._emit_live_output(call_id, text))
        ctx.on_output = live.add if info.tool.live_output else None
        edited = decided.edited
        args = edited.args if edited is not None else info.args
        second = await self._execute(
            call_id, tool=info.tool, args=args, ctx=ctx, live=live, decided=decided
        )
        second.output = (
            "The command failed inside the sandbox; the user let it run again outside it.\n"
            + second.output
        )
        return edited_note(second, edited.raw_input) if edited is not None else second

    def _retitle(self, call_id: str, title: str) -> None:
        call = self.open_calls.get(call_id)
        if call is not None:
            call.title = title

    def _publish_plan(self, call_id: str, entries: list[tuple[str, PlanStatus]]) -> None:
        call = self.open_calls.get(call_id)
        if call is not None:
            call.plan = list(entries)
        self._emit(PlanChanged(tuple(entries)))

    def finish(
        self,
        call_id: str,
        result: ToolResult,
        *,
        decision: CallDecision | None = None,
        live_continues: bool = False,
    ) -> None:
        result = redact_result(self.env.secrets, result)  # before it is stored or sent
        status: Literal["completed", "failed"] = "completed" if result.success else "failed"
        call = self.open_calls.pop(call_id, None)
        model_output = admit_tool_images(  # the images the model may get (notes for others)
            FunctionCallOutputItem(call_id=call_id, output=result.output, images=result.images),
            self.session.history,
            accepts_images=self.env.accepts_images,
            model=self.session.settings.model,
        )
        content: list[ToolCallContent] = result.content or text_content(model_output.output)
        closing = ToolCallProgress(  # the call's last update
            call_id=call_id,
            status=status,
            content=content,
            raw_output=wire_raw_output(result.output, result.raw_output),
            decision=decision,
        )
        if call_id in self._detached:  # a command's !`cmd`: shown, not the model's history
            self._detached[call_id] = result
            self._emit(closing)
            return
        item = FunctionCallOutputItem(
            call_id=call_id,
            output=model_output.output,
            images=model_output.images or None,
            status=status,
            raw_output=result.raw_output,
            display=call_display(
                title=call.title if call else None,
                kind=call.kind if call else None,
                locations=result.locations or (call.locations if call else []),
                content=content,
                plan=call.plan if call else None,
                decision=(decision or (call.decision if call else None)),
            ),
        )
        self.session.history.append(item)
        try:
            self.session.file.append("response_item", item.payload())
        finally:  # the client sees the call closed even when the disk is full
            locations = result.locations or None
            self._emit(replace(closing, locations=locations, live_continues=live_continues))

    def close_open(self, why: str) -> None:
        """Close every call still open as failed with `why` (the turn ends without them)."""
        for call_id in list(self.open_calls):
            with contextlib.suppress(StorageError):  # the turn already fails with it
                self.finish(call_id, error_result(why))

    def _emit_live_output(self, call_id: str, text: str) -> None:
        self._emit(ToolCallOutput(call_id, self.env.secrets.redact(text)))
