"""The `backends` scenario of bench/run.py: what the daemon adds to a Codex CLI or Claude Code turn.

For each CLI (the pinned ones in tests/agents, offline against the loopback mock models of
tests/support), the same warm turn is timed two ways in one run:
- **alone**: this script speaks the CLI's own protocol to it directly (`codex app-server`
  JSON-RPC, `claude -p` stream-json), the way the daemon does;
- **daemon**: a Cody session with that backend, driven over the daemon's stdio.
Both measure from sending the prompt to the first text delta (first token) and to the end of
the turn, on CLIs that are already running (one warm-up turn each), with the same mock answer
(20 text deltas). The two are interleaved (alone, daemon, alone, ...) so that the load of a
shared machine drifts over both alike. The difference of the medians is the daemon's cost.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncio  # noqa: E402

from cody_client.process import DaemonProcess  # noqa: E402

from tests.support import mock_anthropic, mock_responses  # noqa: E402
from tests.support.agent_clis import (  # noqa: E402
    claude,
    claude_env,
    codex,
    codex_env,
    write_codex_config,
)

ANSWER = "one two three four five six seven eight nine ten " * 2
DAEMON = [sys.executable, "-m", "cody_daemon"]
Timing = tuple[float, float]
"""(first token, whole turn) in ms."""


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 1),
        "min": round(min(values), 1),
        "max": round(max(values), 1),
    }


class _Lines:
    """A CLI on stdio speaking newline-delimited JSON."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str], cwd: Path) -> _Lines:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            cwd=cwd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=2**24,
        )
        return cls(proc)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the CLI exited")
            message: dict[str, Any] = json.loads(line)
            if done(message):
                return message

    async def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def _codex_alone(
    env: dict[str, str], cwd: Path
) -> tuple[_Lines, Callable[[], Awaitable[Timing]]]:
    cli = await _Lines.start([str(codex()), "app-server"], env, cwd)
    cli.send(
        {
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "bench", "version": "1"}},
        }
    )
    await cli.until(lambda m: m.get("id") == 1)
    cli.send({"method": "initialized"})
    cli.send({"id": 2, "method": "thread/start", "params": {"cwd": str(cwd)}})
    answer = await cli.until(lambda m: m.get("id") == 2)
    thread = answer["result"]["thread"]["id"]
    ids = iter(range(10, 10_000))

    async def turn() -> Timing:
        started = time.perf_counter()
        cli.send(
            {
                "id": next(ids),
                "method": "turn/start",
                "params": {"threadId": thread, "input": [{"type": "text", "text": "hi"}]},
            }
        )
        await cli.until(lambda m: m.get("method") == "item/agentMessage/delta")
        token = time.perf_counter()
        await cli.until(lambda m: m.get("method") == "turn/completed")
        return (token - started) * 1000, (time.perf_counter() - started) * 1000

    return cli, turn


async def _claude_alone(
    env: dict[str, str], cwd: Path
) -> tuple[_Lines, Callable[[], Awaitable[Timing]]]:
    argv = [
        str(claude()),
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
    ]
    cli = await _Lines.start(argv, env, cwd)
    cli.send({"type": "control_request", "request_id": "i", "request": {"subtype": "initialize"}})
    await cli.until(lambda m: m.get("type") == "control_response")

    async def turn() -> Timing:
        started = time.perf_counter()
        cli.send(
            {
                "type": "user",
                "message": {"role": "user", "content": "hi"},
                "parent_tool_use_id": None,
                "session_id": "",
            }
        )
        await cli.until(
            lambda m: (
                m.get("type") == "stream_event"
                and (m.get("event") or {}).get("delta", {}).get("type") == "text_delta"
            )
        )
        token = time.perf_counter()
        await cli.until(lambda m: m.get("type") == "result")
        return (token - started) * 1000, (time.perf_counter() - started) * 1000

    return cli, turn


async def _daemon(
    kind: str, env: dict[str, str], cwd: Path
) -> tuple[DaemonProcess, Callable[[], Awaitable[Timing]]]:
    process = await DaemonProcess.spawn(DAEMON, env=env)
    connection = process.connection
    token_at: list[float] = []
    connection.on_notification(
        "session/update",
        lambda params: (
            token_at.append(time.perf_counter())
            if params["update"].get("sessionUpdate") == "agent_message_chunk"
            else None
        ),
    )
    await connection.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    created = await connection.request(
        "session/new", {"cwd": str(cwd), "mcpServers": [], "_meta": {"cody": {"backend": kind}}}
    )
    sid = created["sessionId"]

    async def turn() -> Timing:
        token_at.clear()
        started = time.perf_counter()
        result = await connection.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
        ended = time.perf_counter()
        assert result["stopReason"] == "end_turn", result
        return (token_at[0] - started) * 1000, (ended - started) * 1000

    return process, turn


def _daemon_env(root: Path, cli_env: dict[str, str]) -> dict[str, str]:
    env = dict(cli_env)
    env["CODY_HOME"] = str(root / "cody")
    env["CODEX_CLI_PATH"] = str(codex())
    env["CLAUDE_CLI_PATH"] = str(claude())
    (root / "cody").mkdir(exist_ok=True)
    (root / "cody" / "config.toml").write_text(
        'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n'
    )
    return env


async def _compare(
    runs: int,
    answer: Callable[[], None],
    alone: Callable[[], Awaitable[Timing]],
    daemon: Callable[[], Awaitable[Timing]],
) -> dict[str, Any]:
    timings: dict[str, list[Timing]] = {"alone": [], "daemon": []}
    for index in range(runs + 1):
        for name, turn in (("alone", alone), ("daemon", daemon)):
            answer()
            timing = await turn()
            if index:  # the first turn of each is a warm-up
                timings[name].append(timing)
    first = {name: [t[0] for t in values] for name, values in timings.items()}
    whole = {name: [t[1] for t in values] for name, values in timings.items()}
    return {
        "first_token_ms_alone": _summary(first["alone"]),
        "first_token_ms_daemon": _summary(first["daemon"]),
        "turn_ms_alone": _summary(whole["alone"]),
        "turn_ms_daemon": _summary(whole["daemon"]),
        "added_first_token_ms": round(
            statistics.median(first["daemon"]) - statistics.median(first["alone"]), 1
        ),
        "added_turn_ms": round(
            statistics.median(whole["daemon"]) - statistics.median(whole["alone"]), 1
        ),
    }


async def bench_backends(runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = root / "ws"
        cwd.mkdir()
        async with mock_responses.MockResponsesServer() as responses:
            write_codex_config(root / "codex-home", responses.base_url)
            env = codex_env(root / "home", root / "codex-home")
            cli, alone = await _codex_alone(env, cwd)
            process, daemon = await _daemon("codex", _daemon_env(root, env), cwd)
            try:
                results["codex"] = await _compare(
                    runs,
                    lambda: responses.enqueue(mock_responses.text(ANSWER, chunks=20)),
                    alone,
                    daemon,
                )
            finally:
                await process.close()
                await cli.close()
        async with mock_anthropic.MockAnthropicServer() as messages:
            env = claude_env(root / "home", root / "claude-config", messages.base_url)
            cli, alone = await _claude_alone(env, cwd)
            process, daemon = await _daemon("claude", _daemon_env(root, env), cwd)
            try:
                results["claude"] = await _compare(
                    runs,
                    lambda: messages.enqueue(mock_anthropic.text(ANSWER, chunks=20)),
                    alone,
                    daemon,
                )
            finally:
                await process.close()
                await cli.close()
    return results
