"""How `bench/run.py --peers` drives each agent: Cody and codex-acp over ACP, `codex app-server`
over its JSON-RPC, `claude -p` over stream-json (one process per session: it has no other way).

Every driver offers the same operations, timed by the caller with `time.perf_counter()`:
spawn (returning when the agent has answered its initialize), open a session, run a turn
(recording the first text delta, an approval request answered at once with "allow", and the
end), and read the process tree's CPU time and RSS. The CLIs installed from npm are a Node.js
launcher (`codex`, `codex-acp`) around a native binary, or a native binary (`claude`): CPU
and memory are summed over the whole process tree, which is what a user pays for.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_client.process import DaemonProcess

__all__ = [
    "AcpAgent",
    "ClaudeSession",
    "CodexAppServer",
    "Turn",
    "end_tree",
    "tree_cpu_ns",
    "tree_rss_mb",
]


# -- the process tree ------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _tree(pid: int) -> list[int]:
    children = _children()
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


async def end_tree(pid: int, close_input: Callable[[], None], grace_s: float = 3.0) -> None:
    """Close the agent's stdin, give its whole tree `grace_s` to exit, then SIGKILL what is left.

    The npm launchers run the native binary as a child that inherits the pipes, and asyncio
    only reports a process finished once every pipe is closed: a child left behind (codex-acp
    does not exit when its stdin closes) would keep `wait()` from ever returning.
    """
    members = _tree(pid)
    with contextlib.suppress(Exception):
        close_input()
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(m) for m in members):  # noqa: ASYNC110
        await asyncio.sleep(0.02)  # other processes' exits: nothing to await but polling
    for member in members:
        if _alive(member):
            with contextlib.suppress(OSError):
                os.kill(member, signal.SIGKILL)


def tree_cpu_ns(pid: int) -> int:
    """CPU time of `pid` and its descendants (every thread), from /proc/*/task/*/schedstat."""
    total = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{member}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    total += int((task / "schedstat").read_text().split()[0])
    return total


def tree_rss_mb(pid: int) -> float:
    """VmRSS of `pid` and its descendants, in MiB."""
    total = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


# -- a turn ----------------------------------------------------------------------------------


@dataclass
class Turn:
    """Timestamps (perf_counter seconds) of one turn, seen from the client."""

    started: float = field(default_factory=time.perf_counter)
    first_delta: float | None = None
    asked: float | None = None
    """When the approval request arrived (it is answered at once)."""
    ended: float = 0.0
    deltas: int = 0
    text: str = ""
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def delta(self, piece: str) -> None:
        if self.first_delta is None:
            self.first_delta = time.perf_counter()
        self.deltas += 1
        self.text += piece

    def finish(self) -> None:
        self.ended = time.perf_counter()
        self.done.set()

    @property
    def first_token_ms(self) -> float:
        assert self.first_delta is not None, "no text arrived"
        return (self.first_delta - self.started) * 1000

    @property
    def turn_ms(self) -> float:
        return (self.ended - self.started) * 1000

    @property
    def ask_ms(self) -> float:
        assert self.asked is not None, "no approval was asked"
        return (self.asked - self.started) * 1000


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


# -- ACP: Cody and codex-acp -----------------------------------------------------------------


class AcpAgent:
    """An ACP agent on stdio (Cody: Content-Length framing, what its client uses; codex-acp:
    newline-delimited JSON). Approvals are `session/request_permission`, answered with the
    first `allow_once` option."""

    def __init__(self, process: DaemonProcess, session_meta: Callable[[bool], dict[str, Any]]):
        self.process = process
        self._session_meta = session_meta
        self._turns: dict[str, Turn] = {}
        self.asked = 0
        self.updates = 0
        """`session/update` notifications received (e.g. the replay of `session/load`)."""
        connection = process.connection
        connection.on_notification("session/update", self._on_update)
        connection.on_request("session/request_permission", self._on_permission)

    @property
    def pid(self) -> int:
        return self.process.process.pid

    @classmethod
    async def spawn(
        cls,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        *,
        ndjson: bool = False,
        session_meta: Callable[[bool], dict[str, Any]] = lambda _approve: {},
    ) -> tuple[AcpAgent, float]:
        """Spawn and initialize; also returns spawn -> initialize answer in ms."""
        started = time.perf_counter()
        process = await DaemonProcess.spawn(
            argv, env=env, cwd=str(cwd), framing="ndjson" if ndjson else "lsp"
        )
        agent = cls(process, session_meta)
        await process.connection.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
                "clientInfo": {"name": "cody-bench", "version": "1"},
            },
        )
        return agent, _elapsed_ms(started)

    def _on_update(self, params: dict[str, Any]) -> None:
        self.updates += 1
        turn = self._turns.get(params.get("sessionId", ""))
        update = params.get("update") or {}
        if turn is not None and update.get("sessionUpdate") == "agent_message_chunk":
            turn.delta(str((update.get("content") or {}).get("text", "")))

    async def _on_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        turn = self._turns.get(params.get("sessionId", ""))
        if turn is not None and turn.asked is None:
            turn.asked = time.perf_counter()
        self.asked += 1
        options = params.get("options") or []
        chosen = next((o for o in options if o.get("kind") == "allow_once"), options[0])
        return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}

    async def new_session(self, cwd: Path, *, approve: bool = False) -> str:
        params: dict[str, Any] = {"cwd": str(cwd), "mcpServers": []}
        meta = self._session_meta(approve)
        if meta:
            params["_meta"] = meta
        result = await self.process.connection.request("session/new", params)
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str) -> Turn:
        turn = self._turns[session_id] = Turn()
        result = await self.process.connection.request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
        )
        turn.finish()
        del self._turns[session_id]
        if result.get("stopReason") != "end_turn":
            raise RuntimeError(f"turn ended {result}")
        return turn

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        return await self.process.connection.request(method, params)

    async def close(self) -> None:
        def close_input() -> None:
            stdin = self.process.process.stdin
            assert stdin is not None
            stdin.close()

        await end_tree(self.pid, close_input)
        await self.process.close(grace_s=1.0)


# -- newline-delimited JSON CLIs -------------------------------------------------------------


class _JsonLines:
    """A child process speaking one JSON object per line on stdio; `on_message` sees each."""

    def __init__(
        self, proc: asyncio.subprocess.Process, on_message: Callable[[dict[str, Any]], None]
    ):
        self.proc = proc
        self._on_message = on_message
        self.closed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        on_message: Callable[[dict[str, Any]], None],
    ) -> _JsonLines:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            cwd=cwd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=2**26,
        )
        return cls(proc, on_message)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                with contextlib.suppress(ValueError):
                    self._on_message(json.loads(line))
        finally:
            self.closed.set()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    async def close(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        await end_tree(self.proc.pid, stdin.close)
        await self.proc.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


async def _wait(event: asyncio.Event, lines: _JsonLines, what: str, limit_s: float = 120) -> None:
    """Wait for `event`, failing clearly when the CLI exits or hangs first."""
    waiter = asyncio.ensure_future(event.wait())
    closed = asyncio.ensure_future(lines.closed.wait())
    done, _ = await asyncio.wait({waiter, closed}, timeout=limit_s, return_when="FIRST_COMPLETED")
    waiter.cancel()
    closed.cancel()
    if not event.is_set():
        reason = "exited" if lines.closed.is_set() else f"did not finish within {limit_s} s"
        raise RuntimeError(f"{what}: the CLI {reason}")


class CodexAppServer:
    """`codex app-server`: JSON-RPC without the `jsonrpc` field, one line each way; threads are
    sessions; approvals are `item/commandExecution/requestApproval`, answered `accept`."""

    def __init__(self) -> None:
        self.lines: _JsonLines
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Event, list[dict[str, Any]]]] = {}
        self._turns: dict[str, Turn] = {}
        self.asked = 0

    @property
    def pid(self) -> int:
        return self.lines.proc.pid

    @classmethod
    async def spawn(
        cls, codex: Path, env: dict[str, str], cwd: Path
    ) -> tuple[CodexAppServer, float]:
        started = time.perf_counter()
        server = cls()
        server.lines = await _JsonLines.start([str(codex), "app-server"], env, cwd, server._on)
        await server.request("initialize", {"clientInfo": {"name": "cody-bench", "version": "1"}})
        elapsed = _elapsed_ms(started)
        server.lines.send({"method": "initialized"})
        return server, elapsed

    def _on(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params") or {}
        if method is None:
            waiting = self._pending.pop(int(message.get("id", -1)), None)
            if waiting is not None:
                waiting[1].append(message)
                waiting[0].set()
            return
        turn = self._turns.get(str(params.get("threadId", "")))
        if "id" in message:  # a request from the server: an approval
            if turn is not None and turn.asked is None:
                turn.asked = time.perf_counter()
            self.asked += 1
            self.lines.send({"id": message["id"], "result": {"decision": "accept"}})
        elif turn is None:
            return
        elif method == "item/agentMessage/delta":
            turn.delta(str(params.get("delta", "")))
        elif method == "turn/completed":
            status = (params.get("turn") or {}).get("status")
            if status != "completed":
                turn.text += f" [turn {status}: {params}]"
            turn.finish()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        event: asyncio.Event = asyncio.Event()
        answer: list[dict[str, Any]] = []
        self._pending[request_id] = (event, answer)
        self.lines.send({"id": request_id, "method": method, "params": params})
        await _wait(event, self.lines, method)
        if "error" in answer[0]:
            raise RuntimeError(f"{method}: {answer[0]['error']}")
        result: dict[str, Any] = answer[0]["result"]
        return result

    async def new_session(self, cwd: Path, *, approve: bool = False) -> str:
        result = await self.request(
            "thread/start",
            {
                "cwd": str(cwd),
                "approvalPolicy": "untrusted" if approve else "never",
                "sandbox": "danger-full-access",
            },
        )
        return str(result["thread"]["id"])

    async def prompt(self, thread_id: str, text: str) -> Turn:
        turn = self._turns[thread_id] = Turn()
        await self.request(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        )
        await _wait(turn.done, self.lines, "turn")
        del self._turns[thread_id]
        return turn

    async def close(self) -> None:
        await self.lines.close()


class ClaudeSession:
    """`claude -p` in stream-json mode, as the Agent SDK runs it: one process is one session.
    Its `initialize` is the SDK's `control_request` (the `system/init` line only comes with the
    first prompt). Approvals are `can_use_tool` control requests, answered `allow`."""

    ARGV = (
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
    )

    def __init__(self) -> None:
        self.lines: _JsonLines
        self._initialized = asyncio.Event()
        self._turn: Turn | None = None
        self.session_id = ""
        self.asked = 0

    @property
    def pid(self) -> int:
        return self.lines.proc.pid

    @classmethod
    async def spawn(
        cls,
        claude: Path,
        env: dict[str, str],
        cwd: Path,
        *,
        approve: bool = False,
        resume: str | None = None,
    ) -> tuple[ClaudeSession, float]:
        started = time.perf_counter()
        session = cls()
        mode = "default" if approve else "bypassPermissions"
        argv = [str(claude), *cls.ARGV, "--permission-mode", mode]
        if resume is not None:
            argv += ["--resume", resume]
        session.lines = await _JsonLines.start(argv, env, cwd, session._on)
        session.lines.send(
            {"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}
        )
        await _wait(session._initialized, session.lines, "initialize")
        return session, _elapsed_ms(started)

    def _on(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        turn = self._turn
        if kind == "control_response":
            self._initialized.set()
        elif kind == "system" and message.get("subtype") == "init":
            self.session_id = str(message.get("session_id", ""))
        elif kind == "control_request":
            request = message.get("request") or {}
            if request.get("subtype") == "can_use_tool":
                if turn is not None and turn.asked is None:
                    turn.asked = time.perf_counter()
                self.asked += 1
                allow = {"behavior": "allow", "updatedInput": request.get("input", {})}
                self.lines.send(
                    {
                        "type": "control_response",
                        "response": {
                            "subtype": "success",
                            "request_id": message.get("request_id"),
                            "response": allow,
                        },
                    }
                )
        elif turn is None:
            return
        elif kind == "stream_event":
            delta = (message.get("event") or {}).get("delta") or {}
            if delta.get("type") == "text_delta":
                turn.delta(str(delta.get("text", "")))
        elif kind == "result":
            if message.get("subtype") != "success":
                turn.text += f" [result {message.get('subtype')}]"
            turn.finish()

    async def prompt(self, text: str) -> Turn:
        turn = self._turn = Turn()
        self.lines.send(
            {
                "type": "user",
                "message": {"role": "user", "content": text},
                "parent_tool_use_id": None,
                "session_id": "",
            }
        )
        await _wait(turn.done, self.lines, "turn")
        self._turn = None
        return turn

    async def close(self) -> None:
        await self.lines.close()
