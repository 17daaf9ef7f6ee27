"""The warm daemon (`cody-daemon --listen`) attacked as another local user, a broken client
and a noisy one would, through a real daemon on a real socket (docs/architecture.md, "The
warm daemon"; issue 14: it keeps every promise of the stdio daemon).

Another user is played for real: the test process (root in CI) takes the effective uid of
`nobody` around a connect() or listen(), which is what SO_PEERCRED reports to the other end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import resource
import shutil
import socket
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.editor import ZED_CAPABILITIES, Editor
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs
from tests.support.warm_daemon import WarmDaemon, short_runtime_dir, warm_env

CLIENT = [sys.executable, "-m", "cody_client"]
NOBODY = 65534
INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'


@pytest.fixture
def runtime() -> Iterator[Path]:
    path = short_runtime_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def warm(
    cody_env: CodyEnv, model: MockResponsesServer, runtime: Path
) -> AsyncIterator[WarmDaemon]:
    warm_env(cody_env, runtime)
    cody_env.use_mock_provider(model.base_url)
    daemon = await WarmDaemon.start(cody_env)
    yield daemon
    assert await daemon.stop() == 0


@contextlib.contextmanager
def as_nobody() -> Iterator[None]:
    """Act as another user for the calls inside (effective uid and gid of `nobody`)."""
    if os.getuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs as root: this test must run there")
        pytest.skip("needs root to act as another user")
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


async def run_client(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT, *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def answers_initialize(path: Path) -> bool:
    """Whether a new connection to `path` is served (gets its `initialize` answered)."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(INITIALIZE)
        return bool(await asyncio.wait_for(reader.readline(), 10))
    except ConnectionError:
        return False
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def read_until_closed(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """Everything the other end sent, and whether it closed the connection in time."""
    sock.settimeout(timeout)
    received = bytearray()
    try:
        while chunk := sock.recv(1 << 20):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        return bytes(received), False
    return bytes(received), True


async def test_another_user_can_neither_talk_to_the_daemon_nor_pose_as_it(
    cody_env: CodyEnv, model: MockResponsesServer, runtime: Path
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.responder = lambda request: model.scripted(text("the real model answered"))
    runtime.chmod(0o755)  # reachable by nobody: only the checks below keep them out
    path = runtime / "d.sock"
    warm = await WarmDaemon.start(cody_env, str(path))
    try:
        path.chmod(0o666)  # a loose mode (an ACL, a careless chmod): SO_PEERCRED still holds
        intruder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with as_nobody():
            intruder.connect(str(path))
        with contextlib.suppress(ConnectionError):  # it may be closed already
            intruder.sendall(INITIALIZE)
        received, closed = await asyncio.to_thread(read_until_closed, intruder, 10)
        intruder.close()
        assert closed and received == b"", "closed unanswered"
        await asyncio.sleep(0.1)
        assert any(f"refused a connection from uid {NOBODY}" in line for line in warm.stderr)
    finally:
        assert await warm.stop() == 0

    # Now nobody listens where this user's client looks (a directory they can write to):
    # the client must not send a byte of its prompt there, and runs its own daemon instead.
    shared = runtime / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with as_nobody():
        impostor.bind(str(shared / "d.sock"))
        impostor.listen()
    assert os.lstat(shared / "d.sock").st_uid == NOBODY
    env = {**cody_env.env, "CODY_DAEMON_SOCKET": str(shared / "d.sock")}
    code, out, err = await run_client(env, cody_env.workspace, "exec", "secret prompt")
    assert code == 0, err
    assert "the real model answered" in out, "a spawned daemon ran the turn"
    impostor.settimeout(5)
    accepted, _ = impostor.accept()
    received, closed = await asyncio.to_thread(read_until_closed, accepted, 10)
    assert closed and received == b"", "the impostor got nothing, not even initialize"
    accepted.close()
    impostor.close()


async def test_approvals_and_file_writes_go_only_to_the_client_that_prompted(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    ws = warm.env.workspace
    model.enqueue(tool_call("writeFile", {"filePath": "a.txt", "content": "A1\n"}, call_id="w1"))
    model.enqueue(text("not written"))
    model.enqueue(tool_call("writeFile", {"filePath": "a.txt", "content": "A2\n"}, call_id="w2"))
    model.enqueue(text("written"))
    a = await warm.client(initialize=False)
    a_editor = Editor().attach(a)
    await a.initialize(ZED_CAPABILITIES)
    b = await warm.client(initialize=False)  # another editor, attached to A's session
    b_editor = Editor().attach(b)
    await b.initialize(ZED_CAPABILITIES)
    sid = await a.new_session(approvalPolicy="untrusted")  # edits ask
    await b.request("session/resume", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})

    a.permission_gate = asyncio.Event()
    a.answer("reject_once", "allow_once")
    turn = asyncio.ensure_future(a.prompt(sid, "write a.txt"))
    await a.wait_for(lambda: len(a.permission_requests) == 1)
    request_id = a.permission_requests[0]["_meta"]["cody"]["requestId"]
    # B answers A's approval by its id (ids are per connection: it is not B's to answer).
    allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    b.conn.send({"jsonrpc": "2.0", "id": request_id, "result": allow})
    await b.request("session/list", {})  # B's forged answer has been read by now
    a.permission_gate.set()
    assert (await turn)["stopReason"] == "end_turn"
    assert "denied" in tool_outputs(model.requests[1])["w1"].lower(), "A's rejection held"
    assert not (ws / "a.txt").exists()

    await a.prompt(sid, "write it now")

    assert a_editor.writes == [(str(ws / "a.txt"), "A2\n")], "through the prompting editor"
    assert b_editor.writes == [] and b_editor.reads == []
    assert b.permission_requests == []
    assert {m.get("method") for m in b.received} <= {"session/update", None}
    assert any(u.get("toolCallId") == "w2" for u in b.tool_updates(sid)), "B watched it"
    await a.close()
    await b.close()


async def test_a_client_that_dies_does_not_cancel_the_turn_another_client_prompted(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    """B prompts a session A opened, without loading it first; A is killed mid-turn. Before,
    only A was attached, so A's leaving closed the session and cancelled B's turn."""
    ws = warm.env.workspace
    model.enqueue(
        tool_call(
            "exec",
            {"command": "echo b > b.txt", "escalate": True, "justification": "asks"},
            call_id="e1",
        )
    )
    model.enqueue(text("B's turn finished"))
    a = await warm.client()
    sid = await a.new_session()
    b = await warm.client()
    b.permission_gate = asyncio.Event()
    turn = asyncio.ensure_future(b.prompt(sid, "B asks"))
    await b.wait_for(lambda: len(b.permission_requests) == 1)
    assert a.permission_requests == [], "the approval went to B, who prompted"

    a.process.kill()  # type: ignore[attr-defined]  # -9: the connection drops at once
    await asyncio.wait_for(a.conn.closed.wait(), 10)
    await asyncio.sleep(0.2)  # the daemon has seen A go
    b.permission_gate.set()

    assert (await turn)["stopReason"] == "end_turn"
    assert (ws / "b.txt").read_text() == "b\n"
    assert b.agent_text(sid) == "B's turn finished"
    await a.close()
    await b.close()


async def test_a_watcher_that_stops_reading_is_dropped_and_the_turn_goes_on(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    chunk = "x" * 2000
    model.responder = lambda request: model.scripted(text(chunk * 6000, chunks=6000))  # 12 MB
    a = await warm.client()
    sid = await a.new_session()
    stopped = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a terminal hit with Ctrl-Z
    stopped.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stopped.connect(str(warm.path))
    resume = {"sessionId": sid, "cwd": str(warm.env.workspace), "mcpServers": []}
    stopped.sendall(
        INITIALIZE
        + json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "session/resume", "params": resume}
        ).encode()
        + b"\n"
    )
    answered = bytearray()
    stopped.settimeout(10)
    while not re.search(rb'"id": ?2\b', answered):  # attached; from now on it reads nothing
        answered += await asyncio.to_thread(stopped.recv, 1 << 16)

    result = await a.prompt(sid, "stream a lot", timeout=120)

    assert result["stopReason"] == "end_turn"
    assert len(a.agent_text(sid)) == len(chunk) * 6000, "the prompter got every byte"
    received, closed = await asyncio.to_thread(read_until_closed, stopped, 20)
    stopped.close()
    assert closed, "the stopped watcher was dropped, not buffered for without bound"
    assert len(received) < 11_000_000
    assert any("stopped reading" in line for line in warm.stderr)
    assert (await a.prompt(sid, "again"))["stopReason"] == "end_turn", "the session is fine"
    await a.close()


async def test_a_connection_flood_leaves_connected_clients_their_turns_and_commands_spawn(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    ws = warm.env.workspace
    a = await warm.client()
    sid = await a.new_session()
    # 128 descriptors: the daemon serves at most 32 connections (a quarter), keeping the
    # rest for turns. Before, a flood of idle connections took them all.
    resource.prlimit(warm.process.pid, resource.RLIMIT_NOFILE, (128, 128))
    flood: list[socket.socket] = []
    for _ in range(150):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError, ConnectionRefusedError):
            sock.connect(str(warm.path))  # never initialized
        flood.append(sock)
    await a.wait_for(lambda: any("refusing new ones" in line for line in warm.stderr))

    model.enqueue(
        tool_call(
            "exec",
            {"command": "echo still here > alive.txt", "escalate": True, "justification": "asks"},
            call_id="e1",
        )
    )
    model.enqueue(text("done"))
    a.answer("allow_once")
    assert (await a.prompt(sid, "run it"))["stopReason"] == "end_turn"
    assert (ws / "alive.txt").read_text() == "still here\n"

    model.responder = lambda request: model.scripted(text("spawned answer"))
    env = {**warm.env.env, "MOCK_API_KEY": "client-key"}
    code, out, err = await run_client(env, ws, "exec", "hi")
    assert code == 0, err
    assert "spawned answer" in out
    assert model.requests[-1].headers["authorization"] == "Bearer client-key", "its own daemon"

    for sock in flood:
        sock.close()
    for _ in range(100):  # the daemon sees the flood's EOFs a moment later
        if await answers_initialize(warm.path):
            break
        await asyncio.sleep(0.1)
    assert any("serving new connections again" in line for line in warm.stderr)
    code, out, err = await run_client(env, ws, "exec", "hi")
    assert code == 0, err
    assert model.requests[-1].headers["authorization"] != "Bearer client-key", "warm again"
    await a.close()


async def test_one_client_s_shutdown_leaves_the_daemon_and_sigterm_saves_a_waiting_turn(
    warm: WarmDaemon, model: MockResponsesServer
) -> None:
    a = await warm.client()
    b = await warm.client()
    sid = await a.new_session()
    await b.request("shutdown")
    b.conn.notify("exit")
    await asyncio.wait_for(b.conn.closed.wait(), 10)
    await b.close()

    model.enqueue(text("still serving"))
    assert (await a.prompt(sid, "first"))["stopReason"] == "end_turn"
    model.enqueue(
        tool_call(
            "exec",
            {"command": "touch never.txt", "escalate": True, "justification": "asks"},
            call_id="e1",
        )
    )
    a.answer("hang")
    waiting = asyncio.ensure_future(a.prompt(sid, "the waiting turn"))
    await a.wait_for(lambda: len(a.permission_requests) == 1)

    assert await warm.stop() == 0
    with contextlib.suppress(Exception):
        await waiting
    await a.close()
    assert not warm.path.exists()
    assert not (warm.env.workspace / "never.txt").exists()

    later = await Daemon.start(warm.env)  # what SIGTERM saved, read by a fresh daemon
    await later.initialize()
    await later.request(
        "session/load", {"sessionId": sid, "cwd": str(warm.env.workspace), "mcpServers": []}
    )
    said = [u["content"]["text"] for u in later.session_updates(sid, "user_message_chunk")]
    assert said == ["first", "the waiting turn"]
    assert later.agent_text(sid).startswith("still serving")
    await later.close()


async def test_a_wedged_warm_daemon_does_not_hang_the_client(
    cody_env: CodyEnv,
    model: MockResponsesServer,
    runtime: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listener of this user's own uid that accepts and never answers (a warm daemon
    stopped with Ctrl-Z): the command gives up on it and spawns its own daemon."""
    from cody_client import warm

    cody_env.use_mock_provider(model.base_url)
    model.responder = lambda request: model.scripted(text("from a spawned daemon"))
    wedged = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    wedged.bind(str(runtime / "d.sock"))
    wedged.listen()
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in {**cody_env.env, "CODY_DAEMON_SOCKET": str(runtime / "d.sock")}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(warm, "WARM_ANSWER_TIMEOUT_S", 0.5, raising=False)

    async with warm.open_daemon() as client:
        assert client.warm is None and client.process is not None, "spawned its own"
        session = await client.new_session(str(cody_env.workspace))
        result = await session.prompt("hi")
    assert result.stop_reason == "end_turn"
    accepted, _ = wedged.accept()
    assert b'"initialize"' in accepted.recv(1 << 16), "it was asked, and did not answer"
    accepted.close()
    wedged.close()


def test_socket_modes_are_not_left_to_chmod(runtime: Path) -> None:
    """The socket is created 0600 whatever the umask (no window, no chmod that could follow a
    symlink swapped in), and a dangling symlink where the directory goes is a clear error."""
    from cody_daemon.rpc.listen import ListenError, ListenTarget, bind_socket

    before = os.umask(0)
    try:
        sock = bind_socket(ListenTarget(runtime / "own" / "d.sock", private_dir=True))
    finally:
        os.umask(before)
    sock.close()
    info = os.lstat(runtime / "own" / "d.sock")
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(runtime / "own").st_mode) == 0o700

    (runtime / "dangling").symlink_to(runtime / "nowhere")
    with pytest.raises(ListenError, match="not a directory"):
        bind_socket(ListenTarget(runtime / "dangling" / "d.sock", private_dir=True))
    assert not (runtime / "nowhere").exists()
