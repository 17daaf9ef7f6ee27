"""A test harness around the real daemon process (spawned over stdio).

Every `session/update` and `session/request_permission` the daemon sends is validated
against ACP's schema and against Cody's protocol models as it arrives; `close()` fails the
test if any message was invalid. When a test fails, its report ends with each daemon's
stderr (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_client.connection import Framing, RemoteError
from cody_client.process import DaemonProcess
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.updates import SessionNotification

from . import stderr_report
from .acp_schema import acp_errors

DAEMON_COMMAND = [sys.executable, "-m", "cody_daemon"]


@dataclass
class CodyEnv:
    """Temp dirs standing in for HOME, CODY_HOME, CODEX_HOME, CLAUDE_CONFIG_DIR, TMPDIR."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def cody_home(self) -> Path:
        return self.root / "cody-home"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def tmpdir(self) -> Path:
        return self.root / "tmp"

    @classmethod
    def create(cls, root: Path) -> CodyEnv:
        self = cls(root)
        for name in ("home", "cody-home", "codex-home", "claude-config", "workspace", "tmp"):
            (root / name).mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(root / "home"),
            "CODY_HOME": str(root / "cody-home"),
            "CODEX_HOME": str(root / "codex-home"),
            "CLAUDE_CONFIG_DIR": str(root / "claude-config"),
            "TMPDIR": str(root / "tmp"),
            # `exec` starts no warm daemon of its own (it would outlive the test by its idle
            # time); tests/e2e/test_exec_own_daemon.py turns it on.
            "CODY_EXEC_DAEMON_IDLE": "0",
            # Language servers (ruff, basedpyright) are on PATH under `uv run`: only the
            # tests of diagnostics (tests/e2e/test_language_servers.py) turn them on.
            "CODY_LSP": "off",
        }
        for name in ("CODY_BWRAP", "VIRTUAL_ENV", "PYTHONPATH"):
            if name in os.environ:
                self.env[name] = os.environ[name]
        return self

    def write_config(self, text: str) -> None:
        (self.cody_home / "config.toml").write_text(text, encoding="utf-8")

    def use_mock_provider(self, base_url: str, extra: str = "") -> None:
        """Point the default provider at a local mock Responses server."""
        self.env["MOCK_API_KEY"] = "test-key-not-secret"
        self.write_config(
            'model_provider = "mock"\n'
            f"{extra}\n"
            "[model_providers.mock]\n"
            'name = "Mock"\n'
            f'base_url = "{base_url}"\n'
            'wire_api = "responses"\n'
            'env_key = "MOCK_API_KEY"\n'
            'default_model = "mock-model"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
        )


ApprovalPolicyFn = Callable[[dict[str, Any]], Any]


class Daemon:
    def __init__(self, process: DaemonProcess, cody_env: CodyEnv) -> None:
        self.process = process
        self.env = cody_env
        self.conn = process.connection
        self.received: list[dict[str, Any]] = []
        """Every message the daemon sent, in order."""
        self.conn.observe(self.received.append)
        self.stderr: list[str] = []
        """Every line the daemon wrote to stderr (the process keeps only a bounded tail);
        its end is shown when the test fails (tests/support/stderr_report.py)."""
        process.on_stderr = self.stderr.append
        child = getattr(process, "process", None)  # a warm daemon's connection has none
        if child is not None:
            stderr_report.watch(f"daemon (pid {child.pid})", self.stderr)
        self.updates: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.invalid: list[str] = []
        self._answers: list[Any] = []
        self.answer_fn: ApprovalPolicyFn | None = None
        self.permission_gate: asyncio.Event | None = None
        self.conn.on_notification("session/update", self._on_update)
        self.conn.on_request("session/request_permission", self._on_permission)

    @classmethod
    async def start(
        cls, cody_env: CodyEnv, *, framing: Framing = "lsp", args: tuple[str, ...] = ()
    ) -> Daemon:
        """`args`: extra `cody-daemon` options."""
        process = await DaemonProcess.spawn(
            [*DAEMON_COMMAND, *args], env=cody_env.env, framing=framing
        )
        return cls(process, cody_env)

    # -- validation -----------------------------------------------------------------------

    def _on_update(self, params: Any) -> None:
        self.updates.append(params)
        for problem in acp_errors("SessionNotification", params):
            self.invalid.append(f"session/update: {problem}")
        try:
            SessionNotification.model_validate(params)
        except Exception as exc:
            self.invalid.append(f"session/update vs Cody models: {exc}")

    async def _on_permission(self, params: Any) -> Any:
        self.permission_requests.append(params)
        for problem in acp_errors("RequestPermissionRequest", params):
            self.invalid.append(f"request_permission: {problem}")
        try:
            RequestPermissionParams.model_validate(params)
        except Exception as exc:
            self.invalid.append(f"request_permission vs Cody models: {exc}")
        if self.permission_gate is not None:
            await self.permission_gate.wait()
        if self.answer_fn is not None:
            answer = self.answer_fn(params)
        elif self._answers:
            answer = self._answers.pop(0)
        else:
            answer = "allow_once"
        if isinstance(answer, Exception):
            raise answer
        if answer == "hang":
            await asyncio.Event().wait()
        if answer == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        if isinstance(answer, dict):
            return answer
        return {"outcome": {"outcome": "selected", "optionId": answer}}

    def answer(self, *answers: Any) -> None:
        """Queue answers for the next approval requests (option ids, `cancelled`, `hang`)."""
        self._answers.extend(answers)

    # -- requests -------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None, *, timeout: float = 30) -> Any:
        return await asyncio.wait_for(self.conn.request(method, params), timeout)

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> Any:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": capabilities or {},
                "clientInfo": {"name": "tests", "version": "0"},
            },
        )
        problems = acp_errors("InitializeResponse", result)
        assert not problems, problems
        return result

    async def new_session(self, cwd: Path | str | None = None, **cody_meta: Any) -> str:
        params: dict[str, Any] = {"cwd": str(cwd or self.env.workspace), "mcpServers": []}
        if cody_meta:
            params["_meta"] = {"cody": cody_meta}
        result = await self.request("session/new", params)
        problems = acp_errors("NewSessionResponse", result)
        assert not problems, problems
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str, *, timeout: float = 60) -> Any:
        result = await self.request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
            timeout=timeout,
        )
        problems = acp_errors("PromptResponse", result)
        problems += acp_errors("PromptResponse", result, unstable=True)  # its `usage`
        assert not problems, problems
        return result

    async def set_config_option(self, session_id: str, config_id: str, value: Any) -> Any:
        """`session/set_config_option`, its answer checked against ACP's schema."""
        params = {"sessionId": session_id, "configId": config_id, "value": value}
        result = await self.request("session/set_config_option", params)
        problems = acp_errors("SetSessionConfigOptionResponse", result)
        assert not problems, problems
        return result

    def session_updates(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            u["update"]
            for u in self.updates
            if u.get("sessionId") == session_id
            and (kind is None or u["update"].get("sessionUpdate") == kind)
        ]

    def agent_text(self, session_id: str) -> str:
        return "".join(
            u["content"]["text"] for u in self.session_updates(session_id, "agent_message_chunk")
        )

    def tool_updates(self, session_id: str, call_id: str | None = None) -> list[dict[str, Any]]:
        return [
            u
            for u in self.session_updates(session_id)
            if u.get("sessionUpdate") in ("tool_call", "tool_call_update")
            and (call_id is None or u.get("toolCallId") == call_id)
        ]

    def mcp_statuses(self, server: str, session: str | None = None) -> list[dict[str, Any]]:
        """Every `_cody/mcp/status` the daemon sent about `server` (of `session`), in order."""
        return [
            m["params"]
            for m in self.received
            if m.get("method") == "_cody/mcp/status"
            and m["params"]["server"] == server
            and session in (None, m["params"]["sessionId"])
        ]

    async def wait_mcp_ready(
        self, *servers: str, session: str | None = None, timeout: float = 40
    ) -> None:
        """Wait until each server's latest status (in `session`) is `ready`: a turn started
        before that goes on without the servers still starting."""

        def ready() -> bool:
            return all(
                (found := self.mcp_statuses(server, session)) and found[-1]["state"] == "ready"
                for server in servers
            )

        await self.wait_for(ready, timeout)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("condition not met in time")
            await asyncio.sleep(0.01)

    async def close(self) -> int | None:
        code = await self.process.close()
        assert not self.invalid, "\n".join(self.invalid)
        return code


async def start_with_mock_key(env: CodyEnv, config: str) -> Daemon:
    """An initialized daemon on `config` (config.toml text) with `MOCK_API_KEY` set, the
    `env_key` the mock providers' blocks name."""
    env.env["MOCK_API_KEY"] = "test-key-not-secret"
    env.write_config(config)
    daemon = await Daemon.start(env)
    await daemon.initialize()
    return daemon


async def expect_error(awaitable: Any, code: int) -> RemoteError:
    try:
        await awaitable
    except RemoteError as exc:
        assert exc.code == code, f"expected {code}, got {exc.code}: {exc.message}"
        return exc
    raise AssertionError(f"expected error {code}, got a result")
