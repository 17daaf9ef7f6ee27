"""`cody-client exec`'s own warm daemon (issue 24.11a; cody_client/exec_daemon.py): the first
`exec` starts one, the next `exec` of the same environment is served by it, one with another
environment (another API key) never is, the daemon holds none of `exec`'s pipes, and it exits
by itself when idle, removing its socket."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_warm_daemon import run_exec
from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.warm_daemon import short_runtime_dir

IDLE_S = 15
"""Long enough that no gap between the commands below (a loaded machine included) ends the
daemon early; the last step waits for it."""


@pytest.fixture
def runtime() -> Iterator[Path]:
    directory = short_runtime_dir()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def listener(path: Path) -> int:
    """The pid listening on `path` (SO_PEERCRED)."""
    with socket.socket(socket.AF_UNIX) as probe:
        probe.connect(str(path))
        raw = probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", raw)[0])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def sockets(runtime: Path) -> list[Path]:
    return sorted((runtime / "cody").glob("exec-*.sock"))


@pytest.mark.timeout(150)
async def test_exec_starts_a_warm_daemon_the_next_exec_uses_until_it_idles_out(
    cody_env: CodyEnv, model: MockResponsesServer, runtime: Path
) -> None:
    cody_env.use_mock_provider(model.base_url)
    env = {**cody_env.env, "XDG_RUNTIME_DIR": str(runtime), "CODY_EXEC_DAEMON_IDLE": str(IDLE_S)}
    started: list[int] = []
    printenv = "printenv TERM_PROGRAM"
    try:
        # 1. No daemon yet: exec starts one and is served by it (the turn runs `printenv`
        #    in the daemon's environment, which is the first command's).
        model.enqueue(tool_call("exec", {"command": printenv}, call_id="a"))
        model.enqueue(text("first done"))
        first = {**env, "TERM_PROGRAM": "first-shell"}
        code, out, err = await run_exec(first, cody_env.workspace, *exec_args("one"))
        assert code == 0, err
        [path] = sockets(runtime)
        pid = listener(path)
        started.append(pid)
        for fd in (0, 1, 2):  # exec's pipes ended with exec: the daemon holds none of them
            assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"
        assert os.getsid(pid) == pid, "it runs in a session of its own (no terminal's Ctrl-C)"
        code, out, err = await run_exec(first, cody_env.workspace, "doctor")
        assert f"exec's daemon {path} (listening; exits after {IDLE_S} s" in out, out + err

        # 2. The next exec with the same environment but another terminal program (a terminal
        #    variable) is served by that daemon: its command sees the first one's TERM_PROGRAM.
        model.enqueue(tool_call("exec", {"command": printenv}, call_id="b"))
        model.enqueue(text("second done"))
        second = {**env, "TERM_PROGRAM": "second-shell"}
        code, out, err = await run_exec(second, cody_env.workspace, *exec_args("two"))
        assert code == 0, err
        assert "first-shell" in output_of(model, "b"), "the warm daemon ran it"
        assert sockets(runtime) == [path] and listener(path) == pid

        # 3. Another API key: never the daemon started with the first one.
        model.enqueue(text("third done"))
        other = {**env, "MOCK_API_KEY": "another-key"}
        code, out, err = await run_exec(other, cody_env.workspace, *exec_args("three"))
        assert code == 0, err
        assert model.requests[-1].headers["authorization"] == "Bearer another-key"
        paths = sockets(runtime)
        assert len(paths) == 2, paths
        started += [listener(p) for p in paths if p != path]

        # 4. Turned off: no daemon started, none used.
        model.enqueue(text("fourth done"))
        off = {**other, "CODY_EXEC_DAEMON_IDLE": "0", "MOCK_API_KEY": "yet-another"}
        code, out, err = await run_exec(off, cody_env.workspace, *exec_args("four"))
        assert code == 0, err
        assert len(sockets(runtime)) == 2

        # 5. Idle: both exit by themselves and take their sockets with them.
        deadline = time.monotonic() + IDLE_S + 30
        while any(alive(p) for p in started) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert not any(alive(p) for p in started)
        assert sockets(runtime) == []
    finally:
        for pid in started:
            if alive(pid):
                os.kill(pid, 15)


def exec_args(prompt: str) -> list[str]:
    return ["exec", "--approval-policy", "never", "--sandbox", "danger-full-access", prompt]


def output_of(model: MockResponsesServer, call_id: str) -> str:
    """The output of call `call_id` as the model got it back."""
    for request in model.requests:
        for item in request.body.get("input", []):
            if item.get("type") == "function_call_output" and item.get("call_id") == call_id:
                return str(item.get("output"))
    raise AssertionError(f"no output of {call_id} reached the model")
