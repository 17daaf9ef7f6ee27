"""The hooks of one turn of Cody's own loop: each event at its place, its answer put to use
(docs/extensions.md "Hooks"; the session's runner: engine/hooks.py).

- SessionStart (the first turn after the session became live: `source` `startup` or
  `resume`): its text becomes a `hook` context item before the user's message;
- UserPromptSubmit (the prompt as the user typed it, before a command is expanded or any of
  its commands runs): exit 2 or `decision: "block"` ends the turn with `refusal` and the
  reason for the user (nothing is stored: the model never sees that prompt); its text follows
  the user's message;
- PreToolUse and PermissionRequest (engine/approvals.py puts them in the order of decision);
- PostToolUse: its text (`additionalContext`, a `block` reason, exit 2's stderr) reaches the
  model in the next request, after the batch of calls;
- Stop: exit 2 or `decision: "block"` makes the model go on with the reason, at most
  `MAX_STOP_CONTINUATIONS` times a turn (`stop_hook_active` is true after the first);
- PreCompact (`trigger` `auto` or `manual`) runs before a summary is made;
- Notification: `permission_prompt` when an approval is asked, `elicitation_dialog` when an
  MCP server's question is put to the user, `idle_prompt` when the turn is over; not waited
  for.
A `continue: false` answer (or PermissionRequest's `interrupt`) stops the turn
(`TurnStopped`, answered `end_turn` with the reason for the user).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel

from ..extensions.hook_output import HookAnswer
from ..tools.base import ToolResult
from .context_items import hook_entry, record
from .events import AgentText, EngineEvent, HookReported
from .hooks import (
    TOOL_ALIASES,
    HookCall,
    ToolHookVerdict,
    blocking,
    contexts,
    permission_mode,
    tool_verdict,
)
from .prompt_files import render
from .session import Session
from .settings import mode_of

__all__ = [
    "MAX_STOP_CONTINUATIONS",
    "PromptBlocked",
    "TurnHooks",
    "TurnStopped",
    "blocked_answer",
    "hook_input",
]

MAX_STOP_CONTINUATIONS: Final = 3
RESPONSE_LIMIT: Final = 64 * 1024
"""How much of a tool's output a PostToolUse hook is given (the rest is cut with a note)."""


class TurnStopped(Exception):
    """A hook answered `continue: false`: the turn ends (the reason is shown to the user)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PromptBlocked:
    reason: str
    command: str


class TurnHooks:
    """The hooks of one turn (a no-op object when the session has none)."""

    def __init__(
        self,
        session: Session,
        *,
        turn_id: str,
        env: Mapping[str, str],
        emit: Callable[[EngineEvent], None],
        report: Callable[[HookReported], None] | None = None,
    ) -> None:
        """`report`: where hook failures and messages go (default `emit`); a turn gives the
        link itself, so a Notification hook that fails after the turn is still reported."""
        self.session = session
        self.turn_id = turn_id
        self.env = env
        self.emit = emit
        self.report = report or emit
        self.hooks = session.hooks
        self.stops = 0
        self.pending: list[str] = []
        """Hook texts for the model, recorded at the next `flush`."""

    def wants(self, event: Any) -> bool:
        """Whether the session has hooks for `event` (skip building their input if not)."""
        return self.hooks is not None and self.hooks.has(event)

    def _call(self) -> HookCall:
        settings = self.session.settings
        return HookCall(
            permission_mode=permission_mode(mode_of(settings)),
            model=settings.model,
            turn_id=self.turn_id,
            env=self.env,
            emit=self.report,
        )

    async def _run(
        self, event: Any, fields: Mapping[str, Any], match: Sequence[str] = ()
    ) -> list[HookAnswer]:
        if self.hooks is None or not self.hooks.has(event):
            return []
        answers = await self.hooks.run(event, fields, self._call(), match=match)
        stop = next((answer for answer in answers if answer.stop_turn), None)
        if stop is not None:
            raise TurnStopped(stop.stop_reason or stop.reason or f"a {event} hook stopped the turn")
        return answers

    def _keep(self, event: str, texts: Sequence[str]) -> None:
        self.pending += [render("hook_context", event=event, text=text) for text in texts]

    def flush(self) -> None:
        """Record the hook texts gathered so far as one context item (after the history's
        current end: between whole batches of calls, never inside one)."""
        if self.pending:
            record(self.session, hook_entry(self.session.history, "\n\n".join(self.pending)))
            self.pending = []

    # -- the events --------------------------------------------------------------------------

    async def session_start(self) -> None:
        source = self.session.start_source
        if source is None:
            return
        self.session.start_source = None
        answers = await self._run("SessionStart", {"source": source}, (source,))
        self._keep("SessionStart", contexts(answers))
        self.flush()

    async def prompt_submitted(self, prompt: str) -> PromptBlocked | None:
        """UserPromptSubmit; its texts wait for the user's message (`flush` after it)."""
        answers = await self._run("UserPromptSubmit", {"prompt": prompt})
        stopper = blocking(answers)
        if stopper is not None:
            reason = stopper.reason or f"the hook {stopper.failure}"
            return PromptBlocked(reason, stopper.spec.command)
        self._keep("UserPromptSubmit", contexts(answers))
        return None

    async def pre_tool(
        self, tool_name: str, tool_input: Any, call_id: str
    ) -> ToolHookVerdict | None:
        answers = await self._run(
            "PreToolUse", _tool_fields(tool_name, tool_input, call_id), _names(tool_name)
        )
        self._keep("PreToolUse", contexts(answers))
        return tool_verdict(answers)

    async def permission_request(
        self, tool_name: str, tool_input: Any, call_id: str
    ) -> ToolHookVerdict | None:
        answers = await self._run(
            "PermissionRequest", _tool_fields(tool_name, tool_input, call_id), _names(tool_name)
        )
        verdict = tool_verdict(answers)
        return verdict if verdict is not None and verdict.decision != "ask" else None

    async def post_tool(
        self, tool_name: str, tool_input: Any, call_id: str, result: ToolResult
    ) -> None:
        response: dict[str, Any] = {"success": result.success, "output": _cut(result.output)}
        raw = result.raw_output if isinstance(result.raw_output, dict) else {}
        if isinstance(raw.get("exitCode"), int):
            response["exit_code"] = raw["exitCode"]
        fields = {**_tool_fields(tool_name, tool_input, call_id), "tool_response": response}
        answers = await self._run("PostToolUse", fields, _names(tool_name))
        texts = contexts(answers)
        texts += [answer.reason for answer in answers if answer.blocked and answer.reason]
        self._keep(f"PostToolUse ({tool_name})", texts)

    async def stop(self, last_message: str) -> bool:
        """True when a Stop hook makes the model go on (its reason is pending for it)."""
        if self.stops >= MAX_STOP_CONTINUATIONS:
            return False
        answers = await self._run(
            "Stop", {"stop_hook_active": self.stops > 0, "last_assistant_message": last_message}
        )
        stopper = blocking(answers)
        if stopper is None:
            return False
        self.stops += 1
        reason = stopper.reason or "a Stop hook asked to go on"
        self._keep("Stop", [reason])
        self.flush()
        return True

    async def pre_compact(self, trigger: Literal["auto", "manual"]) -> None:
        await self._run("PreCompact", {"trigger": trigger, "custom_instructions": ""}, (trigger,))

    def notify(
        self,
        kind: Literal["permission_prompt", "elicitation_dialog", "idle_prompt"],
        message: str,
    ) -> None:
        if self.hooks is None or not self.hooks.has("Notification"):
            return
        self.hooks.start(
            "Notification",
            {"message": message, "notification_type": kind},
            self._call(),
            match=(kind,),
        )


def _names(tool_name: str) -> tuple[str, ...]:
    return (tool_name, *TOOL_ALIASES.get(tool_name, ()))


def _tool_fields(tool_name: str, tool_input: Any, call_id: str) -> dict[str, Any]:
    return {"tool_name": tool_name, "tool_input": tool_input, "tool_use_id": call_id}


def _cut(text: str) -> str:
    if len(text) <= RESPONSE_LIMIT:
        return text
    return text[:RESPONSE_LIMIT] + f"\n[... {len(text) - RESPONSE_LIMIT:,} characters cut]"


def hook_input(args: BaseModel, cwd: Path) -> dict[str, Any]:
    """A call's arguments as hooks get them (`tool_input`): the model's, plus what the
    peers' hooks read: `command` as one string (an argv list also as `argv`) and
    `file_path` as an absolute path."""
    data: dict[str, Any] = args.model_dump(mode="json", by_alias=True, exclude_none=True)
    command = data.get("command")
    if isinstance(command, list):
        data["argv"] = command
        data["command"] = shlex.join(str(word) for word in command)
    path = data.get("filePath")
    if isinstance(path, str):
        data["file_path"] = str(cwd / path) if not Path(path).is_absolute() else path
    return data


def blocked_answer(blocked: PromptBlocked) -> AgentText:
    """What the user reads when a UserPromptSubmit hook blocked the prompt (not stored)."""
    return AgentText(
        f"A UserPromptSubmit hook blocked this prompt (it was not sent to the model): "
        f"{blocked.reason}\n(hook: {blocked.command})"
    )
