"""One turn: model call -> tool calls -> approvals -> results -> model, until the model stops.

Invariants:
- at most `max_tool_iterations` model calls per turn, then stop `max_turn_requests`;
- an unknown tool, invalid arguments, a refused or failing call become error results for
  the model, and the turn goes on;
- every `tool_call` sent to the client reaches `completed` or `failed` before the turn
  returns, also when it is cancelled or the provider fails; the history then holds an
  output for every call, so any provider accepts it next turn;
- cancellation (task cancel, or `cancelled` chosen in an approval) keeps the partial
  assistant text and answers `cancelled`; provider errors propagate after cleanup;
- every event of the turn is handed to the link before `run` returns (then the prompt is
  answered); nothing is emitted for the turn afterwards;
- messages steered into the turn (engine/steering.py) are taken before each model call, and
  end a model call that streams with no tool call yet; the inbox closes when the turn
  decides to end, and what it still holds then is recorded before the turn ends;
- with an output schema (engine/final_answer.py) the turn ends once the final answer
  validated, or failed twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from cody_protocol.content import ToolCallContent
from cody_protocol.prompt import StructuredOutput, TokenUsage
from cody_protocol.updates import ToolCallLocation

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    ImagePart,
    MessageItem,
    user_message,
)
from ..errors import ProviderError, StorageError
from ..ids import new_id
from ..policy.sandbox import SandboxPolicy, bwrap_path
from ..policy.secrets import SecretGuard
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
from ..providers.pricing import Price
from ..tools.base import PlanStatus, Tool, ToolContext, ToolError, ToolResult
from ..tools.registry import ToolRegistry
from .approvals import CallGate, Decided, Rerun, TurnCancelled
from .checkpoints import TurnCheckpoint, may_change_files
from .compaction import ContextKeeper
from .context_items import answer_check_entry, record
from .custom_commands import fill_shell, shell_text
from .diagnostics import EditChecks
from .edited_input import edited_note
from .editor_files import editor_files_for
from .events import (
    AgentText,
    AgentThought,
    CallDecision,
    PlanChanged,
    TitleChanged,
    ToolCallOpened,
    ToolCallOutput,
    ToolCallOutputEnd,
    ToolCallProgress,
    UsageChanged,
    UserImage,
    UserText,
)
from .final_answer import AnswerStep, FinalAnswer
from .images import without_images
from .instructions import PromptFamily, base_request
from .ports import ClientLink, CodeServers
from .processes import prepare_processes
from .secrets import redact_result
from .session import Session, TurnOutcome
from .session_context import PermissionFacts, refresh
from .skills_context import refresh_skills
from .steering import STEERED, SteerInbox, steered_message, until_steered
from .streamed import SegmentCadence, StreamedItem
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
from .turn_hooks import TurnHooks, TurnStopped, hook_input
from .usage import add_usage, record_call

__all__ = ["TurnCancelled", "TurnEnv", "TurnRunner"]

logger = logging.getLogger(__name__)

RERUN_TAIL_CHARS = 2000
"""How much of a failed command's output the on-failure question shows."""


@dataclass(kw_only=True)
class TurnEnv:
    provider: ModelProvider
    context_window: int
    tools: ToolRegistry
    """The session's tools, those that cannot work here included (`offer` leaves them out);
    the MCP tools are added before each model call (`extra_tools`)."""
    allowed: frozenset[str] | None
    link: ClientLink
    sandbox: SandboxPolicy
    env: Mapping[str, str] = field(default_factory=dict)
    accepts_images: bool = True
    """False for a model known to read text only: earlier images are sent as a note."""
    price: Price | None = None
    """The model's price, only when its calls are billed per token (else no cost is shown)."""
    extra_tools: Callable[[], Awaitable[Sequence[Tool[Any]]]] | None = None
    """The session's MCP tools, awaited before each model call (servers still starting are
    waited for briefly, then join a later call: tools/mcp/manager.py)."""
    secrets: SecretGuard = field(default_factory=SecretGuard)
    """What tools must not pass on; every tool result is redacted with it (engine/secrets.py)."""
    rules_file: Path | None = None
    """The user config, where `allow_project` saves rules (None: the option is not offered)."""
    refresh_rules: Callable[[], Awaitable[None]] | None = None
    """Re-reads the session's permission rules (after `allow_project` saved one)."""
    family: PromptFamily = "open"
    """Which system-prompt overlay the model gets (engine/instructions.py)."""
    final_answer: FinalAnswer | None = None
    """The output schema the final answer must validate against (engine/final_answer.py)."""
    code: CodeServers | None = None
    """The language servers: diagnostics after edits (engine/diagnostics.py)."""
    checkpoint: TurnCheckpoint | None = None
    """The turn's checkpoint of the workspace (engine/checkpoints.py); None: none is taken."""
    model_problem: Callable[[str], str | None] | None = None
    """Why a model is not one of the provider's (None: it is); for a command's `model`."""

    def offer(self, session: Session) -> tuple[ToolRegistry, dict[str, str]]:
        """The tools the model is offered now, and why the others of `tools` are not
        (`Tool.unavailable`: no key, turned off, no language server running yet). Asked
        before each model call: a tool can become able to work during a turn."""
        tool_config = session.settings.tool_config
        absent = self.tools.absent(self.env, tool_config, session.id)
        offered = ToolRegistry(tool for tool in self.tools.tools() if tool.name not in absent)
        return offered, absent


@dataclass(slots=True)
class _OpenCall:
    call_id: str
    name: str
    title: str = ""
    kind: str = "other"
    locations: list[ToolCallLocation] = field(default_factory=list)
    plan: list[tuple[str, str]] | None = None
    """The plan the call published (`updatePlan`), kept for the replay."""
    decision: CallDecision | None = None
    """What decided that the call runs (kept for the replay)."""


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
        self.hooks = TurnHooks(
            session,
            turn_id=self.state.turn_id,
            env=env.secrets.child_environment(env.env),
            emit=self._emit,
            report=lambda event: env.link.emit(session.id, event),
        )
        self._gate = CallGate(
            session,
            env.link,
            turn_id=self.state.turn_id,
            allowed=env.allowed,
            secrets=env.secrets,
            rules_file=env.rules_file,
            refresh_rules=env.refresh_rules,
            hooks=self.hooks,
        )
        self._model: str | None = None
        """A custom command's model for this turn (else the session's)."""
        self._detached: dict[str, ToolResult | None] = {}
        """Calls of a command's !`cmd`s, not in the model's history: their results."""
        self._closed = False
        """Set once the turn's last update is out: later events (a tool that ignored its
        cancellation and still writes output) are dropped, never sent after the answer."""
        self.inbox = SteerInbox(self.state.turn_id)
        self._last_text = ""
        """The text the latest model call wrote (the final answer, when it asked for no tool)."""
        self._checks = EditChecks(
            env.code,
            session,
            env=env.secrets.child_environment(env.env),
            hidden_files=env.sandbox.hidden_files,
            emit=self._emit,
            redact=env.secrets.redact,
        )
        self._offered, self._absent = env.offer(session)
        """What the model was offered for its latest call, and why the other tools were not."""

    # -- public ---------------------------------------------------------------------------

    async def run(
        self,
        prompt_text: str,
        images: Sequence[ImagePart] = (),
        client_content: list[dict[str, Any]] | None = None,
        *,
        shell: Sequence[str] = (),
        model: str | None = None,
    ) -> TurnOutcome:
        """One turn for the user's `prompt_text` (and `images`); `client_content`: the prompt's
        ACP blocks when they were more than text and images (kept with the message for the
        replay); `shell`: a custom command's `` !`command` ``s, run through the approvals
        before the message is written, their output in place of their placeholders;
        `model`: a custom command's model for this turn (when the provider has it)."""
        session = self.session
        self._use_model(model)
        session.grants.turn_rejected.clear()
        settings = session.settings
        session.file.append(
            "turn_context",
            {"turnId": self.state.turn_id, "cwd": str(session.cwd), **settings.persisted()},
        )
        # A changed sandbox or approval policy reaches the model as a new item before this
        # turn's message; what earlier requests held is never rewritten.
        available = await _sandbox_available(self.env.sandbox)
        refresh(
            session,
            PermissionFacts.of(
                session, self.env.sandbox, self._offered.tools(), sandbox_available=available
            ),
        )
        prepare_processes(session, self.env.sandbox, self.env.tools)
        refresh_skills(session, session.extensions.skills, self.env.context_window)
        message_id = new_id("msg_")
        if self.env.checkpoint is not None:
            # Before a custom command's !`cmd`s: what they change is undone with the turn.
            self.env.checkpoint.start(self.state.turn_id, message_id)
        stop = "end_turn"
        failure: BaseException | None = None
        session.steering = self.inbox
        try:
            if shell:  # a custom command's !`cmd`s, each an exec call through the approvals
                if self.env.refresh_rules is not None:
                    await self.env.refresh_rules()
                prompt_text = fill_shell(prompt_text, [await self._shell(c) for c in shell])
            user_item = user_message(message_id, prompt_text, images)
            user_item.client_content = client_content
            session.file.append("response_item", user_item.payload())
            session.history.append(user_item)
            self.hooks.flush()  # UserPromptSubmit's text follows the message it is about
            if (title := session.title_from_prompt(prompt_text)) is not None:
                self._emit(TitleChanged(title))
            stop = await self._loop()
        except TurnStopped as exc:
            self._emit(AgentText(f"\n[The turn was stopped by a hook: {exc.reason}]"))
        except asyncio.CancelledError:
            stop = "cancelled"
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        except TurnCancelled:
            stop = "cancelled"
        except BaseException as exc:
            failure = exc
        self.inbox.close()
        if session.steering is self.inbox:
            session.steering = None
        self._close_open_calls("cancelled" if failure is None else "the turn failed")
        if stop == "cancelled" and session.processes is not None:
            # What this turn started and did not put in the background stops with it, before
            # the turn's end is snapshotted: what it writes as it stops is the turn's change.
            await session.processes.stop_turn(self.state.turn_id)
        if self.env.checkpoint is not None:
            await self.env.checkpoint.finish()
        with contextlib.suppress(StorageError):  # the turn already fails with it
            self._take_steers()  # accepted but not taken: kept for the next turn
        failure = await session.record_turn_end(self.state.turn_id, stop, failure)
        self._closed = True
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
            output=self._output(stop),
        )

    def _output(self, stop: str) -> StructuredOutput | None:
        answer = self.env.final_answer
        if answer is None or answer.output is not None:
            return answer.output if answer is not None else None
        return StructuredOutput(
            valid=False, errors=[f"no final answer: the turn ended ({stop})"], via=answer.via
        )

    async def _shell(self, command: str) -> str:
        """Run a command's `` !`command` `` as an `exec` call the user sees and the approvals
        decide, outside the model's history; its output (or why it did not run) for the
        prompt."""
        call_id = new_id("cmd_")
        self._detached[call_id] = None
        arguments = json.dumps({"command": command})
        await self._run_calls(
            [ToolCallRequested(call_id=call_id, name="exec", arguments=arguments)]
        )
        return shell_text(command, self._detached.pop(call_id, None))

    def _use_model(self, model: str | None) -> None:
        if model is None or model == self.session.settings.model:
            return
        check = self.env.model_problem
        problem = check(model) if check is not None else "the provider's models are unknown"
        if problem is None:
            self._model = model
        else:
            self._emit(
                AgentText(
                    f"[Cody: the command asks for the model {model}, which this session's "
                    f"provider does not have ({problem}); using {self.session.settings.model}.]\n"
                )
            )

    async def answer(self, text: str, stop: str = "end_turn") -> TurnOutcome:
        """End the turn before it began (a hook blocked the prompt, a command cannot run):
        `text` for the user, nothing stored, no model call."""
        if text:
            self._emit(AgentText(text))
        self._closed = True
        await self.env.link.flush(self.session.id)
        return TurnOutcome(
            stop_reason=stop,
            turn_id=self.state.turn_id,
            last=TokenUsage(),
            turn=TokenUsage(),
            total=self.session.usage_total,
        )

    # -- the loop -------------------------------------------------------------------------

    async def _loop(self) -> str:
        if self.env.refresh_rules is not None:
            await self.env.refresh_rules()
        settings = self.session.settings
        own_tools = self.env.tools.tools()
        keeper = self._keeper = ContextKeeper(
            self.session,
            self.env.provider,
            self.env.context_window,
            emit=self._emit,
            on_usage=lambda report: self._record_usage(report, meter=False),
            before=self.hooks.pre_compact,
        )
        answer = self.env.final_answer
        for _ in range(settings.max_tool_iterations):
            self._take_steers()
            if self.env.extra_tools is not None:  # MCP servers join, change, crash between calls
                extra = await self.env.extra_tools()
                self.env.tools = ToolRegistry([*own_tools, *extra])
            self._offered, self._absent = self.env.offer(self.session)  # `symbols` may appear
            template = base_request(self.session, self._offered, self.env.allowed, self.env.family)
            if answer is not None:
                template = answer.shape(template)
            if self._model is not None:
                template = replace(template, model=self._model)
            history = self._readable(await keeper.history_for(template))
            request = replace(template, history=history)
            try:
                calls, end = await self._model_call(request)
            except ProviderError as error:
                if error.kind != "context_window" or not await keeper.after_overflow(template):
                    raise
                history = self._readable(keeper.view())
                calls, end = await self._model_call(replace(template, history=history))
            if answer is not None and end != STEERED:
                step = await answer.after_call(calls, self._last_text, self.inbox.pending)
                if step is not None:
                    if await self._finish_answer(step):
                        self.inbox.close()
                        return "end_turn"
                    continue
            if not calls:
                if end == STEERED or self.inbox.pending:
                    continue  # the model answers the steered message next
                if end == "end_turn" and await self.hooks.stop(_last_answer(self.session)):
                    continue  # a Stop hook asked the model to go on (bounded)
                self.inbox.close()  # the turn ends here: a later steer is refused, not lost
                return {"max_tokens": "max_tokens", "refusal": "refusal"}.get(end, "end_turn")
            await self._run_calls(calls)
            self.hooks.flush()  # PostToolUse texts, after the whole batch of outputs
        logger.info("turn stopped after %d model calls", settings.max_tool_iterations)
        return "max_turn_requests"

    # -- steering and the final answer ------------------------------------------------------

    def _take_steers(self) -> None:
        """Add the steered messages that arrived to the history (file first), and show them."""
        for steer in self.inbox.take():
            item = steered_message(steer)
            self.session.file.append("response_item", item.payload())
            self.session.history.append(item)
            blocks = tuple(steer.client_content or ())
            if steer.text or not steer.images or blocks:
                self._emit(UserText(steer.text, item.id, blocks=blocks, steered=True))
            for image in steer.images:
                self._emit(
                    UserImage(
                        data=image.data, mime_type=image.mime_type, message_id=item.id, steered=True
                    )
                )

    async def _finish_answer(self, step: AnswerStep) -> bool:
        """Carry out what the final answer's check decided; True when the turn ends."""
        for call, result in step.respond:
            info = describe_call(self._offered, call.name, call.arguments)
            self._open(call, replace(info, title="Final answer", kind="other", error=None))
            self._finish_call(call.call_id, result)
        for call in step.skipped:
            self._open(call, describe_call(self._offered, call.name, call.arguments))
            self._finish_call(call.call_id, error_result("not run: the turn ended"))
        if step.run:
            await self._run_calls(step.run)
        if step.note is not None:
            record(self.session, answer_check_entry(self.session.history, step.note))
        return step.done

    def _readable(self, history: Sequence[HistoryItem]) -> list[HistoryItem]:
        """What the model can read: a text-only model gets a note in place of each image."""
        if self.env.accepts_images:
            return list(history)
        return without_images(history, self.session.settings.model)

    async def _model_call(self, request: ModelRequest) -> tuple[list[ToolCallRequested], str]:
        session = self.session
        # Streamed text reaches the file first, then the client (engine/streamed.py).
        cadence = SegmentCadence()
        message = StreamedItem(
            "message",
            session.history,
            session.file,
            emit=lambda text: self._emit(AgentText(text, message.item_id)),
            cadence=cadence,
        )

        def new_thought() -> StreamedItem:
            item = StreamedItem(
                "reasoning",
                session.history,
                session.file,
                emit=lambda text: self._emit(AgentThought(text, item.item_id)),
                cadence=cadence,
            )
            return item

        thoughts = [new_thought()]
        calls: list[ToolCallRequested] = []
        usage: list[UsageReport] = []

        async def consume() -> str:
            end = "end_turn"
            async with contextlib.aclosing(self.env.provider.stream(request)) as stream:
                async for event in stream:
                    await self.env.link.wait_writable()  # back-pressure from a slow client
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
            end = await until_steered(asyncio.ensure_future(consume()), self.inbox, calls)
        finally:
            thoughts[-1].finish()
            message.finish()
            self._last_text = message.text
        for call in calls:
            item = FunctionCallItem(call_id=call.call_id, name=call.name, arguments=call.arguments)
            session.history.append(item)
            session.file.append("response_item", item.payload())
        if usage:
            self._record_usage(usage[-1])
            self._keeper.mark(usage[-1])
        return calls, end

    def _record_usage(self, report: UsageReport, *, meter: bool = True) -> None:
        """Add a call's usage to the turn and session; `meter`: also update the client's
        context meter (not for a compaction's summary call, which is not the context)."""
        last, cost = record_call(self.session, report, self.env.price, self.state.turn_id)
        self.state.usage_last = last
        self.state.usage_turn = add_usage(self.state.usage_turn, last)
        if cost is not None:
            self.state.cost_last = cost
            self.state.cost_turn += cost
        if meter:
            used = report.input_tokens + report.output_tokens
            total = self.session.cost_total_usd if cost is not None else None
            self._emit(UsageChanged(used=used, size=self.env.context_window, cost_usd=total))

    # -- tool calls -----------------------------------------------------------------------

    async def _run_calls(self, calls: list[ToolCallRequested]) -> None:
        cwd = self.session.cwd
        described = [
            describe_call(self._offered, c.name, c.arguments, cwd=cwd, absent=self._absent)
            for c in calls
        ]
        for call, info in zip(calls, described, strict=True):
            self._open(call, info)
        for call, info in zip(calls, described, strict=True):
            await self._run_call(call, info)

    def _open(self, call: ToolCallRequested, info: DescribedCall) -> None:
        """The call is open: shown to the client as pending, to be finished (`_finish_call`)."""
        self.state.open_calls[call.call_id] = _OpenCall(
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
            self._finish_call(call.call_id, error_result(info.error or "invalid call"))
            self.state.failure_seen = True
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
            turn_id=self.state.turn_id,
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
            self.state.failure_seen = True
        continues = result.continues  # the process runs on: its output continues the call's
        if decided.edited is not None:
            result = edited_note(result, decided.edited.raw_input)
        self._finish_call(call.call_id, result, live_continues=continues is not None)
        if continues is not None:
            continues()
        if self.hooks.wants("PostToolUse"):
            await self.hooks.post_tool(
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
                failure_seen=self.state.failure_seen,
                rerun=rerun,
            )
        except (TurnCancelled, TurnStopped):
            raise
        except Exception as exc:  # e.g. a NUL byte in a path: this call fails, not the turn
            logger.info(
                "%s: arguments the policy checks cannot handle", info.tool.name, exc_info=True
            )
            self._finish_call(call_id, error_result(unusable_arguments(info.tool.name, exc)))
            self.state.failure_seen = True
            return None
        if not decided.run:
            if rerun is not None:
                return decided
            self._finish_call(
                call_id,
                error_result(decided.message, {"refused": decided.refused}),
                decision=decided.decision,
            )
            if decided.refused == "sandbox":
                self.state.failure_seen = True
            return None
        ctx.outside_sandbox = decided.outside_sandbox
        ctx.write_anywhere = decided.write_anywhere
        call = self.state.open_calls.get(call_id)
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
        call = self.state.open_calls.get(call_id)
        if call is not None:
            call.title = title

    def _publish_plan(self, call_id: str, entries: list[tuple[str, PlanStatus]]) -> None:
        call = self.state.open_calls.get(call_id)
        if call is not None:
            call.plan = list(entries)
        self._emit(PlanChanged(tuple(entries)))

    def _finish_call(
        self,
        call_id: str,
        result: ToolResult,
        *,
        decision: CallDecision | None = None,
        live_continues: bool = False,
    ) -> None:
        result = redact_result(self.env.secrets, result)  # before it is stored or sent
        status: Literal["completed", "failed"] = "completed" if result.success else "failed"
        call = self.state.open_calls.pop(call_id, None)
        model_output = admit_tool_images(  # the images the model may get (notes for others)
            FunctionCallOutputItem(call_id=call_id, output=result.output, images=result.images),
            self.session.history,
            accepts_images=self.env.accepts_images,
            model=self.session.settings.model,
        )
        content: list[ToolCallContent] = result.content or text_content(model_output.output)
        if call_id in self._detached:  # a command's !`cmd`: shown, not the model's history
            self._detached[call_id] = result
            self._emit(
                ToolCallProgress(
                    call_id=call_id,
                    status=status,
                    content=content,
                    raw_output=wire_raw_output(result.output, result.raw_output),
                    decision=decision,
                )
            )
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
            self._emit(
                ToolCallProgress(
                    call_id=call_id,
                    status=status,
                    content=content,
                    raw_output=wire_raw_output(result.output, result.raw_output),
                    locations=result.locations or None,
                    decision=decision,
                    live_continues=live_continues,
                )
            )

    def _close_open_calls(self, why: str) -> None:
        for call_id in list(self.state.open_calls):
            with contextlib.suppress(StorageError):  # the turn already fails with it
                self._finish_call(call_id, error_result(why))

    def _emit_live_output(self, call_id: str, text: str) -> None:
        self._emit(ToolCallOutput(call_id, self.env.secrets.redact(text)))

    def _emit(self, event: Any) -> None:
        if self._closed:
            logger.info("dropped a %s emitted after the turn ended", type(event).__name__)
            return
        self.env.link.emit(self.session.id, event)


def _last_answer(session: Session) -> str:
    """The text of the model's last message (a Stop hook's `last_assistant_message`)."""
    for item in reversed(session.history):
        if isinstance(item, MessageItem):
            return item.text if item.role == "assistant" else ""
    return ""


async def _sandbox_available(sandbox: SandboxPolicy) -> bool:
    """Whether commands can be isolated here (bubblewrap is probed once per process, by
    running it: the first time off the event loop)."""
    if sandbox.mode == "danger-full-access":
        return True
    if bwrap_path.cache_info().currsize:
        return bwrap_path() is not None
    return await asyncio.to_thread(bwrap_path) is not None
