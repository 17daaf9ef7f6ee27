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

Invariants (besides base.py's):
- one `claude` process per live session, started at the first prompt and kept for the next
  ones; when the flags a turn needs differ from the running process's (the user changed the
  mode or model), the process is ended and a new one resumes the session (`--resume`);
- a 401/403 that Claude Code would retry for minutes (`system` `api_retry` with
  `authentication_failed`) ends the turn at once as `auth`;
- messages of sub-agents (`parent_tool_use_id` set) are not shown as the agent's own text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from cody_protocol.content import DiffToolCallContent, ToolCallContent
from cody_protocol.prompt import DryRunReport

from ..errors import ProviderError
from .base import (
    DENIED,
    AgentBackend,
    Answer,
    ApprovalAsk,
    Approver,
    BackendEvent,
    BackendSettings,
    CostReported,
    Launch,
    PlanStatus,
    PlanUpdated,
    ResumeIdAssigned,
    StopReason,
    TextDelta,
    ThoughtDelta,
    TokenCounts,
    ToolFinished,
    ToolStarted,
    UsageReported,
)
from .display import (
    canonical_key,
    claude_tool_display,
    exec_grant_key,
    exec_known_safe,
    paths_grant_key,
    text_content,
)
from .env import relevant_env_names
from .failures import classify, cli_exited, cli_garbage
from .mapping import CLAUDE_ENFORCEMENT, claude_flags, claude_tool_to_cody, sandbox_violation
from .process import JsonLineProcess

__all__ = ["ClaudeBackend"]

logger = logging.getLogger(__name__)

INIT_TIMEOUT_S: Final = 60.0
INTERRUPT_GRACE_S: Final = 1.0
_EFFORT: Final = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}
_PLAN_STATUS: Final[dict[str, PlanStatus]] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}
_STOP: Final[dict[str, StopReason]] = {
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


class _Ended(Exception):
    def __init__(self, error: ProviderError) -> None:
        super().__init__(error.message)
        self.error = error


class ClaudeBackend(AgentBackend):
    kind = "claude"
    display_name = "Claude Code"

    def __init__(self, launch: Launch) -> None:
        super().__init__(launch)
        self._proc: JsonLineProcess | None = None
        self._inbox: asyncio.Queue[dict[str, Any] | _Ended] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = 0
        self._dead: ProviderError | None = None
        self._cost_seen = 0.0
        """`total_cost_usd` of the running process so far."""
        self._window: int | None = None
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
                    "request": {"subtype": "initialize", "hooks": None},
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
        await self._control({"subtype": "initialize", "hooks": None}, INIT_TIMEOUT_S)

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
                future.set_exception(_Ended(error))
        self._pending.clear()
        self._inbox.put_nowait(_Ended(error))

    def _on_exit(self, code: int | None) -> None:
        tail = self._proc.stderr_tail if self._proc is not None else ""
        self._fail(cli_exited("claude", code, tail))

    def _send(self, message: dict[str, Any]) -> None:
        if self._proc is not None:
            self._proc.send(message)

    async def _control(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self._dead is not None:
            raise _Ended(self._dead)
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
        except _Ended as exc:
            raise exc.error from None
        self._send(_user_line(prompt))
        assert self._proc is not None
        await self._proc.drain()
        self._in_turn = True
        turn = _ClaudeTurn(self, emit, approve, settings)
        try:
            return await turn.run()
        except _Ended as exc:
            raise exc.error from None
        finally:
            self._in_turn = False

    async def next_message(self) -> dict[str, Any]:
        item = await self._inbox.get()
        if isinstance(item, _Ended):
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


class _ClaudeTurn:
    def __init__(
        self,
        backend: ClaudeBackend,
        emit: Callable[[BackendEvent], None],
        approve: Approver,
        settings: BackendSettings,
    ) -> None:
        self.backend = backend
        self.emit = emit
        self.approve = approve
        self.settings = settings
        self.cwd: Path = backend.launch.cwd
        self.streamed: set[str] = set()
        """Ids of assistant messages whose text arrived as stream deltas."""
        self.started: dict[str, ToolStarted] = {}
        self.call_usage: dict[str, int] = {}
        self.message_id = ""

    async def run(self) -> StopReason:
        while True:
            message = await self.backend.next_message()
            kind = message.get("type")
            if kind == "control_request":
                await self._control_request(message)
            elif kind == "result":
                return self._result(message)
            elif message.get("parent_tool_use_id"):
                continue  # a sub-agent's own conversation
            elif kind == "system":
                self._system(message)
            elif kind == "stream_event":
                self._stream_event(message.get("event") or {})
            elif kind == "assistant":
                self._assistant(message.get("message") or {})
            elif kind == "user":
                self._tool_results(message.get("message") or {})

    # messages

    def _system(self, message: dict[str, Any]) -> None:
        subtype = message.get("subtype")
        if subtype == "init":
            session_id = str(message.get("session_id") or "")
            model = str(message.get("model") or "")
            if self.backend._window is None:
                self.backend._window = 1_000_000 if model.endswith("[1m]") else 200_000
            if session_id and session_id != self.backend.resume_id:
                self.backend.resume_id = session_id
                self.emit(ResumeIdAssigned(session_id))
        elif subtype == "api_retry":
            status = message.get("error_status")
            if status in (401, 403) or message.get("error") == "authentication_failed":
                raise _Ended(
                    classify(
                        "claude",
                        f"the model API answered {status} ({message.get('error')})",
                        status=status if isinstance(status, int) else None,
                        code=str(message.get("error") or ""),
                    )
                )

    def _stream_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.streamed.add(self.message_id)
                self.emit(TextDelta(str(delta.get("text", ""))))
            elif delta.get("type") == "thinking_delta":
                self.streamed.add(self.message_id)
                self.emit(ThoughtDelta(str(delta.get("thinking", ""))))
        elif kind == "message_start":
            message = event.get("message") or {}
            self.message_id = str(message.get("id", ""))
            self.call_usage = dict(message.get("usage") or {})
        elif kind == "message_delta":
            usage = {**self.call_usage, **(event.get("usage") or {})}
            fresh = int(usage.get("input_tokens") or 0)
            read = int(usage.get("cache_read_input_tokens") or 0)
            written = int(usage.get("cache_creation_input_tokens") or 0)
            self.emit(
                UsageReported(
                    last=TokenCounts(
                        input=fresh + read + written,
                        output=int(usage.get("output_tokens") or 0),
                        cached_read=read,
                        cached_write=written,
                    ),
                    context_window=self.backend._window,
                )
            )

    def _assistant(self, message: dict[str, Any]) -> None:
        message_id = str(message.get("id", ""))
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                self._tool_use(block)
            elif message_id not in self.streamed and message.get("model") != "<synthetic>":
                if kind == "text" and block.get("text"):
                    self.emit(TextDelta(str(block["text"])))
                elif kind == "thinking" and block.get("thinking"):
                    self.emit(ThoughtDelta(str(block["thinking"])))

    def _tool_use(self, block: dict[str, Any]) -> None:
        call_id = str(block.get("id", ""))
        if call_id in self.started:
            return
        name = str(block.get("name", ""))
        tool_input = _as_dict(block.get("input"))
        started = describe_tool(call_id, name, tool_input, self.cwd)
        self.started[call_id] = started
        self.emit(started)
        if name == "TodoWrite":
            todos = tool_input.get("todos") or []
            self.emit(
                PlanUpdated(
                    tuple(
                        (
                            str(todo.get("content", "")),
                            _PLAN_STATUS.get(str(todo.get("status")), "pending"),
                        )
                        for todo in todos
                        if isinstance(todo, dict)
                    )
                )
            )

    def _tool_results(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call_id = str(block.get("tool_use_id", ""))
            text = _result_text(block.get("content"))
            failed = bool(block.get("is_error"))
            if failed and text.startswith("<tool_use_error>"):
                text = text.removeprefix("<tool_use_error>").removesuffix("</tool_use_error>")
            self.emit(
                ToolFinished(
                    call_id=call_id,
                    status="failed" if failed else "completed",
                    output=text,
                    content=text_content(text) if text else None,
                )
            )

    def _result(self, message: dict[str, Any]) -> StopReason:
        total = message.get("total_cost_usd")
        if isinstance(total, int | float):
            self.emit(CostReported(self.backend.turn_cost(float(total))))
        for usage in (message.get("modelUsage") or {}).values():
            if isinstance(usage, dict) and isinstance(usage.get("contextWindow"), int):
                self.backend._window = int(usage["contextWindow"])
        subtype = message.get("subtype")
        if subtype == "success" and not message.get("is_error"):
            return _STOP.get(str(message.get("stop_reason")), "end_turn")
        if subtype == "error_max_turns":
            return "max_turn_requests"
        if subtype == "error_during_execution" and not message.get("is_error"):
            return "cancelled"
        status = message.get("api_error_status")
        detail = str(message.get("result") or "") or "; ".join(
            str(e) for e in message.get("errors") or []
        )
        raise _Ended(
            classify(
                "claude",
                detail or f"the turn ended with {subtype}",
                status=status if isinstance(status, int) else None,
            )
        )

    # approvals

    async def _control_request(self, message: dict[str, Any]) -> None:
        request_id = str(message.get("request_id", ""))
        request = message.get("request") or {}
        if request.get("subtype") != "can_use_tool":
            self.backend.refuse_control(request_id, f"{request.get('subtype')} is not supported")
            return
        name = str(request.get("tool_name", ""))
        tool_input = _as_dict(request.get("input"))
        call_id = str(request.get("tool_use_id") or f"claude_{request_id}")
        started = self.started.get(call_id)
        if started is None:
            started = describe_tool(call_id, name, tool_input, self.cwd)
            self.started[call_id] = started
            self.emit(started)
        answer = await self.approve(_ask(started, name, tool_input, self.cwd, self.settings))
        self.backend.answer_permission(request_id, _permission_answer(answer, tool_input))


def _permission_answer(answer: Answer, tool_input: dict[str, Any]) -> dict[str, Any]:
    if answer.decision in ("allow_once", "allow_session"):
        return {"behavior": "allow", "updatedInput": tool_input}
    reply: dict[str, Any] = {"behavior": "deny", "message": answer.message or DENIED}
    if answer.decision == "cancelled":
        reply["interrupt"] = True
    return reply


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _user_line(prompt: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "session_id": "",
    }


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _full(path: str, cwd: Path) -> Path:
    return Path(path) if os.path.isabs(path) else cwd / path


def _edit_preview(name: str, tool_input: dict[str, Any], cwd: Path) -> list[ToolCallContent]:
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    if not path:
        return []
    full = _full(path, cwd)
    old = _read(full)
    if name == "Write":
        return [
            DiffToolCallContent(
                path=str(full), old_text=old, new_text=str(tool_input.get("content", ""))
            )
        ]
    edits: list[dict[str, Any]]
    if name == "MultiEdit":
        edits = [e for e in tool_input.get("edits") or [] if isinstance(e, dict)]
    elif name == "Edit":
        edits = [tool_input]
    else:
        return text_content(json.dumps(tool_input, indent=1)[:4000])
    if old is None:
        return text_content(json.dumps(tool_input, indent=1)[:4000])
    new = old
    for edit in edits:
        before, after = str(edit.get("old_string", "")), str(edit.get("new_string", ""))
        new = (
            new.replace(before, after) if edit.get("replace_all") else new.replace(before, after, 1)
        )
    return [DiffToolCallContent(path=str(full), old_text=old, new_text=new)]


def describe_tool(call_id: str, name: str, tool_input: dict[str, Any], cwd: Path) -> ToolStarted:
    """A Claude Code tool call as Cody shows it."""
    title, kind = claude_tool_display(name, tool_input)
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    locations = (str(_full(path, cwd)),) if path else ()
    content: list[ToolCallContent] | None = None
    if name == "Bash":
        content = text_content(f"$ {tool_input.get('command', '')}\ncwd: {cwd}")
    elif kind == "edit":
        content = _edit_preview(name, tool_input, cwd)
    return ToolStarted(
        call_id=call_id,
        tool=name,
        cody_tool=claude_tool_to_cody(name),
        title=title,
        kind=kind,
        raw_input=tool_input,
        arguments=json.dumps(tool_input, ensure_ascii=False),
        locations=locations,
        content=content,
    )


def _ask(
    started: ToolStarted,
    name: str,
    tool_input: dict[str, Any],
    cwd: Path,
    settings: BackendSettings,
) -> ApprovalAsk:
    content = started.content or text_content(json.dumps(tool_input, indent=1)[:4000])
    if name == "Bash":
        command = str(tool_input.get("command", ""))
        key = exec_grant_key(command)
        safe = exec_known_safe(command)
        content = [
            *content,
            *text_content("Claude Code has no sandbox: this runs with your access."),
        ]
    elif started.kind == "edit" and started.locations:
        key, safe = paths_grant_key(list(started.locations), cwd), False
    else:
        key, safe = canonical_key(name, tool_input), False
    return ApprovalAsk(
        call_id=started.call_id,
        cody_tool=started.cody_tool,
        title=started.title,
        kind=started.kind,
        raw_input=tool_input,
        content=content,
        grant_key=key,
        known_safe=safe,
        sandbox_violation=sandbox_violation(
            "claude",
            settings,
            cwd,
            cody_tool=started.cody_tool,
            known_safe=safe,
            paths=started.locations,
        ),
        runs_unsandboxed=name == "Bash",
    )
