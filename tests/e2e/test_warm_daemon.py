"""The warm daemon (`cody-daemon --listen`) through a real socket: several clients, one
daemon, and every promise of the stdio daemon kept (docs/architecture.md, "The warm daemon")."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cody_client.connection import ConnectionClosed

from tests.support.daemon import DAEMON_COMMAND, CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, RecordedRequest, text, tool_call
from tests.support.model_inputs import tool_outputs, user_texts
from tests.support.warm_daemon import WarmDaemon, short_runtime_dir, warm_env

CLIENT = [sys.executable, "-m", "cody_client"]


@pytest.fixture
async def warm(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[WarmDaemon]:
    runtime = short_runtime_dir()
    warm_env(cody_env, runtime)
    cody_env.use_mock_provider(model.base_url)
    daemon = await WarmDaemon.start(cody_env)
    yield daemon
    assert await daemon.stop() == 0
    shutil.rmtree(runtime, ignore_errors=True)


def by_prompt(model: MockResponsesServer, scripts: dict[str, list[Any]]) -> None:
    """Answer each model request by the prompt of its turn: `scripts[word]` is that turn's
    list of responses, consumed in order (two clients' turns interleave)."""

    def respond(request: RecordedRequest) -> Any:
        prompt = user_texts(request)[-1]
        for word, queue in scripts.items():
            if word in prompt:
                return queue.pop(0)
        raise AssertionError(f"no script for {prompt!r}")

    model.responder = respond


def exec_call(command: str, call_id: str) -> Any:
    """A command that asks (to run outside the sandbox), so its approval goes somewhere."""
    args = {"command": command, "escalate": True, "justification": "asks"}
    return tool_call("exec", args, call_id=call_id)


async def test_two_clients_see_only_their_own_answers_and_approvals(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    by_prompt(
        model,
        {
            "alpha": [
                model.scripted(exec_call("echo alpha > alpha.txt", "ca")),
                model.scripted(text("alpha done")),
            ],
            "beta": [model.scripted(text("beta answer", chunks=3))],
        },
    )
    a = await warm.client()
    b = await warm.client(framing="ndjson")  # framing is detected per connection
    sid_a = await a.new_session()
    sid_b = await b.new_session()
    a.answer("allow_once")

    result_a, result_b = await asyncio.gather(
        a.prompt(sid_a, "alpha: make the file"), b.prompt(sid_b, "beta: just talk")
    )

    assert result_a["stopReason"] == result_b["stopReason"] == "end_turn"
    assert [r["toolCall"]["toolCallId"] for r in a.permission_requests] == ["ca"]
    assert b.permission_requests == [], "B never hears of A's approval"
    assert {u["sessionId"] for u in a.updates} == {sid_a}
    assert {u["sessionId"] for u in b.updates} == {sid_b}
    assert a.agent_text(sid_a) == "alpha done"
    assert b.agent_text(sid_b) == "beta answer"
    assert (warm.env.workspace / "alpha.txt").read_text() == "alpha\n"
    await a.close()
    await b.close()


async def test_a_terminal_attaches_to_a_session_an_editor_has_open(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    by_prompt(
        model,
        {
            "first": [model.scripted(text("first answer"))],
            "second": [model.scripted(text("second answer", chunks=20), delay_s=0.05)],
        },
    )
    editor = await warm.client()
    sid = await editor.new_session()
    await editor.prompt(sid, "first question")
    editor.updates.clear()

    terminal = await warm.client()
    await terminal.request(
        "session/load", {"sessionId": sid, "cwd": str(warm.env.workspace), "mcpServers": []}
    )
    assert terminal.agent_text(sid) == "first answer", "the load replays to the terminal"
    assert editor.updates == [], "the replay goes to the client that loaded, not the editor"
    terminal.updates.clear()

    prompt = asyncio.ensure_future(editor.prompt(sid, "second question"))
    await editor.wait_for(lambda: "second" in editor.agent_text(sid))
    watcher = await warm.client()  # attaches while the turn runs
    await watcher.request(
        "session/resume", {"sessionId": sid, "cwd": str(warm.env.workspace), "mcpServers": []}
    )
    await prompt

    assert editor.agent_text(sid) == "second answer"
    await terminal.wait_for(lambda: terminal.agent_text(sid) == "second answer")
    await watcher.wait_for(lambda: watcher.agent_text(sid).endswith("answer"))
    assert terminal.permission_requests == watcher.permission_requests == []

    await terminal.request("session/close", {"sessionId": sid})
    model.responder = lambda request: model.scripted(text("still open"))
    await editor.prompt(sid, "third")  # the terminal's close did not close it for the editor
    assert editor.agent_text(sid).endswith("still open")
    for client in (editor, terminal, watcher):
        await client.close()


A_CLIENT = """
import asyncio, sys
from cody_client.client import CodyClient

async def main():
    reader, writer = await asyncio.open_unix_connection(sys.argv[1])
    async with CodyClient.connect(reader, writer) as client:
        async def ask(request):
            print("ASKED", flush=True)
            await asyncio.Event().wait()
        client.on_permission = ask
        session = await client.new_session(sys.argv[2])
        print("SESSION", session.id, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await session.prompt("alpha: touch it")

asyncio.run(main())
"""


async def test_a_killed_client_s_pending_approval_is_rejected_and_others_go_on(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    by_prompt(
        model,
        {
            "alpha": [
                model.scripted(exec_call("touch killed.txt", "ck")),
                model.scripted(text("ok, not touching it")),
            ],
            "orphan": [model.scripted(exec_call("touch orphan.txt", "co"))],
            "beta": [model.scripted(text("beta still works"))],
        },
    )
    a = await asyncio.create_subprocess_exec(
        sys.executable, "-c", A_CLIENT, str(warm.path), str(warm.env.workspace),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=warm.env.env,
    )  # fmt: skip
    assert a.stdout is not None and a.stdin is not None
    line = (await asyncio.wait_for(a.stdout.readline(), 30)).decode().split()
    assert line[0] == "SESSION", line
    sid_a = line[1]
    b = await warm.client()
    await b.request(
        "session/resume", {"sessionId": sid_a, "cwd": str(warm.env.workspace), "mcpServers": []}
    )
    a.stdin.write(b"go\n")
    await a.stdin.drain()
    assert (await asyncio.wait_for(a.stdout.readline(), 30)).decode().strip() == "ASKED"

    a.kill()  # -9, with the approval pending
    await a.wait()

    await b.wait_for(lambda: b.agent_text(sid_a) == "ok, not touching it", timeout=20)
    assert b.tool_updates(sid_a, "ck")[-1]["status"] == "failed"
    assert "denied" in tool_outputs(model.requests[-1])["ck"].lower()
    assert not (warm.env.workspace / "killed.txt").exists()
    assert b.permission_requests == [], "A's approval is never handed to B"

    # Nobody else on the session: the turn ends as at the stdio daemon's EOF, and is saved.
    c = await warm.client()
    sid_c = await c.new_session()
    c.answer("hang")
    orphan = asyncio.ensure_future(c.prompt(sid_c, "orphan: touch"))
    await c.wait_for(lambda: len(c.permission_requests) == 1)
    c.process.kill()  # type: ignore[attr-defined]
    with pytest.raises(ConnectionClosed):
        await orphan

    loaded = await load_when_idle(b, sid_c, warm.env.workspace)
    assert loaded is not None
    assert not (warm.env.workspace / "orphan.txt").exists()
    assert b.permission_requests == []

    sid_b = await b.new_session()
    assert (await b.prompt(sid_b, "beta: are you there"))["stopReason"] == "end_turn"
    assert b.agent_text(sid_b) == "beta still works"
    await b.close()


async def load_when_idle(client: Daemon, session_id: str, cwd: Path) -> Any:
    """session/load, retried while the dropped client's turn is still winding down."""
    for _ in range(200):
        try:
            return await client.request(
                "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
            )
        except Exception as exc:
            if "running a turn" not in str(exc):
                raise
            await asyncio.sleep(0.05)
    raise AssertionError("the dropped client's session stayed busy")


async def test_socket_modes_one_daemon_per_socket_stale_socket_replaced(
    cody_env: CodyEnv,
) -> None:
    runtime = short_runtime_dir()
    try:
        warm_env(cody_env, runtime)
        socket_dir = runtime / "cody"
        socket_dir.mkdir(mode=0o755)
        socket_dir.chmod(0o755)  # a loose mode is tightened
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        first_name = WarmPath.of(cody_env)
        stale.bind(str(first_name))
        stale.close()  # the file stays, nobody listens: a daemon that died with -9

        daemon = await WarmDaemon.start(cody_env)
        assert daemon.path == first_name
        assert stat.S_IMODE(os.stat(daemon.path).st_mode) == 0o600
        assert stat.S_ISSOCK(os.stat(daemon.path).st_mode)
        assert stat.S_IMODE(os.stat(socket_dir).st_mode) == 0o700
        client = await daemon.client()
        await client.new_session()

        second = await asyncio.create_subprocess_exec(
            *DAEMON_COMMAND, "--listen", env=cody_env.env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(second.communicate(), 30)
        assert second.returncode == 1
        assert f"already listening on {daemon.path}" in err.decode()
        assert f"pid {daemon.process.pid}" in err.decode()
        assert stat.S_ISSOCK(os.stat(daemon.path).st_mode), "the refused one left it alone"
        await client.close()

        assert await daemon.stop() == 0
        assert not daemon.path.exists(), "a clean stop removes the socket"
        assert any("stale socket" in line for line in daemon.stderr)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


class WarmPath:
    @staticmethod
    def of(cody_env: CodyEnv) -> Path:
        from cody_protocol.endpoint import default_socket_path

        return default_socket_path(cody_env.env)


async def run_exec(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT, *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_exec_uses_the_warm_daemon_and_spawns_its_own_without_one(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    model.responder = lambda request: model.scripted(text("hello from the model"))
    # The warm daemon was started with MOCK_API_KEY; this client's environment has another
    # key: the key the model sees tells which daemon ran the turn.
    client_env = {**warm.env.env, "MOCK_API_KEY": "client-key"}
    workspace = warm.env.workspace

    code, out, err = await run_exec(client_env, workspace, "exec", "hi")
    assert code == 0, err
    assert "hello from the model" in out
    assert model.requests[-1].headers["authorization"] == "Bearer test-key-not-secret"

    code, out, _ = await run_exec(client_env, workspace, "doctor", "--json")
    report = json.loads(out)
    assert report["daemon"] == {
        "warm": True,
        "socket": str(warm.path),
        "pid": warm.process.pid,
        "skipped": None,
    }

    code, out, err = await run_exec(client_env, workspace, "exec", "--no-daemon-socket", "hi")
    assert code == 0, err
    assert model.requests[-1].headers["authorization"] == "Bearer client-key"
    code, out, err = await run_exec(
        {**client_env, "CODY_DAEMON_SOCKET": ""}, workspace, "exec", "hi"
    )
    assert code == 0, err
    assert model.requests[-1].headers["authorization"] == "Bearer client-key"

    assert await warm.stop() == 0
    code, out, err = await run_exec(client_env, workspace, "exec", "hi")
    assert code == 0, err
    assert "hello from the model" in out
    assert model.requests[-1].headers["authorization"] == "Bearer client-key"
    code, out, _ = await run_exec(client_env, workspace, "doctor")
    assert f"spawned for each command (no warm daemon at {warm.path}" in out
