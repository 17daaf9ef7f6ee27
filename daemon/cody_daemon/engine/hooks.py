"""A session's hooks: when each event's hooks run, what they are told, what their answers do
(docs/extensions.md "Hooks"; the definitions and the process: extensions/).

Every hook gets Claude Code's documented fields on stdin: `session_id`, `transcript_path`
(the session file), `cwd`, `hook_event_name`, `permission_mode` (Claude Code's name for the
session's mode: `default`, `acceptEdits`, `plan`, `bypassPermissions`), `model`, `turn_id`,
plus the event's own (`tool_name`, `tool_input`, `tool_use_id`, `tool_response`, `prompt`,
`source`, `trigger`, `message`, `notification_type`, `stop_hook_active`,
`last_assistant_message`). `tool_name` is Cody's; a matcher may also name the peers' tools
(`TOOL_ALIASES`: `Bash` is `exec`, `Edit|Write` are `applyPatch|writeFile`, `Read` is
`readFile`...).

Invariants:
- the matching hooks of an event run at once (a command listed twice runs once); the caller
  waits for all of them (background `async` hooks excepted);
- a hook runs in the session's directory, in its own process group, with the session's
  environment minus every credential (`SecretGuard.child_environment`) plus
  `CLAUDE_PROJECT_DIR`, `CODY_PROJECT_DIR` and `CODY_SESSION_ID`; `close()` kills whatever
  hook of the session still runs;
- a failure or a timeout is reported to the client (`HookReported`, `_cody/hook/status`) and
  blocks nothing unless the hook is `failClosed`; a `systemMessage` is reported the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ..extensions.hook_output import HookAnswer, read_answer
from ..extensions.hook_runner import HookProcesses, run_hook
from ..extensions.hooks_config import HookEvent, HookSpec
from .events import HookReported

__all__ = [
    "TOOL_ALIASES",
    "HookCall",
    "SessionHooks",
    "ToolHookVerdict",
    "blocking",
    "contexts",
    "permission_mode",
    "tool_verdict",
]

logger = logging.getLogger(__name__)

TOOL_ALIASES: Final[Mapping[str, tuple[str, ...]]] = {
    "exec": ("Bash", "shell", "local_shell", "exec_command"),
    "applyPatch": ("Edit", "Write", "MultiEdit", "apply_patch"),
    "writeFile": ("Write", "Edit"),
    "readFile": ("Read", "read_file"),
    "listDir": ("LS", "list_dir"),
    "grepFiles": ("Grep", "grep_files"),
    "fileSearch": ("Glob",),
    "webSearch": ("WebSearch", "web_search"),
    "fetchUrl": ("WebFetch",),
    "updatePlan": ("TodoWrite", "update_plan"),
}
"""The peers' names for Cody's tools (a matcher may use either)."""

_MODES: Final = {
    "ask": "default",
    "auto": "acceptEdits",
    "read-only": "plan",
    "full-access": "bypassPermissions",
}

Emit = Callable[[HookReported], None]


def permission_mode(mode_id: str) -> str:
    """Claude Code's `permission_mode` for a Cody mode (`custom`: `default`)."""
    return _MODES.get(mode_id, "default")


@dataclass(frozen=True, slots=True, kw_only=True)
class HookCall:
    """What every hook of one event is told besides its own fields."""

    permission_mode: str
    model: str
    turn_id: str | None
    env: Mapping[str, str]
    """The session's environment without credentials (the hook's, plus the project vars)."""
    emit: Emit


@dataclass(slots=True)
class SessionHooks:
    specs: tuple[HookSpec, ...]
    session_id: str
    cwd: Path
    transcript_path: Path
    processes: HookProcesses = field(default_factory=HookProcesses)
    background: set[asyncio.Task[Any]] = field(default_factory=set)

    def has(self, event: HookEvent) -> bool:
        return any(spec.event == event for spec in self.specs)

    async def run(
        self,
        event: HookEvent,
        fields: Mapping[str, Any],
        call: HookCall,
        *,
        match: Sequence[str] = (),
    ) -> list[HookAnswer]:
        """Run the hooks of `event` that match any of `match`; their answers (waited for),
        failures and messages already reported."""
        chosen: dict[str, HookSpec] = {}
        for spec in self.specs:
            if spec.event == event and spec.matches(match) and spec.command not in chosen:
                chosen[spec.command] = spec
        if not chosen:
            return []
        payload = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript_path),
            "cwd": str(self.cwd),
            "hook_event_name": event,
            "permission_mode": call.permission_mode,
            "model": call.model,
            "turn_id": call.turn_id,
            **fields,
        }
        stdin = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        env = {
            **call.env,
            "CLAUDE_PROJECT_DIR": str(self.cwd),
            "CODY_PROJECT_DIR": str(self.cwd),
            "CODY_SESSION_ID": self.session_id,
        }
        waited = [spec for spec in chosen.values() if not spec.background]
        for spec in chosen.values():
            if spec.background:
                task = asyncio.create_task(self._one(spec, stdin, env, call.emit))
                self.background.add(task)
                task.add_done_callback(self.background.discard)
        return list(await asyncio.gather(*(self._one(s, stdin, env, call.emit) for s in waited)))

    def start(
        self,
        event: HookEvent,
        fields: Mapping[str, Any],
        call: HookCall,
        *,
        match: Sequence[str] = (),
    ) -> None:
        """Run the hooks of `event` without waiting for them (Notification); `close()` still
        kills them."""
        task = asyncio.create_task(self.run(event, fields, call, match=match))
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def _one(
        self, spec: HookSpec, stdin: bytes, env: Mapping[str, str], emit: Emit
    ) -> HookAnswer:
        run = await run_hook(
            spec.command,
            stdin,
            cwd=self.cwd,
            env=env,
            timeout_s=spec.timeout_s,
            processes=self.processes,
        )
        answer = read_answer(spec, run)
        if answer.failure is not None:
            logger.info("%s hook from %s failed: %s", spec.event, spec.source, answer.failure)
            status: Literal["failed", "timed_out"] = "timed_out" if run.timed_out else "failed"
            closed = " (failClosed: it blocks)" if spec.fail_closed else ""
            emit(_report(spec, status, f"the hook {answer.failure}{closed}"))
        if answer.system_message:
            emit(_report(spec, "message", answer.system_message))
        return answer

    async def close(self) -> None:
        """Kill every hook of the session that still runs."""
        for task in list(self.background):
            task.cancel()
        self.processes.kill_all()
        if self.background:
            await asyncio.wait(set(self.background), timeout=2)


def _report(
    spec: HookSpec, status: Literal["failed", "timed_out", "message"], message: str
) -> HookReported:
    return HookReported(
        event=spec.event, command=spec.command, source=spec.source, status=status, message=message
    )


@dataclass(frozen=True, slots=True)
class ToolHookVerdict:
    """What the PreToolUse (or PermissionRequest) hooks decided about one call."""

    decision: Literal["allow", "deny", "ask"]
    reason: str
    command: str
    """The deciding hook's command (`_meta.cody.decision.detail` names it)."""
    stop_turn: bool = False


def tool_verdict(answers: Sequence[HookAnswer]) -> ToolHookVerdict | None:
    """The strongest decision among `answers`: deny > ask > allow (a `failClosed` hook that
    failed denies); None when no hook decided."""
    for wanted in ("deny", "ask", "allow"):
        for answer in answers:
            decision = answer.decision
            if answer.failure is not None and answer.spec.fail_closed or answer.blocked:
                decision = "deny"
            if decision == wanted:
                reason = answer.reason or (
                    f"blocked by a {answer.spec.event} hook: {answer.failure}"
                    if answer.failure
                    else ""
                )
                return ToolHookVerdict(
                    decision=wanted,
                    reason=reason,
                    command=answer.spec.command,
                    stop_turn=any(a.stop_turn for a in answers),
                )
    return None


def blocking(answers: Sequence[HookAnswer]) -> HookAnswer | None:
    """The first answer that blocks (exit 2, `decision: "block"`, a failed `failClosed`
    hook), or None."""
    for answer in answers:
        if answer.blocked or (answer.failure is not None and answer.spec.fail_closed):
            return answer
    return None


def contexts(answers: Sequence[HookAnswer]) -> list[str]:
    """The texts the hooks give the model, in hook order."""
    return [answer.context for answer in answers if answer.context]
