"""Processes that outlive their call: `exec` with `background` / `yieldMs` / `tty`, then
`readOutput`, `writeStdin`, `killProcess`, in process (real commands, real launcher), with
bubblewrap and without. The same through the daemon: tests/e2e/test_processes.py."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy, bwrap_path
from cody_daemon.tools.base import Tool, ToolContext, ToolError, ToolResult
from cody_daemon.tools.exec import ExecTool
from cody_daemon.tools.kill_process import KillProcessTool
from cody_daemon.tools.processes.buffers import OutputRing
from cody_daemon.tools.processes.host import ProcessHost
from cody_daemon.tools.processes.table import ProcessTable
from cody_daemon.tools.read_output import ReadOutputTool
from cody_daemon.tools.write_stdin import WriteStdinTool

from tests.support.processes import session_processes
from tests.support.workspaces import workspace_and_outside

EXEC, READ, WRITE, KILL = (
    ExecTool(kill_grace_s=0.5),
    ReadOutputTool(),
    WriteStdinTool(),
    KillProcessTool(),
)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return workspace_and_outside(tmp_path, monkeypatch).workspace


@pytest.fixture(params=["bwrap", "no-bwrap"])
def isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "bwrap":
        monkeypatch.delenv("CODY_BWRAP", raising=False)
        bwrap_path.cache_clear()
        if bwrap_path() is None:
            if os.environ.get("CI") == "true":
                pytest.fail("bubblewrap is required in CI but is not usable")
            pytest.skip("bubblewrap (bwrap) is not usable on this machine")
    else:
        monkeypatch.setenv("CODY_BWRAP", "none")
        bwrap_path.cache_clear()
    yield str(request.param)
    bwrap_path.cache_clear()


@pytest.fixture
async def table() -> AsyncIterator[ProcessTable]:
    async with session_processes(per_session=3, total=32) as processes:
        yield processes


def ctx(ws: Path, table: ProcessTable, *, turn: str = "t1", call: str = "c1") -> ToolContext:
    return ToolContext(
        session_id="s",
        call_id=call,
        cwd=ws,
        sandbox=SandboxPolicy.create("workspace-write", ws),
        processes=table,
        turn_id=turn,
    )


async def call(tool: Tool[Any], ws: Path, table: ProcessTable, raw: dict[str, Any]) -> ToolResult:
    return await tool.run(tool.parse(raw), ctx(ws, table))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def pids_with(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in cmdline and alive(int(entry)):
                found.append(int(entry))
    return found


async def gone(text: str, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while pids_with(text) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not pids_with(text)


def require_curl() -> None:
    if shutil.which("curl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("curl is required in CI")
        pytest.skip("curl is not installed")


# --- a server in the background, used by later commands ------------------------------------


async def test_a_background_server_answers_later_commands_and_its_log_is_readable(
    workspace: Path, table: ProcessTable, isolation: str
) -> None:
    require_curl()
    port = free_port()
    (workspace / "index.html").write_text("hello from the workspace\n")
    started = await call(
        EXEC,
        workspace,
        table,
        {"command": f"python3 -u -m http.server {port} --bind 127.0.0.1", "background": True},
    )
    assert started.success, started.output
    assert started.raw_output is not None and started.raw_output["running"] is True
    pid = started.raw_output["processId"]
    assert f'readOutput {{"processId": {pid}}}' in started.output
    ready = await call(READ, workspace, table, {"processId": pid, "waitMs": 10_000})
    assert "Serving HTTP" in ready.output
    fetched = await call(
        EXEC,
        workspace,
        table,
        {"command": f"curl -s --retry 5 --retry-connrefused http://127.0.0.1:{port}/index.html"},
    )
    assert "Exit code: 0" in fetched.output and "hello from the workspace" in fetched.output
    log = await call(READ, workspace, table, {"processId": pid, "waitMs": 5000})
    assert "GET /index.html HTTP/1.1" in log.output and '" 200 ' in log.output
    assert "Serving HTTP" not in log.output  # each read starts where the last one ended
    stopped = await call(KILL, workspace, table, {"processId": pid})
    assert "killed by SIGTERM" in stopped.output
    assert stopped.raw_output is not None and stopped.raw_output["running"] is False


async def test_a_sandboxed_server_is_not_reachable_from_outside_the_session(
    workspace: Path, table: ProcessTable
) -> None:
    """The session's network namespace: its commands see the server, the host does not."""
    bwrap_path.cache_clear()
    if bwrap_path() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")
    port = free_port()
    started = await call(
        EXEC,
        workspace,
        table,
        {"command": f"python3 -u -m http.server {port} --bind 127.0.0.1", "background": True},
    )
    assert started.raw_output is not None
    pid = started.raw_output["processId"]
    assert (
        "Serving HTTP"
        in (await call(READ, workspace, table, {"processId": pid, "waitMs": 10_000})).output
    )
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 2):
        pass
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        outside = listener.getsockname()[1]
        probe = await call(
            EXEC,
            workspace,
            table,
            {
                "command": [
                    "python3",
                    "-c",
                    f"import socket; socket.create_connection(('127.0.0.1', {outside}), 2)",
                ]
            },
        )
    finally:
        listener.close()
    assert "Exit code: 1" in probe.output and "ConnectionRefusedError" in probe.output


# --- yieldMs --------------------------------------------------------------------------------


async def test_yield_returns_the_partial_output_and_an_id_of_a_running_command(
    workspace: Path, table: ProcessTable, isolation: str
) -> None:
    tag = f"41.{os.getpid()}"
    result = await call(
        EXEC, workspace, table, {"command": f"echo started; sleep {tag}", "yieldMs": 800}
    )
    assert result.success
    assert "Still running after" in result.output
    assert "Output so far:\nstarted\n" in result.output
    assert result.raw_output is not None
    process_id = result.raw_output["processId"]
    assert pids_with(tag)
    nothing = await call(READ, workspace, table, {"processId": process_id})
    assert "No new output." in nothing.output and "running" in nothing.output
    killed = await call(KILL, workspace, table, {"processId": process_id})
    assert "killed by SIGTERM" in killed.output
    assert await gone(tag)


async def test_a_short_command_with_yield_still_returns_its_exit_code(
    workspace: Path, table: ProcessTable
) -> None:
    result = await call(EXEC, workspace, table, {"command": "echo quick; exit 3", "yieldMs": 5000})
    assert "Exit code: 3" in result.output and "quick" in result.output
    assert result.raw_output is not None and "processId" not in result.raw_output
    assert table.listed() == []


async def test_a_process_that_ended_keeps_its_last_output_and_exit_code(
    workspace: Path, table: ProcessTable
) -> None:
    result = await call(
        EXEC, workspace, table, {"command": "echo one; sleep 0.5; echo two; exit 4", "yieldMs": 200}
    )
    assert result.raw_output is not None
    process_id = result.raw_output["processId"]
    final = await call(READ, workspace, table, {"processId": process_id, "waitMs": 10_000})
    assert "exited with code 4" in final.output
    assert final.output.endswith("Output:\ntwo\n")  # "one" was in the first result
    assert [p.id for p in table.kept()] == [process_id]


# --- input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "tty"])
async def test_write_stdin_drives_a_python_repl(
    workspace: Path, table: ProcessTable, isolation: str, tty: bool
) -> None:
    started = await call(
        EXEC, workspace, table, {"command": ["python3", "-i", "-q"], "yieldMs": 500, "tty": tty}
    )
    assert started.raw_output is not None, started.output
    process_id = started.raw_output["processId"]
    answer = await call(
        WRITE,
        workspace,
        table,
        {"processId": process_id, "chars": "print(6*7)\n", "waitMs": 10_000},
    )
    assert "42" in answer.output
    if tty:
        probe = await call(
            WRITE,
            workspace,
            table,
            {
                "processId": process_id,
                "chars": "import os; print(os.isatty(0))\n",
                "waitMs": 10_000,
            },
        )
        assert "True" in probe.output
    ended = await call(
        WRITE,
        workspace,
        table,
        {"processId": process_id, "chars": "raise SystemExit(5)\n", "waitMs": 10_000},
    )
    assert "exited with code 5" in ended.output


async def test_eof_closes_a_pipe_input(workspace: Path, table: ProcessTable) -> None:
    started = await call(EXEC, workspace, table, {"command": "sort", "background": True})
    assert started.raw_output is not None
    process_id = started.raw_output["processId"]
    result = await call(
        WRITE,
        workspace,
        table,
        {"processId": process_id, "chars": "b\na\n", "eof": True, "waitMs": 10_000},
    )
    assert "exited with code 0" in result.output and "a\nb\n" in result.output


async def test_input_to_a_command_the_call_waited_for_is_refused(
    workspace: Path, table: ProcessTable
) -> None:
    with pytest.raises(ToolError, match="there is no process 7 in this session"):
        await call(WRITE, workspace, table, {"processId": 7, "chars": "x"})
    with pytest.raises(ToolError, match="no process 1"):
        await call(READ, workspace, table, {"processId": 1})


async def test_input_to_an_ended_process_says_how_it_ended(
    workspace: Path, table: ProcessTable
) -> None:
    started = await call(EXEC, workspace, table, {"command": "exit 2", "background": True})
    assert started.raw_output is not None
    process_id = started.raw_output["processId"]
    await call(READ, workspace, table, {"processId": process_id, "waitMs": 10_000})
    with pytest.raises(ToolError, match="exited with code 2"):
        await call(WRITE, workspace, table, {"processId": process_id, "chars": "x"})


# --- limits and bounds ----------------------------------------------------------------------


async def test_the_per_session_limit_is_a_clear_error_naming_the_processes(
    workspace: Path, table: ProcessTable
) -> None:
    tag = f"42.{os.getpid()}"
    for _ in range(3):
        await call(EXEC, workspace, table, {"command": f"sleep {tag}", "background": True})
    with pytest.raises(ToolError) as refused:
        await call(EXEC, workspace, table, {"command": "sleep 1", "background": True})
    assert "already runs 3 processes" in refused.value.message
    assert f"1: sleep {tag}" in refused.value.message and "killProcess" in refused.value.message
    done = await call(EXEC, workspace, table, {"command": "echo still fine"})
    assert "still fine" in done.output  # a command the call waits for is not limited
    await call(KILL, workspace, table, {"processId": 1})
    again = await call(EXEC, workspace, table, {"command": "echo room", "background": True})
    assert again.success


async def test_the_daemons_total_limit_is_a_clear_error_across_sessions(workspace: Path) -> None:
    tag = f"43.{os.getpid()}"
    host = ProcessHost(per_session=8, total=2)
    first, second = host.table("s1"), host.table("s2")
    try:
        for _ in range(2):
            await call(EXEC, workspace, first, {"command": f"sleep {tag}", "background": True})
        with pytest.raises(ToolError) as refused:
            await call(EXEC, workspace, second, {"command": "sleep 1", "background": True})
        assert "the daemon already runs 2 processes" in refused.value.message
        assert "the limit is 2" in refused.value.message
        done = await call(EXEC, workspace, second, {"command": "echo still fine"})
        assert "still fine" in done.output  # a command the call waits for is not limited
        await call(KILL, workspace, first, {"processId": 1})
        again = await call(EXEC, workspace, second, {"command": "echo room", "background": True})
        assert again.success
    finally:
        await host.close()
    assert await gone(f"sleep {tag}")


async def test_a_flooding_process_keeps_memory_bounded(
    workspace: Path, table: ProcessTable
) -> None:
    tracemalloc.start()
    try:
        started = await call(EXEC, workspace, table, {"command": "yes flood", "background": True})
        assert started.raw_output is not None
        process = table.get(started.raw_output["processId"])
        while process.ring.total < 40 * 1024 * 1024:
            await asyncio.sleep(0.1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024
    read = await call(READ, workspace, table, {"processId": process.id})
    assert "earlier bytes were dropped before they were read" in read.output
    assert len(read.output) < 70 * 1024
    await call(KILL, workspace, table, {"processId": process.id})


def test_the_ring_keeps_the_latest_bytes_and_counts_the_rest() -> None:
    ring = OutputRing(capacity=10)
    for chunk in (b"abcd", b"efgh", b"ijkl", b"mnop"):
        ring.append(chunk)
    assert ring.total == 16 and ring.start == 6
    read = ring.read(0)
    assert (read.data, read.dropped, read.end) == (b"ghijklmnop", 6, 16)
    assert ring.read(12).data == b"mnop"
    ring.append(b"x" * 25)
    assert ring.read(16) == type(read)(b"x" * 10, 15, 41)


# --- the end of a turn, a session, a process ------------------------------------------------


async def test_a_cancelled_turn_stops_what_it_started_except_background(
    workspace: Path, table: ProcessTable
) -> None:
    yielded, kept = f"43.1{os.getpid()}", f"43.2{os.getpid()}"
    await EXEC.run(
        EXEC.parse({"command": f"sleep {yielded}", "yieldMs": 100}), ctx(workspace, table)
    )
    await EXEC.run(
        EXEC.parse({"command": f"sleep {kept}", "background": True}), ctx(workspace, table)
    )
    other = f"43.3{os.getpid()}"
    await EXEC.run(
        EXEC.parse({"command": f"sleep {other}", "yieldMs": 100}), ctx(workspace, table, turn="t2")
    )
    stopped = await table.stop_turn("t1")
    assert [p.facts.title for p in stopped] == [f"sleep {yielded}"]
    assert await gone(yielded)
    assert pids_with(kept) and pids_with(other)


async def test_closing_the_session_leaves_no_process_behind(
    workspace: Path, isolation: str
) -> None:
    tag = f"44.{os.getpid()}"
    detach = f"setsid sleep {tag} & (setsid sh -c 'sleep {tag}' &); sleep {tag}"
    async with session_processes() as processes:
        result = await call(EXEC, workspace, processes, {"command": detach, "background": True})
        assert result.raw_output is not None
        pid = result.raw_output["pid"]
        deadline = time.monotonic() + 5
        while len(pids_with(tag)) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert alive(pid)
    assert not alive(pid)
    assert await gone(tag)


async def test_a_timeout_still_applies_to_a_kept_process(
    workspace: Path, table: ProcessTable
) -> None:
    tag = f"45.{os.getpid()}"
    result = await call(
        EXEC, workspace, table, {"command": f"sleep {tag}", "background": True, "timeoutMs": 600}
    )
    assert "killed 0.6 s after it started" in result.output
    assert result.raw_output is not None
    final = await call(
        READ, workspace, table, {"processId": result.raw_output["processId"], "waitMs": 10_000}
    )
    assert "killed by SIGTERM" in final.output
    assert await gone(tag)


async def test_a_command_the_call_waits_for_is_listed_and_can_be_stopped_by_the_user(
    workspace: Path, table: ProcessTable
) -> None:
    """`_cody/process/kill` of a command a call is waiting for: the call returns at once
    and says who stopped it."""
    tag = f"49.{os.getpid()}"
    running = asyncio.create_task(call(EXEC, workspace, table, {"command": f"sleep {tag}"}))
    deadline = time.monotonic() + 10
    while not table.listed() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    [process] = table.listed()
    assert process.running and not process.facts.may_outlive
    await table.stop(process.id, by="the user (_cody/process/kill)")
    result = await running
    assert "Exit code: 143" in result.output
    assert "Stopped by the user (_cody/process/kill)" in result.output
    assert table.listed() == [] and await gone(tag)


async def test_an_idle_sessions_network_namespace_ends_and_comes_back(
    workspace: Path, table: ProcessTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The network launcher (a process per session) ends once nothing ran for a while; the
    next sandboxed command gets a new one and works."""
    bwrap_path.cache_clear()
    if bwrap_path() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")
    from cody_daemon.tools.processes import table as table_module

    monkeypatch.setattr(table_module, "NETWORK_IDLE_S", 0.2)
    first = await call(EXEC, workspace, table, {"command": "echo one"})
    assert "one" in first.output
    launcher = table._network
    assert launcher is not None and launcher.alive
    deadline = time.monotonic() + 10
    while launcher.alive and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not launcher.alive and table._network is None
    again = await call(EXEC, workspace, table, {"command": "echo two"})
    assert "Exit code: 0" in again.output and "two" in again.output
    assert table._network is not None and table._network is not launcher
