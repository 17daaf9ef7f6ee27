"""The Codex CLI as a session backend, through `codex app-server` (JSON-RPC over stdio).

Protocol (Codex CLI 0.169, observed; newline-delimited JSON-RPC without `"jsonrpc"`):
`initialize {clientInfo}` then the `initialized` notification; one thread per Cody session
(`thread/start {cwd, approvalPolicy, sandbox, model?}`, or `thread/resume {threadId, ...}` in
a new process); `turn/start {threadId, input, approvalPolicy, sandboxPolicy, model?, effort?}`
per prompt; `turn/interrupt {threadId, turnId}` to cancel. Events: `item/started`,
`item/completed`, `item/agentMessage/delta`, `item/reasoning/*Delta`,
`item/commandExecution/outputDelta`, `turn/plan/updated`, `thread/tokenUsage/updated`,
`error`, `turn/completed {turn: {status, error}}`. Approvals are server requests
(`item/commandExecution/requestApproval`, `item/fileChange/requestApproval`) answered
`accept` / `acceptForSession` / `decline` (the turn goes on) / `cancel` (the turn stops).

In an untrusted project whose git configuration could make the CLI's own per-turn `git
status` run a program, the turn is refused before the CLI starts (backends/project_guard.py).

Invariants (besides base.py's):
- one app-server process per live session, started at the first prompt; a process that
  exits is replaced at the next prompt, which resumes the thread by id;
- a server request the daemon does not handle is answered with an error (Codex counts that
  as a decline), never left pending;
- events of another turn (a late event of an interrupted one) are ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from cody_protocol.content import ToolCallContent
from cody_protocol.prompt import DryRunReport

from ..core.command_text import command_lines
from ..errors import ProviderError
from .base import (
    AgentBackend,
    Answer,
    ApprovalAsk,
    Approver,
    BackendEvent,
    BackendSettings,
    Decision,
    Launch,
    PlanStatus,
    PlanUpdated,
    ResumeIdAssigned,
    StopReason,
    TextDelta,
    ThoughtDelta,
    TokenCounts,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    UsageReported,
)
from .discovery import codex_bills_per_token, codex_home
from .display import (
    canonical_key,
    command_display,
    command_reads,
    exec_grant_key,
    exec_known_safe,
    file_diff,
    paths_grant_key,
    text_content,
)
from .env import codex_command_env_args, relevant_env_names
from .failures import classify, cli_exited, cli_garbage
from .mapping import CODEX_ENFORCEMENT, codex_policy, sandbox_violation
from .process import JsonLineProcess
from .project_guard import codex_git_refusal, codex_project_overrides

__all__ = ["CodexBackend"]

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT_S: Final = 60.0
INTERRUPT_GRACE_S: Final = 1.0
_OUTPUT_TAIL: Final = 8192
_DECISIONS: Final[dict[Decision, str]] = {
    "allow_once": "accept",
    "allow_session": "acceptForSession",
    "reject_once": "decline",
    "reject_session": "decline",
    "cancelled": "cancel",
}
_SANDBOX_POLICY: Final[dict[str, dict[str, Any]]] = {
    "read-only": {"type": "readOnly"},
    "workspace-write": {"type": "workspaceWrite"},
    "danger-full-access": {"type": "dangerFullAccess"},
}
_PLAN_STATUS: Final[dict[str, PlanStatus]] = {
    "pending": "pending",
    "inProgress": "in_progress",
    "completed": "completed",
}


class _Ended(Exception):
    """The process died or printed garbage (carries the classified error)."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(error.message)
        self.error = error


class _RpcFailed(Exception):
    def __init__(self, method: str, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else str(error)
        super().__init__(f"{method}: {message}")
        self.detail = str(message)


class CodexBackend(AgentBackend):
    kind = "codex"
    display_name = "Codex CLI"

    def __init__(self, launch: Launch) -> None:
        super().__init__(launch)
        self._proc: JsonLineProcess | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._inbox: asyncio.Queue[dict[str, Any] | _Ended] = asyncio.Queue()
        self._ids = 0
        self._thread_id: str | None = None
        self._turn_id: str | None = None
        self._dead: ProviderError | None = None
        self._applied: dict[str, Any] = {}
        """The settings the thread runs with (those given to thread/start and turn/start)."""

    # -- the command line -------------------------------------------------------------------

    def argv(self, settings: BackendSettings) -> list[str]:
        config = codex_home(self.launch.env) / "config.toml"
        args = [
            str(self.launch.cli),
            "app-server",
            *codex_command_env_args(self.launch.own_credentials, config),
        ]
        if not settings.project_trusted:
            args += codex_project_overrides(self.launch.cwd, codex_home(self.launch.env))
        return args

    def _thread_params(self, settings: BackendSettings) -> dict[str, Any]:
        policy = codex_policy(settings)
        params: dict[str, Any] = {
            "cwd": str(self.launch.cwd),
            "approvalPolicy": policy.approval_policy,
            "sandbox": policy.sandbox,
        }
        if settings.model:
            params["model"] = settings.model
        return params

    def _turn_params(
        self, thread_id: str, prompt: str, settings: BackendSettings
    ) -> dict[str, Any]:
        """`turn/start`; settings are sent only when they differ from the thread's (a changed
        setting costs Codex a new turn context, ~tens of ms)."""
        policy = codex_policy(settings)
        wanted: dict[str, Any] = {
            "approvalPolicy": policy.approval_policy,
            "sandboxPolicy": _SANDBOX_POLICY[policy.sandbox],
        }
        if settings.model:
            wanted["model"] = settings.model
        if settings.reasoning_effort:
            wanted["effort"] = settings.reasoning_effort
        changed = {k: v for k, v in wanted.items() if self._applied.get(k) != v}
        return {"threadId": thread_id, "input": [{"type": "text", "text": prompt}], **changed}

    def dry_run(self, prompt: str, settings: BackendSettings) -> DryRunReport:
        policy = codex_policy(settings)
        thread = self._thread_params(settings)
        if self.resume_id:
            first = {"method": "thread/resume", "params": {"threadId": self.resume_id, **thread}}
        else:
            first = {"method": "thread/start", "params": thread}
        found = self.launch.cli is not None
        return DryRunReport(
            backend="codex",
            command=self.argv(settings) if found else None,
            cwd=str(self.launch.cwd),
            env=relevant_env_names("codex", self.launch.env),
            flags={
                "approvalPolicy": policy.approval_policy,
                "sandbox": policy.sandbox,
                "model": settings.model,
                "effort": settings.reasoning_effort,
                "resume": self.resume_id,
            },
            allowed_tools=sorted(settings.allowed_tools) if settings.allowed_tools else None,
            backend_tools=None,
            requests=[
                {"method": "initialize", "params": {"clientInfo": {"name": "cody"}}},
                {"method": "initialized"},
                first,
                {
                    "method": "turn/start",
                    "params": self._turn_params(self.resume_id or "<thread id>", prompt, settings),
                },
            ],
            found=found,
            notes=[*policy.notes, CODEX_ENFORCEMENT]
            + ([] if found else [self.launch.install_hint]),
        )

    # -- the process ------------------------------------------------------------------------

    async def _ensure_process(self, settings: BackendSettings) -> None:
        if self._proc is not None and self._proc.running and self._dead is None:
            return
        await self._reset()
        assert self.launch.cli is not None
        self._proc = JsonLineProcess(
            self.argv(settings),
            cwd=self.launch.cwd,
            env=self.launch.env,
            on_message=self._on_message,
            on_garbage=self._on_garbage,
            on_exit=self._on_exit,
        )
        try:
            await self._proc.start()
        except OSError as exc:
            self._proc = None
            raise classify("codex", f"cannot start {self.launch.cli}: {exc.strerror}") from None
        await self._request(
            "initialize",
            {"clientInfo": {"name": "cody", "title": "Cody", "version": "1"}},
        )
        self._notify("initialized")

    async def _reset(self) -> None:
        if self._proc is not None:
            await self._proc.kill()
        self._proc = None
        self._dead = None
        self._thread_id = None
        self._turn_id = None
        self._applied = {}
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
        self._inbox = asyncio.Queue()

    def _on_message(self, message: dict[str, Any]) -> None:
        if "method" not in message and "id" in message:
            future = (
                self._pending.pop(message["id"], None) if isinstance(message["id"], int) else None
            )
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(_RpcFailed("request", message["error"]))
                else:
                    future.set_result(message.get("result"))
            return
        self._inbox.put_nowait(message)

    def _fail_everything(self, error: ProviderError) -> None:
        if self._dead is None:
            self._dead = error
        for future in self._pending.values():
            if not future.done():
                future.set_exception(_Ended(error))
        self._pending.clear()
        self._inbox.put_nowait(_Ended(error))

    def _on_garbage(self, sample: str) -> None:
        self._fail_everything(cli_garbage("codex", sample))

    def _on_exit(self, code: int | None) -> None:
        tail = self._proc.stderr_tail if self._proc is not None else ""
        self._fail_everything(cli_exited("codex", code, tail))

    def _notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        assert self._proc is not None
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self._proc.send(message)

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        assert self._proc is not None
        if self._dead is not None:
            raise _Ended(self._dead)
        self._ids += 1
        request_id = self._ids
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._proc.send({"id": request_id, "method": method, "params": params})
        await self._proc.drain()
        try:
            return await asyncio.wait_for(future, REQUEST_TIMEOUT_S)
        except _RpcFailed as exc:
            raise _RpcFailed(method, {"message": exc.detail}) from None
        except TimeoutError:
            raise classify(
                "codex", f"no answer to {method} within {REQUEST_TIMEOUT_S:g} s"
            ) from None
        finally:
            self._pending.pop(request_id, None)

    def _respond(self, request_id: Any, result: Any = None, error: str | None = None) -> None:
        if self._proc is None:
            return
        if error is not None:
            self._proc.send({"id": request_id, "error": {"code": -32601, "message": error}})
        else:
            self._proc.send({"id": request_id, "result": result})

    # -- a turn -----------------------------------------------------------------------------

    async def run_turn(
        self,
        prompt: str,
        settings: BackendSettings,
        emit: Callable[[BackendEvent], None],
        approve: Approver,
    ) -> StopReason:
        if not settings.project_trusted:
            refusal = await asyncio.to_thread(codex_git_refusal, self.launch.cwd, self.launch.env)
            if refusal is not None:
                raise refusal
        try:
            await self._ensure_process(settings)
            thread_id = await self._ensure_thread(settings, emit)
            started = await self._request(
                "turn/start", self._turn_params(thread_id, prompt, settings)
            )
        except _Ended as exc:
            raise exc.error from None
        except _RpcFailed as exc:
            raise classify("codex", exc.detail) from None
        turn_id = str(((started or {}).get("turn") or {}).get("id", ""))
        self._turn_id = turn_id
        policy = codex_policy(settings)
        self._applied.update(
            approvalPolicy=policy.approval_policy,
            sandboxPolicy=_SANDBOX_POLICY[policy.sandbox],
            model=settings.model,
            effort=settings.reasoning_effort,
        )
        turn = _CodexTurn(self, thread_id, turn_id, emit=emit, approve=approve, settings=settings)
        try:
            return await turn.run()
        finally:
            if self._turn_id == turn_id:
                self._turn_id = None

    async def _ensure_thread(
        self, settings: BackendSettings, emit: Callable[[BackendEvent], None]
    ) -> str:
        if self._thread_id is not None:
            return self._thread_id
        params = self._thread_params(settings)
        if self.resume_id:
            try:
                result = await self._request(
                    "thread/resume", {"threadId": self.resume_id, **params}
                )
            except _RpcFailed as exc:
                raise classify(
                    "codex",
                    f"cannot resume Codex thread {self.resume_id} ({exc.detail}); its rollout "
                    "file may have been deleted or CODEX_HOME changed",
                ) from None
        else:
            result = await self._request("thread/start", params)
        thread = (result or {}).get("thread") or {}
        thread_id = str(thread.get("id", ""))
        provider, model = thread.get("modelProvider"), thread.get("model")
        if (
            provider == "openai"
            and isinstance(model, str)
            and codex_bills_per_token(self.launch.env)
        ):
            self.priced_model = ("openai", model)
        if not thread_id:
            raise classify("codex", "thread/start answered without a thread id")
        self._thread_id = thread_id
        policy = codex_policy(settings)
        self._applied = {
            "approvalPolicy": policy.approval_policy,
            "sandboxPolicy": _SANDBOX_POLICY[policy.sandbox],
            "model": settings.model,
            "effort": None,
        }
        if thread_id != self.resume_id:
            self.resume_id = thread_id
            emit(ResumeIdAssigned(thread_id))
        return thread_id

    async def next_message(self) -> dict[str, Any]:
        item = await self._inbox.get()
        if isinstance(item, _Ended):
            raise item
        return item

    # -- cancel / close ---------------------------------------------------------------------

    async def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.running and self._dead is None:
            if self._thread_id and self._turn_id:
                with contextlib.suppress(Exception):
                    self._proc_send_interrupt(self._thread_id, self._turn_id)
                    await proc.drain()
                    await asyncio.wait_for(self._wait_turn_end(self._turn_id), INTERRUPT_GRACE_S)
            await proc.close_stdin()
        await self._reset()

    def _proc_send_interrupt(self, thread_id: str, turn_id: str) -> None:
        assert self._proc is not None
        self._ids += 1
        self._proc.send(
            {
                "id": self._ids,
                "method": "turn/interrupt",
                "params": {"threadId": thread_id, "turnId": turn_id},
            }
        )

    async def _wait_turn_end(self, turn_id: str) -> None:
        while True:
            message = await self.next_message()
            if "id" in message and "method" in message:
                self._respond(message["id"], error="the turn is being cancelled")
            elif message.get("method") == "turn/completed":
                turn = (message.get("params") or {}).get("turn") or {}
                if turn.get("id") == turn_id:
                    return


class _CodexTurn:
    """The events of one turn, translated (see the module docstring)."""

    def __init__(
        self,
        backend: CodexBackend,
        thread_id: str,
        turn_id: str,
        *,
        emit: Callable[[BackendEvent], None],
        approve: Approver,
        settings: BackendSettings,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.emit = emit
        self.approve = approve
        self.cwd: Path = backend.launch.cwd
        self.items: dict[str, dict[str, Any]] = {}
        """Tool items started in this turn (for approval previews and results)."""
        self.streamed: set[str] = set()
        """Message/reasoning items whose text arrived as deltas."""
        self.output: dict[str, str] = {}
        self.last_error: dict[str, Any] | None = None
        self.window: int | None = None

    async def run(self) -> StopReason:
        try:
            while True:
                message = await self.backend.next_message()
                method = str(message.get("method", ""))
                params = message.get("params") or {}
                if "id" in message:
                    await self._server_request(message["id"], method, params)
                    continue
                if params.get("turnId") not in (None, self.turn_id):
                    continue
                if method == "turn/completed":
                    turn = params.get("turn") or {}
                    if turn.get("id") != self.turn_id:
                        continue
                    return self._finish(turn)
                self._notification(method, params)
        except _Ended as exc:
            raise exc.error from None

    def _finish(self, turn: dict[str, Any]) -> StopReason:
        status = turn.get("status")
        if status == "completed":
            return "end_turn"
        if status == "interrupted":
            return "cancelled"
        error = turn.get("error") or self.last_error or {}
        raise _classify_turn_error(error)

    # notifications

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "item/agentMessage/delta":
            self.streamed.add(str(params.get("itemId")))
            self.emit(TextDelta(str(params.get("delta", ""))))
        elif method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            self.streamed.add(str(params.get("itemId")))
            self.emit(ThoughtDelta(str(params.get("delta", ""))))
        elif method == "item/reasoning/summaryPartAdded":
            if int(params.get("summaryIndex") or 0) > 0:
                self.emit(ThoughtDelta("\n\n"))
        elif method == "item/started":
            self._item_started(params.get("item") or {})
        elif method == "item/completed":
            self._item_completed(params.get("item") or {})
        elif method == "item/commandExecution/outputDelta":
            item_id = str(params.get("itemId"))
            delta = str(params.get("delta", ""))
            self.output[item_id] = (self.output.get(item_id, "") + delta)[-_OUTPUT_TAIL:]
            self.emit(ToolOutput(item_id, delta))
        elif method == "turn/plan/updated":
            entries = tuple(
                (str(step.get("step", "")), _PLAN_STATUS.get(str(step.get("status")), "pending"))
                for step in params.get("plan") or []
                if isinstance(step, dict)
            )
            self.emit(PlanUpdated(entries))
        elif method == "thread/tokenUsage/updated":
            usage = params.get("tokenUsage") or {}
            last = usage.get("last") or {}
            window = usage.get("modelContextWindow")
            self.emit(
                UsageReported(
                    last=TokenCounts(
                        input=int(last.get("inputTokens") or 0),
                        output=int(last.get("outputTokens") or 0),
                        cached_read=int(last.get("cachedInputTokens") or 0),
                        cached_write=int(last.get("cacheWriteInputTokens") or 0),
                        reasoning=int(last.get("reasoningOutputTokens") or 0),
                    ),
                    context_window=int(window) if isinstance(window, int) else None,
                )
            )
        elif method == "error" and not params.get("willRetry"):
            self.last_error = params.get("error") or {}

    def _item_started(self, item: dict[str, Any]) -> None:
        started = self._describe(item)
        if started is None:
            return
        self.items[started.call_id] = item
        self.emit(started)

    def _describe(self, item: dict[str, Any]) -> ToolStarted | None:
        kind = item.get("type")
        item_id = str(item.get("id", ""))
        if kind == "commandExecution":
            command = command_display(str(item.get("command", "")))
            cwd = str(item.get("cwd") or self.cwd)
            raw = {"command": command, "cwd": cwd}
            return ToolStarted(
                call_id=item_id,
                tool="commandExecution",
                cody_tool="exec",
                title=command,
                kind="execute",
                raw_input=raw,
                arguments=json.dumps(raw),
                content=text_content("\n".join([*command_lines(command), f"cwd: {cwd}"])),
            )
        if kind == "fileChange":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
            paths = [str(c.get("path", "")) for c in changes]
            content: list[ToolCallContent] = [
                file_diff(
                    str(c.get("path", "")),
                    str((c.get("kind") or {}).get("type", "update")),
                    str(c.get("diff", "")),
                    self.cwd,
                )
                for c in changes
            ]
            raw_changes = [
                {"path": str(c.get("path", "")), "kind": (c.get("kind") or {}).get("type")}
                for c in changes
            ]
            return ToolStarted(
                call_id=item_id,
                tool="fileChange",
                cody_tool="applyPatch",
                title="Edit " + ", ".join(_short(p, self.cwd) for p in paths),
                kind="edit",
                raw_input={"changes": raw_changes},
                arguments=json.dumps({"changes": changes}),
                locations=tuple(paths),
                content=content,
            )
        if kind == "mcpToolCall":
            server, tool = str(item.get("server", "")), str(item.get("tool", ""))
            arguments = item.get("arguments")
            return ToolStarted(
                call_id=item_id,
                tool="mcpToolCall",
                cody_tool=f"mcp__{server}__{tool}",
                title=f"{server}: {tool}",
                kind="other",
                raw_input=arguments,
                arguments=json.dumps(arguments),
            )
        if kind == "webSearch":
            query = str(item.get("query", ""))
            return ToolStarted(
                call_id=item_id,
                tool="webSearch",
                cody_tool="webSearch",
                title=f"Search the web: {query}",
                kind="fetch",
                raw_input={"query": query},
                arguments=json.dumps({"query": query}),
            )
        return None

    def _item_completed(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        item_id = str(item.get("id", ""))
        if kind == "agentMessage":
            if item_id not in self.streamed and item.get("text"):
                self.emit(TextDelta(str(item["text"])))
            return
        if kind == "reasoning":
            if item_id not in self.streamed:
                text = "\n\n".join(str(s) for s in item.get("summary") or [] if s)
                if text:
                    self.emit(ThoughtDelta(text))
            return
        if item_id not in self.items:
            if self._describe(item) is None:
                return
            self._item_started(item)
        status = str(item.get("status", ""))
        if kind == "commandExecution":
            exit_code = item.get("exitCode")
            output = item.get("aggregatedOutput")
            if output is None:
                output = self.output.get(item_id, "")
            if status == "declined":
                output = "User denied approval"
            ok = status == "completed" and exit_code in (0, None)
            raw: dict[str, Any] = {"exitCode": exit_code, "durationMs": item.get("durationMs")}
            self.emit(
                ToolFinished(
                    call_id=item_id,
                    status="completed" if ok else "failed",
                    output=str(output),
                    content=text_content(str(output)) if output else None,
                    raw_output=raw,
                )
            )
        elif kind == "fileChange":
            ok = status == "completed"
            text = "applied" if ok else ("User denied approval" if status == "declined" else status)
            self.emit(
                ToolFinished(
                    call_id=item_id,
                    status="completed" if ok else "failed",
                    output=text,
                )
            )
        else:
            error = item.get("error")
            result = item.get("result")
            ok = status in ("completed", "") and not error
            text = json.dumps(result if ok else error) if (result or error) else status
            self.emit(
                ToolFinished(call_id=item_id, status="completed" if ok else "failed", output=text)
            )

    # approvals

    async def _server_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        if method not in (
            "item/commandExecution/requestApproval",
            "item/fileChange/requestApproval",
        ):
            self.backend._respond(request_id, error=f"{method} is not supported by Cody")
            return
        ask = await asyncio.to_thread(self._ask, method, params)  # reads git config files
        answer: Answer = await self.approve(ask)
        self.backend._respond(request_id, {"decision": _DECISIONS[answer.decision]})

    def _ask(self, method: str, params: dict[str, Any]) -> ApprovalAsk:
        item_id = str(params.get("itemId", ""))
        item = self.items.get(item_id, {})
        if method == "item/commandExecution/requestApproval":
            command = str(params.get("command") or item.get("command") or "")
            shown = command_display(command)
            cwd = str(params.get("cwd") or item.get("cwd") or self.cwd)
            lines = [*command_lines(shown), f"cwd: {cwd}"]
            if params.get("reason"):
                lines += ["", f"Codex says: {params['reason']}"]
            lines += ["", "Once approved, Codex runs this command outside its sandbox."]
            env = self.backend.launch.env
            safe = bool(command) and exec_known_safe(command, cwd=Path(cwd), env=env)
            return ApprovalAsk(
                call_id=item_id,
                cody_tool="exec",
                title=shown,
                kind="execute",
                raw_input={"command": shown, "cwd": cwd},
                content=text_content("\n".join(lines)),
                grant_key=exec_grant_key(command) if command else canonical_key("exec", params),
                known_safe=safe,
                sandbox_violation=sandbox_violation(
                    "codex", self.settings, self.cwd, cody_tool="exec", known_safe=safe
                ),
                runs_unsandboxed=True,
                reads=command_reads(command, Path(cwd)),
            )
        described = self._describe(item) if item else None
        paths = list(described.locations) if described is not None else []
        return ApprovalAsk(
            call_id=item_id,
            cody_tool="applyPatch",
            title=described.title if described is not None else "Edit files",
            kind="edit",
            raw_input=described.raw_input if described is not None else {},
            content=(described.content or []) if described is not None else [],
            grant_key=(
                paths_grant_key(paths, self.cwd) if paths else canonical_key("applyPatch", params)
            ),
            sandbox_violation=sandbox_violation(
                "codex",
                self.settings,
                self.cwd,
                cody_tool="applyPatch",
                known_safe=False,
                paths=tuple(paths),
            ),
        )


def _short(path: str, cwd: Path) -> str:
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path


def _classify_turn_error(error: dict[str, Any]) -> ProviderError:
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
        message += f" ({error['additionalDetails']})"
    return classify("codex", message, status=status, code=code)
