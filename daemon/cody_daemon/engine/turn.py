"""One turn: model call -> tool calls -> approvals -> results -> model, until the model stops.

Its parts: what it runs with (engine/turn_env.py), one streamed model call
(engine/model_call.py), its tool calls from opening to finishing (engine/turn_calls.py).

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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cody_protocol.prompt import StructuredOutput, TokenUsage

from ..core.history import (
    HistoryItem,
    ImagePart,
    MessageItem,
    user_message,
)
from ..errors import ProviderError, StorageError
from ..ids import new_id
from ..policy.sandbox import SandboxPolicy, bwrap_path
from ..providers.base import (
    ModelRequest,
    ToolCallRequested,
    UsageReport,
)
from ..tools.registry import ToolRegistry
from .approvals import TurnCancelled
from .compaction import ContextKeeper
from .context_items import answer_check_entry, record
from .custom_commands import fill_shell, shell_text
from .events import (
    AgentText,
    TitleChanged,
    UsageChanged,
    UserImage,
    UserText,
)
from .final_answer import AnswerStep
from .images import without_images
from .instructions import base_request
from .model_call import stream_model_call
from .processes import prepare_processes
from .session import Session, TurnOutcome
from .session_context import PermissionFacts, refresh
from .skills_context import refresh_skills
from .steering import STEERED, SteerInbox, steered_message
from .toolcalls import (
    describe_call,
    error_result,
)
from .turn_calls import TurnCalls
from .turn_env import TurnEnv
from .turn_hooks import TurnHooks, TurnStopped
from .usage import add_usage, record_call

__all__ = ["TurnCancelled", "TurnEnv", "TurnRunner"]

logger = logging.getLogger(__name__)


@dataclass
class _TurnState:
    turn_id: str
    usage_turn: TokenUsage = field(default_factory=TokenUsage)
    usage_last: TokenUsage = field(default_factory=TokenUsage)
    cost_last: float = 0.0
    cost_turn: float = 0.0


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
        self._model: str | None = None
        """A custom command's model for this turn (else the session's)."""
        self._closed = False
        """Set once the turn's last update is out: later events (a tool that ignored its
        cancellation and still writes output) are dropped, never sent after the answer."""
        self.inbox = SteerInbox(self.state.turn_id)
        self._last_text = ""
        """The text the latest model call wrote (the final answer, when it asked for no tool)."""
        self.calls = TurnCalls(
            session, env, turn_id=self.state.turn_id, hooks=self.hooks, emit=self._emit
        )
        """The turn's tool calls (engine/turn_calls.py)."""
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
        if settings.skills.include_instructions:  # `[skills] include_instructions = false`
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
        self.calls.close_open("cancelled" if failure is None else "the turn failed")
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
        arguments = json.dumps({"command": command})
        call = ToolCallRequested(call_id=new_id("cmd_"), name="exec", arguments=arguments)
        return shell_text(command, await self.calls.run_detached(call, *self._offer_now()))

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
            await self.calls.run_batch(calls, *self._offer_now())
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
            self.calls.open(call, replace(info, title="Final answer", kind="other", error=None))
            self.calls.finish(call.call_id, result)
        for call in step.skipped:
            self.calls.open(call, describe_call(self._offered, call.name, call.arguments))
            self.calls.finish(call.call_id, error_result("not run: the turn ended"))
        if step.run:
            await self.calls.run_batch(step.run, *self._offer_now())
        if step.note is not None:
            record(self.session, answer_check_entry(self.session.history, step.note))
        return step.done

    def _offer_now(self) -> tuple[ToolRegistry, dict[str, str]]:
        """What the model was offered for its latest call, and why the others were not."""
        return self._offered, self._absent

    def _readable(self, history: Sequence[HistoryItem]) -> list[HistoryItem]:
        """What the model can read: a text-only model gets a note in place of each image."""
        if self.env.accepts_images:
            return list(history)
        return without_images(history, self.session.settings.model)

    async def _model_call(self, request: ModelRequest) -> tuple[list[ToolCallRequested], str]:
        """One model call streamed into the history (engine/model_call.py); its usage counted."""
        answer = await stream_model_call(
            self.session,
            self.env.provider,
            request,
            link=self.env.link,
            inbox=self.inbox,
            emit=self._emit,
        )
        self._last_text = answer.text
        if answer.usage is not None:
            self._record_usage(answer.usage)
            self._keeper.mark(answer.usage)
        return answer.calls, answer.end

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
