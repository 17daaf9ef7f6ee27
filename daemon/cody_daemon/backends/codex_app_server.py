"""The Codex CLI as a session backend, through `codex app-server` (JSON-RPC over stdio).

Protocol (Codex CLI 0.169; the messages Cody reads and sends are typed in codex_protocol.py,
generated from the CLI's own schema; newline-delimited JSON-RPC without `"jsonrpc"`):
`initialize {clientInfo, capabilities: {experimentalApi}}` then the `initialized`
notification; one thread per Cody session (`thread/start {cwd, approvalPolicy, permissions,
model?}`, or `thread/resume {threadId, ...}` in a new process); `turn/start {threadId, input,
approvalPolicy?, permissions?, model?, effort?}` per prompt (settings only when they changed);
`turn/interrupt {threadId, turnId}` to cancel. Events and approvals: codex_turn.py.

Codex runs its commands in its own sandbox, given Cody's as a permission profile
(codex_sandbox.py): `permissions` names it, and the answer's `activePermissionProfile` must
name it back, or the turn fails before anything runs (a CLI without profiles would otherwise
run with its own, weaker sandbox).

In an untrusted project whose git configuration could make the CLI's own per-turn `git
status` run a program, the turn is refused before the CLI starts (backends/project_guard.py).

Invariants (besides base.py's):
- one app-server process per live session, started at the first prompt; a process that
  exits is replaced at the next prompt, which resumes the thread by id; so is one whose
  command line no longer fits the turn (the protected paths of the sandbox changed);
- a server request the daemon does not handle is answered with an error (Codex counts that
  as a decline), never left pending;
- events of another turn (a late event of an interrupted one) are ignored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final, cast

from cody_protocol.prompt import DryRunReport

from .base import (
    BackendEvent,
    BackendSettings,
    Launch,
    PeerBackend,
    ResumeIdAssigned,
    StopReason,
    TurnIO,
)
from .codex_config import (
    codex_bills_per_token,
    codex_home,
    codex_login,
    codex_provider_env_key,
)
from .codex_protocol import (
    ActivePermissionProfile,
    ClientMethod,
    InitializeParams,
    Thread,
    ThreadStartParams,
    ThreadStartResponse,
    Turn,
    TurnCompletedNotification,
    TurnStartParams,
    TurnStartResponse,
)
from .codex_sandbox import CodexSandbox, codex_sandbox
from .codex_turn import CodexTurn, RpcFailed
from .env import codex_command_env_args, relevant_env_names
from .failures import classify
from .info import BackendInfo
from .mapping import codex_policy
from .peer import Message, view
from .project_guard import codex_git_refusal, codex_project_overrides

__all__ = ["BACKEND", "INFO", "CodexBackend"]

INFO: Final = BackendInfo(
    kind="codex",
    display_name="Codex CLI",
    subject="the Codex CLI",
    cli_name="codex",
    cli_env="CODEX_CLI_PATH",
    npm_package="@openai/codex",
    install_note="(or `brew install codex`)",
    login_hint="run `codex login` (or set OPENAI_API_KEY)",
    login=codex_login,
    env_prefixes=("CODEX_", "OPENAI_", "AZURE_OPENAI_", "RUST_LOG"),
    credentials=frozenset({"OPENAI_API_KEY", "CODEX_API_KEY", "AZURE_OPENAI_API_KEY"}),
    provider_env_key=codex_provider_env_key,
    enforcement=(
        "Codex runs its commands and edits in its own sandbox, given Cody's as a permission "
        "profile: the protected paths of Cody's sandbox (`.git`, `.cody`, nested repositories, "
        "Cody's own directories) read-only and the login files unreadable. Under approval "
        "`untrusted` (Cody's `untrusted` and `on-request`, and every policy without a sandbox) "
        "it asks Cody about every command and edit, and an approved command may run outside "
        "its sandbox (its model can ask for that), so it counts as unsandboxed. Under `never` "
        "and `on-failure` it runs commands and edits inside that sandbox without asking Cody, "
        "and refuses (`never`) or asks (`on-failure`) to leave it. Its tools cannot be "
        "withheld: tools outside the allowlist are declined by Cody when Codex asks."
    ),
)

REQUEST_TIMEOUT_S: Final = 60.0
INTERRUPT_GRACE_S: Final = 1.0


def _answer_id(message: Message) -> Any:
    """A JSON-RPC response names the request it answers by `id` (and has no `method`)."""
    if "method" not in message and isinstance(message.get("id"), int):
        return message["id"]
    return None


class CodexBackend(PeerBackend):
    info = INFO

    def __init__(self, launch: Launch) -> None:
        super().__init__(launch)
        self._thread_id: str | None = None
        self._turn_id: str | None = None
        self._applied: dict[str, Any] = {}
        """The settings the thread runs with (those given to thread/start and turn/start)."""

    # -- the command line -------------------------------------------------------------------

    def argv(self, settings: BackendSettings, sandbox: CodexSandbox) -> list[str]:
        home = codex_home(self.launch.env)
        args = [
            str(self.launch.cli),
            "app-server",
            *codex_command_env_args(self.launch.own_credentials, home / "config.toml"),
        ]
        if not settings.project_trusted:
            args += codex_project_overrides(self.launch.cwd, home)
        return [*args, *sandbox.args]

    def _thread_params(self, settings: BackendSettings, sandbox: CodexSandbox) -> ThreadStartParams:
        params: ThreadStartParams = {
            "cwd": str(self.launch.cwd),
            "approvalPolicy": codex_policy(settings).approval_policy,
            "permissions": sandbox.profile,
        }
        if settings.model:
            params["model"] = settings.model
        return params

    def _wanted(self, settings: BackendSettings, sandbox: CodexSandbox) -> dict[str, Any]:
        """The turn's settings as `turn/start` takes them."""
        return {
            "approvalPolicy": codex_policy(settings).approval_policy,
            "permissions": sandbox.profile,
            "model": settings.model,
            "effort": settings.reasoning_effort,
        }

    def _turn_params(
        self, thread_id: str, prompt: str, settings: BackendSettings, sandbox: CodexSandbox
    ) -> TurnStartParams:
        """`turn/start`; settings are sent only when they differ from the thread's (a changed
        setting costs Codex a new turn context, ~tens of ms)."""
        changed = {
            key: value
            for key, value in self._wanted(settings, sandbox).items()
            if value is not None and self._applied.get(key) != value
        }
        params = {"threadId": thread_id, "input": [{"type": "text", "text": prompt}], **changed}
        return cast(TurnStartParams, params)

    def dry_run(self, prompt: str, settings: BackendSettings) -> DryRunReport:
        policy = codex_policy(settings)
        sandbox = codex_sandbox(settings, self.launch.cwd, create=False)
        thread = self._thread_params(settings, sandbox)
        first: dict[str, Any]
        if self.resume_id:
            first = {"method": "thread/resume", "params": {"threadId": self.resume_id, **thread}}
        else:
            first = {"method": "thread/start", "params": thread}
        turn = self._turn_params(self.resume_id or "<thread id>", prompt, settings, sandbox)
        found = self.launch.cli is not None
        return DryRunReport(
            backend="codex",
            command=self.argv(settings, sandbox) if found else None,
            cwd=str(self.launch.cwd),
            env=relevant_env_names("codex", self.launch.env),
            flags={
                "approvalPolicy": policy.approval_policy,
                "sandbox": policy.sandbox,
                "permissions": sandbox.profile,
                "model": settings.model,
                "effort": settings.reasoning_effort,
                "resume": self.resume_id,
            },
            allowed_tools=sorted(settings.allowed_tools) if settings.allowed_tools else None,
            backend_tools=None,
            requests=[
                {"method": "initialize", "params": self._initialize_params()},
                {"method": "initialized"},
                first,
                {"method": "turn/start", "params": turn},
            ],
            found=found,
            notes=[*policy.notes, *sandbox.notes, INFO.enforcement]
            + ([] if found else [self.launch.install_hint]),
        )

    @staticmethod
    def _initialize_params() -> InitializeParams:
        # experimentalApi: `permissions` (the sandbox profile) is an experimental field
        return {
            "clientInfo": {"name": "cody", "title": "Cody", "version": "1"},
            "capabilities": {"experimentalApi": True},
        }

    # -- the process ------------------------------------------------------------------------

    async def _ensure_process(self, settings: BackendSettings, sandbox: CodexSandbox) -> None:
        wanted = self.argv(settings, sandbox)
        if self._peer is not None and self._peer.alive and self._peer.argv == wanted:
            return
        await self._reset()
        peer = await self._start_peer(wanted, _answer_id)
        await self.request("initialize", self._initialize_params())
        peer.send({"method": "initialized"})

    async def _reset(self) -> None:
        await self._close_peer()
        self._thread_id = None
        self._turn_id = None
        self._applied = {}

    async def request(self, method: ClientMethod, params: object) -> dict[str, Any]:
        """Send a request and return its `result` (`RpcFailed` for an error answer)."""
        assert self._peer is not None
        request_id = self._peer.next_id()
        message = {"id": request_id, "method": method, "params": params}
        answer = await self._peer.request(
            request_id, message, timeout_s=REQUEST_TIMEOUT_S, what=method
        )
        if "error" in answer:
            raise RpcFailed(method, answer["error"])
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    def respond(self, request_id: Any, result: object = None, error: str | None = None) -> None:
        if error is not None:
            self._send({"id": request_id, "error": {"code": -32601, "message": error}})
        else:
            self._send({"id": request_id, "result": result})

    # -- a turn -----------------------------------------------------------------------------

    async def turn(self, prompt: str, io: TurnIO) -> StopReason:
        settings = io.settings
        if not settings.project_trusted:
            refusal = await asyncio.to_thread(codex_git_refusal, self.launch.cwd, self.launch.env)
            if refusal is not None:
                raise refusal
        sandbox = await asyncio.to_thread(codex_sandbox, settings, self.launch.cwd)
        try:
            await self._ensure_process(settings, sandbox)
            thread_id = await self._ensure_thread(settings, sandbox, io.emit)
            params = self._turn_params(thread_id, prompt, settings, sandbox)
            started = view(TurnStartResponse, await self.request("turn/start", params))
        except RpcFailed as exc:
            raise classify("codex", exc.detail) from None
        turn_id = str(view(Turn, started.get("turn")).get("id", ""))
        self._turn_id = turn_id
        self._applied.update(self._wanted(settings, sandbox))
        try:
            return await CodexTurn(self, thread_id, turn_id, io).run()
        finally:
            if self._turn_id == turn_id:
                self._turn_id = None

    async def _ensure_thread(
        self,
        settings: BackendSettings,
        sandbox: CodexSandbox,
        emit: Callable[[BackendEvent], None],
    ) -> str:
        if self._thread_id is not None:
            return self._thread_id
        params = self._thread_params(settings, sandbox)
        if self.resume_id:
            try:
                answer = await self.request("thread/resume", {"threadId": self.resume_id, **params})
            except RpcFailed as exc:
                raise classify(
                    "codex",
                    f"cannot resume Codex thread {self.resume_id} ({exc.detail}); its rollout "
                    "file may have been deleted or CODEX_HOME changed",
                ) from None
        else:
            answer = await self.request("thread/start", params)
        result = view(ThreadStartResponse, answer)  # thread/resume answers the same fields
        thread = view(Thread, result.get("thread"))
        thread_id = str(thread.get("id", ""))
        if not thread_id:
            raise classify("codex", "thread/start answered without a thread id")
        active = view(ActivePermissionProfile, result.get("activePermissionProfile")).get("id")
        if active != sandbox.profile:
            raise classify(
                "codex",
                f"the CLI did not take Cody's sandbox (permission profile {sandbox.profile!r}; "
                f"it runs with {active!r}), so nothing was run. Cody needs a Codex CLI with "
                "permission profiles (tested with 0.169.0): update it, or use sandbox "
                "danger-full-access, where Codex asks Cody about every command",
            )
        provider, model = thread.get("modelProvider"), thread.get("model")
        if (
            provider == "openai"
            and isinstance(model, str)
            and codex_bills_per_token(self.launch.env)
        ):
            self.priced_model = ("openai", model)
        self._thread_id = thread_id
        self._applied = {**self._wanted(settings, sandbox), "effort": None}
        if thread_id != self.resume_id:
            self.resume_id = thread_id
            emit(ResumeIdAssigned(thread_id))
        return thread_id

    # -- cancel / close ---------------------------------------------------------------------

    async def stop(self) -> None:
        peer, thread_id, turn_id = self._peer, self._thread_id, self._turn_id
        if peer is not None and thread_id and turn_id:

            async def interrupt() -> None:
                request_id = peer.next_id()
                params = {"threadId": thread_id, "turnId": turn_id}
                peer.send({"id": request_id, "method": "turn/interrupt", "params": params})
                await peer.drain()

            def turn_over(message: Message) -> bool:
                params = view(TurnCompletedNotification, message.get("params"))
                return (
                    message.get("method") == "turn/completed"
                    and view(Turn, params.get("turn")).get("id") == turn_id
                )

            def refuse(message: Message) -> None:
                if "id" in message and "method" in message:
                    self.respond(message["id"], error="the turn is being cancelled")

            await peer.interrupt(interrupt, turn_over, refuse, grace_s=INTERRUPT_GRACE_S)
        await self._reset()


BACKEND: Final = CodexBackend
