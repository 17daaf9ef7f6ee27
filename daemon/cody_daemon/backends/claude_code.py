"""Claude Code as a session backend: `claude -p` with stream-json on both sides.

Protocol (Claude Code 2.1.197, observed; the `stdio` permission prompt tool is what the
official Agent SDK uses): `claude -p --input-format stream-json --output-format stream-json
--verbose --include-partial-messages --permission-prompt-tool stdio [mapped flags]
[--model M] [--effort E] [--resume ID]`. We send a `control_request` `initialize`, then one
`user` line per prompt; Claude answers with `system` `init` (its session id), `stream_event`s
(the Messages API stream: text and thinking deltas, per-call usage), complete `assistant`
messages (tool_use blocks), `user` messages (tool results), `control_request`s
`can_use_tool` (answered `{behavior: "allow", updatedInput}` or `{behavior: "deny",
message: "User denied approval"}`, which reaches the model as an error result and the turn
goes on), and one `result` per turn (`total_cost_usd` counts the whole process, so a turn's
cost is the difference). Cancel: `control_request` `interrupt`.

Every tool call reaches Cody's decision: the `initialize` request registers a PreToolUse hook
callback for every tool (no matcher), and Cody answers each `hook_callback` with
`permissionDecision: "ask"`, which makes Claude Code send `can_use_tool` for the call whatever
its own rules would do (its read-only commands such as `git status`, `Read`, and the edits
`acceptEdits` accepts on its own would otherwise run without asking; 2.1.197: a hook `ask`
skips its allow rules and read-only checks, only its deny rules still apply). As a tripwire,
a tool result that did not come through `can_use_tool` ends the turn with an error and stops
the CLI (nothing of a later call runs unasked).

A prompt starting with `/` would be parsed by Claude Code as one of its own commands (`/cost`
runs, `/init: ...` is "Unknown command"), so it is sent with a zero-width space (U+200B) in
front: the model gets the text, Claude Code parses nothing (Cody's own commands are expanded
before a prompt reaches a backend, engine/slash.py).

Invariants (besides base.py's; a turn's own are in backends/claude_turn.py, how a tool call
is shown and asked in backends/claude_tools.py):
- one `claude` process per live session, started at the first prompt and kept for the next
  ones; when the flags a turn needs differ from the running process's (the user changed the
  mode or model), the process is ended and a new one resumes the session (`--resume`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

from cody_protocol.prompt import DryRunReport

from ..errors import ProviderError
from .base import (
    AgentBackend,
    Approver,
    BackendEvent,
    BackendSettings,
    Launch,
    StopReason,
)
from .claude_turn import HOOKS, ClaudeTurn, CliEnded
from .env import relevant_env_names
from .failures import classify, cli_exited, cli_garbage
from .mapping import CLAUDE_ENFORCEMENT, claude_flags
from .process import JsonLineProcess

__all__ = ["ClaudeBackend"]

logger = logging.getLogger(__name__)

INIT_TIMEOUT_S: Final = 60.0
INTERRUPT_GRACE_S: Final = 1.0
_NOT_COMMAND: Final = "\u200b"
"""Put before a prompt that starts with `/`, so Claude Code does not parse it as a command."""
_EFFORT: Final = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


class ClaudeBackend(AgentBackend):
    kind = "claude"
    display_name = "Claude Code"

    def __init__(self, launch: Launch) -> None:
        super().__init__(launch)
        self._proc: JsonLineProcess | None = None
        self._inbox: asyncio.Queue[dict[str, Any] | CliEnded] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = 0
        self._dead: ProviderError | None = None
        self._cost_seen = 0.0
        """`total_cost_usd` of the running process so far."""
        self.window: int | None = None
        """The context window of its model (from `init` and `result`)."""
        self._in_turn = False
        self._running_flags: list[str] = []
        """The running process's argv without the CLI path and `--resume` (settings changed?)."""

    # -- the command line -------------------------------------------------------------------

    def argv(self, settings: BackendSettings) -> list[str]:
        assert self.launch.cli is not None
        return self._argv(str(self.launch.cli), settings)

    def _argv(self, cli: str, settings: BackendSettings) -> list[str]:
        args = [
            cli,
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
            *claude_flags(settings).argv(),
        ]
        if settings.model:
            args += ["--model", settings.model]
        if settings.reasoning_effort:
            args += ["--effort", _EFFORT[settings.reasoning_effort]]
        if self.resume_id:
            args += ["--resume", self.resume_id]
        return args

    def dry_run(self, prompt: str, settings: BackendSettings) -> DryRunReport:
        flags = claude_flags(settings)
        found = self.launch.cli is not None
        return DryRunReport(
            backend="claude",
            command=self.argv(settings) if found else None,
            cwd=str(self.launch.cwd),
            env=relevant_env_names("claude", self.launch.env),
            flags={
                "permissionMode": flags.permission_mode,
                "tools": flags.tools,
                "disallowedTools": flags.disallowed,
                "settingSources": flags.setting_sources,
                "model": settings.model,
                "effort": _EFFORT.get(settings.reasoning_effort or ""),
                "resume": self.resume_id,
            },
            allowed_tools=sorted(settings.allowed_tools) if settings.allowed_tools else None,
            backend_tools=flags.tools,
            requests=[
                {
                    "type": "control_request",
                    "request_id": "init_1",
                    "request": {"subtype": "initialize", "hooks": HOOKS},
                },
                _user_line(prompt),
            ],
            found=found,
            notes=[*flags.notes, CLAUDE_ENFORCEMENT]
            + ([] if found else [self.launch.install_hint]),
        )

    # -- the process ------------------------------------------------------------------------

    async def _ensure_process(self, settings: BackendSettings) -> None:
        wanted = self._argv("", settings)[: -2 if self.resume_id else None]
        if (
            self._proc is not None
            and self._proc.running
            and self._dead is None
            and self._running_flags == wanted
        ):
            return
        await self._end_process(gracefully=True)
        self._running_flags = wanted
        self._proc = JsonLineProcess(
            self.argv(settings),
            cwd=self.launch.cwd,
            env=self.launch.env,
            on_message=self._on_message,
            on_garbage=lambda sample: self._fail(cli_garbage("claude", sample)),
            on_exit=self._on_exit,
        )
        try:
            await self._proc.start()
        except OSError as exc:
            self._proc = None
            raise classify("claude", f"cannot start {self.launch.cli}: {exc.strerror}") from None
        self._cost_seen = 0.0
        await self._control({"subtype": "initialize", "hooks": HOOKS}, INIT_TIMEOUT_S)

    async def _end_process(self, *, gracefully: bool) -> None:
        proc = self._proc
        if proc is not None:
            if gracefully and proc.running:
                await proc.close_stdin()
                await proc.wait(2.0)
            await proc.kill()
        self._proc = None
        self._dead = None
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
        self._inbox = asyncio.Queue()

    def _on_message(self, message: dict[str, Any]) -> None:
        if message.get("type") == "control_response":
            response = message.get("response") or {}
            future = self._pending.pop(str(response.get("request_id", "")), None)
            if future is not None and not future.done():
                future.set_result(response)
            return
        self._inbox.put_nowait(message)

    def _fail(self, error: ProviderError) -> None:
        if self._dead is None:
            self._dead = error
        for future in self._pending.values():
            if not future.done():
                future.set_exception(CliEnded(error))
        self._pending.clear()
        self._inbox.put_nowait(CliEnded(error))

    def _on_exit(self, code: int | None) -> None:
        tail = self._proc.stderr_tail if self._proc is not None else ""
        self._fail(cli_exited("claude", code, tail))

    def _send(self, message: dict[str, Any]) -> None:
        if self._proc is not None:
            self._proc.send(message)

    async def _control(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self._dead is not None:
            raise CliEnded(self._dead)
        self._ids += 1
        request_id = f"cody_{self._ids}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._send({"type": "control_request", "request_id": request_id, "request": request})
        assert self._proc is not None
        await self._proc.drain()
        try:
            response: dict[str, Any] = await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise classify(
                "claude", f"no answer to the {request['subtype']} request in {timeout_s:g} s"
            ) from None
        finally:
            self._pending.pop(request_id, None)
        if response.get("subtype") == "error":
            raise classify("claude", str(response.get("error") or "control request failed"))
        return response

    # -- a turn -----------------------------------------------------------------------------

    async def run_turn(
        self,
        prompt: str,
        settings: BackendSettings,
        emit: Callable[[BackendEvent], None],
        approve: Approver,
    ) -> StopReason:
        try:
            await self._ensure_process(settings)
        except CliEnded as exc:
            raise exc.error from None
        self._send(_user_line(prompt))
        assert self._proc is not None
        await self._proc.drain()
        self._in_turn = True
        turn = ClaudeTurn(self, emit, approve, settings)
        try:
            return await turn.run()
        except CliEnded as exc:
            raise exc.error from None
        finally:
            self._in_turn = False

    async def next_message(self) -> dict[str, Any]:
        item = await self._inbox.get()
        if isinstance(item, CliEnded):
            raise item
        return item

    def answer_permission(self, request_id: str, response: dict[str, Any]) -> None:
        self._send(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    def refuse_control(self, request_id: str, why: str) -> None:
        self._send(
            {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": request_id, "error": why},
            }
        )

    def turn_cost(self, total: float) -> float:
        cost = max(total - self._cost_seen, 0.0)
        self._cost_seen = total
        return cost

    # -- cancel / close ---------------------------------------------------------------------

    async def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.running and self._dead is None and self._in_turn:
            with contextlib.suppress(Exception):
                await self._control({"subtype": "interrupt"}, INTERRUPT_GRACE_S)
                await asyncio.wait_for(self._drain_to_result(), INTERRUPT_GRACE_S)
        await self._end_process(gracefully=False)

    async def _drain_to_result(self) -> None:
        while True:
            message = await self.next_message()
            if message.get("type") == "control_request":
                self.refuse_control(str(message.get("request_id", "")), "cancelled")
            elif message.get("type") == "result":
                return


def _user_line(prompt: str) -> dict[str, Any]:
    if prompt.lstrip().startswith("/"):
        prompt = _NOT_COMMAND + prompt  # text for the model, not a Claude Code command
    return {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "session_id": "",
    }
