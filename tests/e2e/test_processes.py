"""Processes that outlive a call, through the real daemon (issue 26): a dev server started in
one turn and used in the next, a REPL driven with writeStdin, yieldMs, killProcess, the
client's list and kill (`_cody/session/processes`, `_cody/process/kill`), and nothing left
behind by `session/close`, a cancelled turn, the daemon's exit or its death; sandboxed
(bubblewrap, the session's own network namespace) and not."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.editor import ZED_CAPABILITIES
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

APPENDING = {"_meta": {"cody": {"appendOutput": True}}}


def require_bwrap(env: CodyEnv) -> None:
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cody_daemon.policy.sandbox import bwrap_path as p; print(p())",
        ],
        env=env.env,
        capture_output=True,
        text=True,
        check=True,
    )
    if probe.stdout.strip() == "None":
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")


def require_curl() -> None:
    if shutil.which("curl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("curl is required in CI")
        pytest.skip("curl is not installed")


SETUPS = {
    "bwrap": ("workspace-write", ""),
    "full-access": ("danger-full-access", ""),
    "no-bwrap": ("workspace-write", 'sandbox_unavailable = "allow"'),
}


async def start(
    cody_env: CodyEnv,
    model: MockResponsesServer,
    setup: str,
    capabilities: dict[str, Any] | None = APPENDING,
) -> tuple[Daemon, str]:
    mode, extra = SETUPS[setup]
    if setup == "no-bwrap":
        cody_env.env["CODY_BWRAP"] = "none"
    elif setup == "bwrap":
        require_bwrap(cody_env)
    cody_env.use_mock_provider(model.base_url, extra=extra)
    daemon = await Daemon.start(cody_env)
    await daemon.initialize(capabilities)
    sid = await daemon.new_session(approvalPolicy="never", sandboxMode=mode)
    return daemon, sid


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


def pids_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker.encode() in cmdline and alive(int(entry)):
            found.append(int(entry))
    return found


async def all_gone(pids: list[int], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not any(alive(pid) for pid in pids)


def appended(daemon: Daemon, sid: str, call_id: str) -> str:
    return "".join(
        u["content"][0]["content"]["text"]
        for u in daemon.tool_updates(sid, call_id)
        if u.get("_meta", {}).get("cody", {}).get("appendOutput")
    )


async def processes(daemon: Daemon, sid: str) -> list[dict[str, Any]]:
    result = await daemon.request("_cody/session/processes", {"sessionId": sid})
    listed: list[dict[str, Any]] = result["processes"]
    return listed


@pytest.mark.parametrize("setup", list(SETUPS))
async def test_a_dev_server_started_in_one_turn_answers_the_next(
    cody_env: CodyEnv, model: MockResponsesServer, setup: str
) -> None:
    require_curl()
    port = free_port()
    (cody_env.workspace / "index.html").write_text("served from the workspace\n")
    server = f"python3 -u -m http.server {port} --bind 127.0.0.1"
    model.enqueue(tool_call("exec", {"command": server, "background": True}, call_id="serve"))
    model.enqueue(
        tool_call("readOutput", {"processId": 1, "waitMs": 10_000}, call_id="ready"),
    )
    model.enqueue(text("The server runs."))
    curl = f"curl -s -o /dev/null -w '%{{http_code}}' --retry 5 --retry-connrefused http://127.0.0.1:{port}/index.html"
    model.enqueue(tool_call("exec", {"command": curl}, call_id="curl"))
    model.enqueue(tool_call("readOutput", {"processId": 1, "waitMs": 5000}, call_id="log"))
    model.enqueue(text("It answered."))
    daemon, sid = await start(cody_env, model, setup)
    try:
        await daemon.prompt(sid, "start the dev server")
        started = tool_outputs(model.requests[1])["serve"]
        assert "Started in the background as process 1" in started
        assert "Serving HTTP" in tool_outputs(model.requests[2])["ready"]
        [listed] = await processes(daemon, sid)
        assert listed["processId"] == 1 and listed["running"] is True
        assert listed["command"] == server and listed["kept"] is True
        assert listed["sandboxed"] is (setup == "bwrap")
        host_pid = listed["pid"]
        assert alive(host_pid)
        final = [u for u in daemon.tool_updates(sid, "serve") if u.get("status") == "completed"]
        assert final and final[-1]["rawOutput"]["processId"] == 1

        await daemon.prompt(sid, "check the page")
        outputs = tool_outputs(model.requests[-1])
        assert "Exit code: 0" in outputs["curl"] and "200" in outputs["curl"]
        assert "GET /index.html HTTP/1.1" in outputs["log"] and '" 200 ' in outputs["log"]
        # The server's log reached the client as the first call's live output, between turns.
        await daemon.wait_for(lambda: "GET /index.html" in appended(daemon, sid, "serve"))

        server_pids = pids_with(f"http.server {port}")
        assert server_pids
        await daemon.request("session/close", {"sessionId": sid})
        assert await all_gone([host_pid, *server_pids]), "the server outlived its session"
    finally:
        await daemon.close()


async def test_a_sandboxed_server_is_reachable_only_inside_its_session(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    port = free_port()
    server = f"python3 -u -m http.server {port} --bind 127.0.0.1"
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('reached')"
    model.enqueue(tool_call("exec", {"command": server, "background": True}, call_id="serve"))
    model.enqueue(tool_call("readOutput", {"processId": 1, "waitMs": 10_000}, call_id="ready"))
    model.enqueue(text("runs"))
    model.enqueue(tool_call("exec", {"command": ["python3", "-c", probe]}, call_id="probe"))
    model.enqueue(text("other session"))
    daemon, sid = await start(cody_env, model, "bwrap")
    try:
        await daemon.prompt(sid, "serve")
        assert "Serving HTTP" in tool_outputs(model.requests[-1])["ready"]
        with (
            pytest.raises(ConnectionRefusedError),
            socket.create_connection(("127.0.0.1", port), 2),
        ):
            pass  # not from the host
        other = await daemon.new_session(approvalPolicy="never", sandboxMode="workspace-write")
        await daemon.prompt(other, "probe")
        output = tool_outputs(model.requests[-1])["probe"]
        assert "ConnectionRefusedError" in output and "reached" not in output
    finally:
        await daemon.close()


@pytest.mark.parametrize("setup", ["bwrap", "no-bwrap"])
async def test_write_stdin_drives_a_repl_and_yield_returns_partial_output(
    cody_env: CodyEnv, model: MockResponsesServer, setup: str
) -> None:
    model.enqueue(
        tool_call(
            "exec",
            {"command": "echo ready; sleep 60", "yieldMs": 500},
            call_id="slow",
        ),
        tool_call("exec", {"command": ["python3", "-i", "-q"], "yieldMs": 300}, call_id="repl"),
    )
    model.enqueue(
        tool_call(
            "writeStdin", {"processId": 2, "chars": "print(6*7)\n", "waitMs": 10_000}, call_id="ask"
        ),
        tool_call("killProcess", {"processId": 1}, call_id="stop"),
    )
    model.enqueue(text("42"))
    daemon, sid = await start(cody_env, model, setup)
    try:
        await daemon.prompt(sid, "compute")
        outputs = tool_outputs(model.requests[-1])
        assert "Still running after" in outputs["slow"] and "process 1" in outputs["slow"]
        assert "Output so far:\nready\n" in outputs["slow"]
        assert "42" in outputs["ask"]
        assert "Process 1 (echo ready; sleep 60" in outputs["stop"]
        assert "killed by SIGTERM" in outputs["stop"]
        listed = {p["processId"]: p for p in await processes(daemon, sid)}
        assert listed[1]["running"] is False and listed[1]["stoppedBy"] == "killProcess"
        assert listed[2]["running"] is True
    finally:
        await daemon.close()


async def test_the_client_lists_and_kills_processes(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    tag = f"46.{os.getpid()}"
    model.enqueue(tool_call("exec", {"command": f"sleep {tag}", "background": True}, call_id="a"))
    model.enqueue(text("started"))
    daemon, sid = await start(cody_env, model, "full-access")
    try:
        await daemon.prompt(sid, "go")
        [listed] = await processes(daemon, sid)
        killed = await daemon.request(
            "_cody/process/kill", {"sessionId": sid, "processId": listed["processId"]}
        )
        assert killed["outcome"] == "stopped" and killed["process"]["running"] is False
        assert killed["process"]["stoppedBy"] == "the user (_cody/process/kill)"
        assert await all_gone([listed["pid"]])
        again = await daemon.request(
            "_cody/process/kill", {"sessionId": sid, "processId": listed["processId"]}
        )
        assert again["outcome"] == "already ended"
        error = await expect_error(
            daemon.request("_cody/process/kill", {"sessionId": sid, "processId": 9}), -32602
        )
        assert "no process 9" in error.message
        await expect_error(daemon.request("_cody/session/processes", {"sessionId": "nope"}), -32002)
        # The end of the process reached the client: the first call's output ends with it.
        ends = [
            u
            for u in daemon.tool_updates(sid, "a")
            if (u.get("rawOutput") or {}).get("running") is False
        ]
        assert ends and ends[-1]["rawOutput"]["exitCode"] == 128 + signal.SIGTERM
    finally:
        await daemon.close()


async def test_a_cancelled_turn_stops_its_yielded_process_but_not_a_background_one(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    yielded, kept, waited = (f"47.{n}{os.getpid()}" for n in (1, 2, 3))
    model.enqueue(
        tool_call("exec", {"command": f"sleep {yielded}", "yieldMs": 100}, call_id="y"),
        tool_call("exec", {"command": f"sleep {kept}", "background": True}, call_id="b"),
        tool_call("exec", {"command": f"sleep {waited}"}, call_id="w"),
    )
    model.unused_ok = True
    daemon, sid = await start(cody_env, model, "full-access")
    try:
        turn = asyncio.create_task(daemon.prompt(sid, "go"))
        await daemon.wait_for(lambda: bool(pids_with(waited)))
        daemon.conn.notify("session/cancel", {"sessionId": sid})
        assert (await turn)["stopReason"] == "cancelled"
        assert await all_gone(pids_with(yielded) + pids_with(waited))
        assert pids_with(kept)
        listed = {p["command"]: p for p in await processes(daemon, sid)}
        assert listed[f"sleep {kept}"]["running"] is True
        assert listed[f"sleep {yielded}"]["stoppedBy"] == "the turn's cancellation"
    finally:
        await daemon.close()


@pytest.mark.parametrize(
    ("setup", "how"),
    [
        ("no-bwrap", "shutdown"),
        ("no-bwrap", "sigterm"),
        ("no-bwrap", "sigkill"),
        ("bwrap", "sigkill"),
    ],
)
async def test_the_daemons_end_leaves_no_process_behind(
    cody_env: CodyEnv, model: MockResponsesServer, setup: str, how: str
) -> None:
    tag = f"48.{os.getpid()}"
    detach = f"setsid sleep {tag} & (setsid sh -c 'sleep {tag}' &); sleep {tag}"
    model.enqueue(tool_call("exec", {"command": detach, "background": True}, call_id="d"))
    model.enqueue(text("started"))
    daemon, sid = await start(cody_env, model, setup)
    await daemon.prompt(sid, "go")
    await daemon.wait_for(lambda: len(pids_with(tag)) >= 3)
    [listed] = await processes(daemon, sid)
    pids = [listed["pid"], *pids_with(tag)]
    child = daemon.process.process
    assert child is not None
    if how == "shutdown":
        await daemon.close()
    else:
        os.kill(child.pid, signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        await daemon.close()
    assert await all_gone(pids), f"processes outlived the daemon ({how})"


async def test_a_flooding_process_keeps_the_daemons_memory_bounded(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": "yes flood", "background": True}, call_id="f"))
    model.enqueue(text("flooding"))
    model.enqueue(tool_call("readOutput", {"processId": 1}, call_id="r"))
    model.enqueue(text("read"))
    daemon, sid = await start(cody_env, model, "full-access")
    try:
        child = daemon.process.process
        assert child is not None
        await daemon.prompt(sid, "flood")

        def rss_mb() -> float:
            for line in Path(f"/proc/{child.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
            raise AssertionError("no VmRSS")

        async def flooded() -> int:
            listed = await processes(daemon, sid)
            return int(listed[0]["outputBytes"])

        before = rss_mb()
        deadline = time.monotonic() + 30
        while await flooded() < 64 * 1024 * 1024 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert await flooded() >= 64 * 1024 * 1024
        assert rss_mb() - before < 40
        await daemon.prompt(sid, "read it")
        output = tool_outputs(model.requests[-1])["r"]
        assert "earlier bytes were dropped before they were read" in output
        streamed = appended(daemon, sid, "f")
        assert len(streamed) < 2 * 1024 * 1024 and "live output stops" in streamed
    finally:
        await daemon.close()


async def test_a_terminal_client_sees_the_background_output_and_the_exit(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    script = "echo first; sleep 0.3; echo second; sleep 60"
    model.enqueue(tool_call("exec", {"command": script, "background": True}, call_id="t"))
    model.enqueue(text("started"))
    daemon, sid = await start(cody_env, model, "full-access", ZED_CAPABILITIES)
    try:
        await daemon.prompt(sid, "go")
        updates = daemon.tool_updates(sid, "t")
        completed = [u for u in updates if u.get("status") == "completed"]
        assert completed and "terminal_exit" not in completed[-1].get("_meta", {})

        def data() -> str:
            return "".join(
                u["_meta"]["terminal_output"]["data"]
                for u in daemon.tool_updates(sid, "t")
                if "terminal_output" in u.get("_meta", {})
            )

        await daemon.wait_for(lambda: "second" in data())
        await daemon.request("_cody/process/kill", {"sessionId": sid, "processId": 1})

        def exits() -> list[dict[str, Any]]:
            return [
                u["_meta"]["terminal_exit"]
                for u in daemon.tool_updates(sid, "t")
                if "terminal_exit" in u.get("_meta", {})
            ]

        await daemon.wait_for(lambda: bool(exits()))
        assert exits() == [{"terminal_id": "t", "exit_code": 143, "signal": "SIGTERM"}]
    finally:
        await daemon.close()


@pytest.mark.parametrize("setup", ["bwrap", "no-bwrap"])
async def test_a_stopped_process_gets_its_sigterm_and_grace_time_also_sandboxed(
    cody_env: CodyEnv, model: MockResponsesServer, setup: str
) -> None:
    """`_cody/process/kill` is SIGTERM first: the command's trap runs and it exits on its own.
    Under bubblewrap the signal went to bubblewrap too, which SIGKILLed its sandbox at once."""
    tidy = "trap 'echo bye > stopped.txt; exit 0' TERM; echo up; while :; do sleep 0.05; done"
    model.enqueue(tool_call("exec", {"command": tidy, "background": True}, call_id="t"))
    model.enqueue(tool_call("readOutput", {"processId": 1, "waitMs": 5000}, call_id="r"))
    model.enqueue(text("started"))
    daemon, sid = await start(cody_env, model, setup)
    try:
        await daemon.prompt(sid, "go")
        assert "up" in tool_outputs(model.requests[-1])["r"]
        killed = await daemon.request("_cody/process/kill", {"sessionId": sid, "processId": 1})
        assert killed["outcome"] == "stopped"
        assert killed["process"]["exitCode"] == 0, killed["process"]
        assert (cody_env.workspace / "stopped.txt").read_text() == "bye\n"
    finally:
        await daemon.close()


@pytest.mark.parametrize("setup", ["bwrap", "no-bwrap"])
async def test_tty_runs_a_command_under_a_fixed_size_terminal_it_can_be_driven_in(
    cody_env: CodyEnv, model: MockResponsesServer, setup: str
) -> None:
    probe = (
        "import os, sys; s = os.get_terminal_size(0); "
        "print('tty', os.isatty(0), os.isatty(1), s.columns, s.lines, os.environ['TERM']); "
        "print('got', input('name? '))"
    )
    model.enqueue(
        tool_call(
            "exec", {"command": ["python3", "-c", probe], "tty": True, "yieldMs": 2000}, call_id="t"
        )
    )
    model.enqueue(
        tool_call("writeStdin", {"processId": 1, "chars": "cody\n", "waitMs": 5000}, call_id="w")
    )
    model.enqueue(text("done"))
    daemon, sid = await start(cody_env, model, setup)
    try:
        await daemon.prompt(sid, "probe the terminal")
        outputs = tool_outputs(model.requests[-1])
        assert "tty True True 120 40" in outputs["t"] and "name? " in outputs["t"]
        assert "got cody" in outputs["w"]
        [listed] = await processes(daemon, sid)
        assert listed["tty"] is True
    finally:
        await daemon.close()
