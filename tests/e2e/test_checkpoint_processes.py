"""Checkpoints and processes that outlive a call, together (issues 25 and 26), through the
real daemon and cody-client: a rewind of the turn that started a background process that
writes files stops that process, so the restored files stay restored."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.checkpoints import checkpoints, require_bwrap, rewind, workspace_state
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.tmux import Tmux

WATCHER = "while :; do mkdir -p out; date +%s%N > out/bundle.js; sleep 0.05; done"
"""A build watcher: rewrites out/bundle.js as long as it runs."""


async def processes(daemon: Daemon, sid: str) -> dict[int, dict[str, Any]]:
    result = await daemon.request("_cody/session/processes", {"sessionId": sid})
    return {p["processId"]: p for p in result["processes"]}


async def eventually(check: Any, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def start_watcher_turn(daemon: Daemon, model: MockResponsesServer, ws: Path) -> str:
    model.enqueue(
        tool_call("writeFile", {"filePath": "src/app.js", "content": "app()\n"}, call_id="w"),
        tool_call("exec", {"command": WATCHER, "background": True}, call_id="watch"),
    )
    model.enqueue(text("watching"))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "write the app and start the watcher")
    bundle = ws / "out" / "bundle.js"
    await eventually(bundle.exists)
    first = bundle.read_text()
    await eventually(lambda: bundle.exists() and bundle.read_text() != first)  # after the turn
    assert (await processes(daemon, sid))[1]["running"] is True
    return sid


async def test_undoing_the_turn_that_started_a_watcher_stops_it_and_the_undo_holds(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    require_bwrap(daemon.env)
    ws = daemon.env.workspace
    (ws / "README").write_text("readme\n")
    before = workspace_state(ws)
    sid = await start_watcher_turn(daemon, model, ws)
    [turn] = await checkpoints(daemon, sid)

    result = await rewind(daemon, sid, turn["checkpointId"], "files")

    # The watcher belonged to the undone turn: it is stopped before anything is restored.
    assert result["stoppedProcesses"] == [{"processId": 1, "command": WATCHER}]
    listed = (await processes(daemon, sid))[1]
    assert listed["running"] is False and "rewind" in listed["stoppedBy"]
    assert "src/app.js" in result["restored"]
    # What the watcher wrote after its turn ended may be someone else's: a conflict, kept.
    assert result["conflicts"] == ["out/bundle.js"]
    kept = (ws / "out" / "bundle.js").read_text()
    await asyncio.sleep(0.3)
    assert (ws / "out" / "bundle.js").read_text() == kept, "nothing rewrites it any more"

    forced = await rewind(daemon, sid, turn["checkpointId"], "files", force=True)

    assert forced["conflicts"] == [] and forced["stoppedProcesses"] == []
    await asyncio.sleep(0.3)
    assert workspace_state(ws) == before, "the undo holds: no watcher writes the bundle again"


async def test_a_conversation_rewind_leaves_the_processes_running(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    sid = await start_watcher_turn(daemon, model, ws)
    [turn] = await checkpoints(daemon, sid)

    result = await rewind(daemon, sid, turn["checkpointId"], "conversation")

    assert result["stoppedProcesses"] == [] and result["restored"] == []
    assert (await processes(daemon, sid))[1]["running"] is True


@pytest.mark.skipif(
    shutil.which("tmux") is None and os.environ.get("CI") != "true", reason="tmux is not installed"
)
async def test_chat_undo_of_a_turn_with_a_watcher_stops_it_and_ps_says_so(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`/undo` and `/ps` together in cody-client: the undone turn's watcher is stopped (the
    status bar's count goes), its late writes are offered as a conflict, and once
    overwritten the undo holds."""
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"')
    ws = cody_env.workspace
    (ws / "README").write_text("readme\n")
    before = workspace_state(ws)
    model.enqueue(
        tool_call("writeFile", {"filePath": "src/app.js", "content": "app()\n"}, call_id="w"),
        tool_call("exec", {"command": WATCHER, "background": True}, call_id="watch"),
    )
    model.enqueue(text("watching"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("start the watcher", "Enter")
        await tmux.wait_for("stop: end_turn")
        await tmux.wait_for("1 process running (/ps)")
        bundle = ws / "out" / "bundle.js"
        await eventually(bundle.exists)
        first = bundle.read_text()
        await eventually(lambda: bundle.exists() and bundle.read_text() != first)

        tmux.keys("/undo", "Enter")
        screen = await tmux.wait_for("overwrite them with the checkpoint's version?")
        assert "Stopped process 1 (while :; do mkdir -p out;" in screen
        assert "left as they are: out/bundle.js" in screen
        tmux.keys("y", "Enter")
        await tmux.wait_for("undoes this rewind")
        await asyncio.sleep(0.3)
        assert workspace_state(ws) == before, "the undo holds"
        assert "process running (/ps)" not in tmux.screen().splitlines()[-1]

        tmux.keys("/ps", "Enter")
        screen = await tmux.wait_for("killed by SIGTERM")
        assert any(line.split()[:2] == ["1", "killed"] for line in screen.splitlines()), screen
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()


@pytest.mark.parametrize("sandbox", ["workspace-write", "danger-full-access"])
async def test_what_a_cancelled_turns_process_writes_as_it_stops_is_the_turns_change(
    daemon: Daemon, model: MockResponsesServer, sandbox: str
) -> None:
    """A cancelled turn stops what it started (not in the background) before its end is
    snapshotted: the file its process writes on SIGTERM is that turn's change, undone by
    `/undo` without a conflict (it was reported as someone else's). Under bubblewrap too:
    the SIGTERM reaches the command, not bubblewrap (which would SIGKILL its sandbox at once,
    leaving the command no grace time)."""
    if sandbox == "workspace-write":
        require_bwrap(daemon.env)
    ws = daemon.env.workspace
    (ws / "README").write_text("readme\n")
    before = workspace_state(ws)
    cleanup = (
        "trap 'echo bye > cleanup.txt; exit 0' TERM; echo started; while :; do sleep 0.05; done"
    )
    model.enqueue(
        tool_call("exec", {"command": cleanup, "yieldMs": 300}, call_id="y"),
        tool_call("exec", {"command": "echo waiting > wait.txt; sleep 60"}, call_id="w"),
    )
    model.unused_ok = True
    sid = await daemon.new_session(sandboxMode=sandbox)
    turn = asyncio.create_task(daemon.prompt(sid, "build"))
    await eventually((ws / "wait.txt").exists)
    daemon.conn.notify("session/cancel", {"sessionId": sid})
    assert (await turn)["stopReason"] == "cancelled"
    assert (ws / "cleanup.txt").read_text() == "bye\n"

    [checkpoint] = await checkpoints(daemon, sid)
    assert {f["path"] for f in checkpoint["files"]} == {"cleanup.txt", "wait.txt"}
    result = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

    assert result["conflicts"] == [] and sorted(result["restored"]) == ["cleanup.txt", "wait.txt"]
    assert workspace_state(ws) == before


async def test_acp_undo_says_which_process_it_stopped(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    sid = await start_watcher_turn(daemon, model, ws)
    daemon.updates.clear()

    await daemon.prompt(sid, "/undo")

    answer = daemon.agent_text(sid)
    assert "Rewound to before turn 1" in answer
    assert f"Stopped process 1 ({WATCHER}): a turn this rewind undid started it." in answer
    assert (await processes(daemon, sid))[1]["running"] is False
