"""A session whose directory is gone (issue 24.3; contract in engine/workdir.py).

The demo's closing hints both failed ("cwd ... is not an existing directory": the demo had
removed its workspace). Now a read never needs the directory (`sessions show`, `session/load`'s
replay, `_cody/session/history`, fork); continuing it does, and says how to continue it
elsewhere (`--resume ID --cwd DIR`, `_meta.cody.relocate` on the wire), dropping the session's
grants when it moves.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.e2e.test_chat_terminal import Tmux
from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

CLIENT = [sys.executable, "-m", "cody_client"]
DENIED = json.dumps({"error": "User denied approval"})


async def run(env: CodyEnv, argv: list[str], *, stdin: bytes = b"") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env.env, "CODY_DAEMON_SOCKET": ""},
        cwd=env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 50)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def as_typed(hint: str) -> list[str]:
    """A hint line's command, run by a shell as the user would paste it."""
    command = hint.replace("cody-client", " ".join(map(shlex.quote, CLIENT)), 1)
    return ["bash", "-c", command]


async def test_the_demos_closing_hints_work_as_printed(cody_env: CodyEnv) -> None:
    code, out, err = await run(cody_env, [*CLIENT, "demo"])
    assert code == 0, err
    continue_hint = re.search(r"Continue it: (cody-client --resume \S+ .*)$", out, re.M)
    replay_hint = re.search(r"Replay it: +(cody-client sessions show \S+)$", out, re.M)
    assert continue_hint and replay_hint, out
    session_id = replay_hint.group(1).split()[-1]
    workspace = re.search(r"workspace (\S+) ·", out)
    assert workspace and not Path(workspace.group(1)).exists(), "the demo removed its workspace"

    code, shown, err = await run(cody_env, as_typed(replay_hint.group(1)))
    assert code == 0, err
    assert "› list files" in shown and "› read NOTES.md" in shown
    assert "Hello from the Cody demo!" in shown

    # The hint as typed continues the session in a new directory: a chat reading stdin.
    code, chat, err = await run(cody_env, as_typed(continue_hint.group(1)), stdin=b"list files\n")
    assert code == 0, err
    assert f"warning: Session {session_id} continues in " in chat
    assert "› read NOTES.md" in chat, "the replay comes first"
    new_turn = chat.split("› read NOTES.md")[-1]
    assert "(empty)" in new_turn and "The directory is empty." in new_turn, "the new dir"


async def test_without_cwd_a_resume_says_how_to_continue_elsewhere(cody_env: CodyEnv) -> None:
    project = cody_env.root / "project"
    project.mkdir()
    code, out, err = await run(
        cody_env, [*CLIENT, "exec", "--cwd", str(project), "--provider", "offline", "list files"]
    )
    assert code == 0, err
    [saved] = cody_env.cody_home.glob("sessions/*/*/*/*.jsonl")
    session_id = saved.stem[-36:]
    shutil.rmtree(project)

    code, _, err = await run(cody_env, [*CLIENT, "exec", "--resume", session_id[:8], "again"])
    assert code == 2
    assert f"The directory of session {session_id}, {project}, no longer exists" in err
    assert f"`cody-client --resume {session_id} --cwd DIR`" in err
    assert "_meta" not in err and "session/load" not in err

    code, out, err = await run(cody_env, [*CLIENT, "sessions", "show", session_id[:8]])
    assert code == 0, err
    assert "› list files" in out

    # /resume in a chat shows it read-only and says how to continue it.
    code, out, err = await run(
        cody_env, [*CLIENT, "--provider", "offline"], stdin=f"/resume {session_id}\n".encode()
    )
    assert code == 0, err
    assert f"warning: The directory of session {session_id}, {project}, no longer exists" in out
    assert f"`cody-client --resume {session_id} --cwd DIR`" in out

    code, out, err = await run(
        cody_env,
        [*CLIENT, "exec", "--resume", session_id, "--cwd", str(cody_env.tmpdir), "list files"],
    )
    assert code == 0, err
    assert f"continues in {cody_env.tmpdir} instead of {project}" in err


async def test_load_replays_a_session_whose_directory_is_gone_and_refuses_only_turns(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    project = daemon.env.root / "project"
    project.mkdir()
    model.enqueue(text("hello there"))
    sid = await daemon.new_session(project)
    await daemon.prompt(sid, "hi")
    await daemon.request("session/close", {"sessionId": sid})
    shutil.rmtree(project)
    daemon.updates.clear()

    result = await daemon.request(
        "session/load", {"sessionId": sid, "cwd": str(daemon.env.workspace), "mcpServers": []}
    )
    [warning] = result["_meta"]["cody"]["warnings"]
    assert f"{project}, no longer exists" in warning
    assert "hello there" in daemon.agent_text(sid), "the replay needs no directory"
    history = await daemon.request("_cody/session/history", {"sessionId": sid})
    assert len(history["messages"]) == 2

    error = await expect_error(daemon.prompt(sid, "again"), -32602)
    assert error.data["errors"] == [
        {
            "key": "cwd",
            "message": "the session's directory no longer exists",
            "value": str(project),
            "source": "session file",
        }
    ]
    await expect_error(daemon.request("_cody/session/compact", {"sessionId": sid}), -32602)
    assert len(model.requests) == 1, "nothing reached the model"

    # Fork continues it elsewhere as a new session.
    model.enqueue(text("forked answer"))
    fork = await daemon.request(
        "session/fork", {"sessionId": sid, "cwd": str(daemon.env.workspace), "mcpServers": []}
    )
    await daemon.prompt(fork["sessionId"], "go on")
    assert "forked answer" in daemon.agent_text(fork["sessionId"])


async def test_relocating_runs_tools_in_the_new_directory_and_drops_session_grants(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    old, new = daemon.env.root / "old", daemon.env.root / "new"
    old.mkdir()
    new.mkdir()
    (new / "only-here.txt").write_text("x")
    model.enqueue(tool_call("exec", {"command": "touch granted"}, call_id="c1"))
    model.enqueue(text("made it"))
    sid = await daemon.new_session(old, approvalPolicy="untrusted")  # the command asks
    daemon.answer("allow_always")
    await daemon.prompt(sid, "touch it")
    assert (old / "granted").exists()
    await daemon.request("session/close", {"sessionId": sid})

    params = {"sessionId": sid, "cwd": str(new), "mcpServers": []}
    # A live session stays where it runs; the grant still holds in its own directory.
    await daemon.request("session/resume", params)
    await expect_error(
        daemon.request("session/resume", {**params, "_meta": {"cody": {"relocate": True}}}),
        -32602,
    )
    await daemon.request("session/close", {"sessionId": sid})

    result = await daemon.request(
        "session/resume", {**params, "_meta": {"cody": {"relocate": True}}}
    )
    assert any(
        f"continues in {new} instead of {old}" in w for w in result["_meta"]["cody"]["warnings"]
    )
    model.enqueue(tool_call("listDir", {"dirPath": "."}, call_id="c2"))
    model.enqueue(tool_call("exec", {"command": "touch granted"}, call_id="c3"))
    model.enqueue(text("done"))
    daemon.answer("reject_once")
    await daemon.prompt(sid, "again, here")
    outputs = tool_outputs(model.requests[-1])
    assert "only-here.txt" in outputs["c2"]
    assert outputs["c3"] == DENIED, "the grant from the old directory was asked again"
    assert [r["toolCall"]["toolCallId"] for r in daemon.permission_requests] == ["c1", "c3"]
    assert not (new / "granted").exists()


async def test_a_codex_or_claude_session_cannot_move(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """Its agent CLI's thread belongs to its directory; a fork (Cody's own loop) can move."""
    model.enqueue(text("hello"))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "hi")
    await daemon.request("session/close", {"sessionId": sid})
    [path] = daemon.env.cody_home.glob("sessions/*/*/*/*.jsonl")
    event = {"timestamp": "2026-01-01T00:00:00Z", "type": "event"}
    event["payload"] = {"kind": "config", "settings": {"backend": "codex"}}
    with path.open("a") as handle:
        handle.write(json.dumps(event) + "\n")

    params = {"sessionId": sid, "cwd": str(daemon.env.tmpdir), "mcpServers": []}
    error = await expect_error(
        daemon.request("session/resume", {**params, "_meta": {"cody": {"relocate": True}}}),
        -32602,
    )
    assert "runs on the codex backend" in error.message and "Fork it instead" in error.message
    assert error.data["errors"][0]["key"] == "_meta.cody.relocate"


async def prompt_after_turn(tmux: Tmux) -> None:
    """Wait until the chat prompts again: its bottom bar is the screen's last line."""
    for _ in range(300):
        lines = [line for line in tmux.screen().splitlines() if line.strip()]
        if lines and lines[-1].startswith("offline"):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the prompt did not come back:\n{tmux.screen()}")


@pytest.mark.skipif(
    shutil.which("tmux") is None and os.environ.get("CI") != "true", reason="tmux is not installed"
)
async def test_a_chat_in_a_terminal_shows_a_gone_session_and_continues_it_with_cwd(
    cody_env: CodyEnv,
) -> None:
    project = cody_env.root / "project"
    project.mkdir()
    code, _, err = await run(
        cody_env, [*CLIENT, "exec", "--cwd", str(project), "--provider", "offline", "list files"]
    )
    assert code == 0, err
    [saved] = cody_env.cody_home.glob("sessions/*/*/*/*.jsonl")
    session_id = saved.stem[-36:]
    shutil.rmtree(project)

    tmux = Tmux(cody_env, "--resume", session_id[:8])
    try:
        screen = await tmux.wait_for("Ctrl-C interrupts a turn")
        assert "› list files" in screen, "the transcript is replayed"
        assert f"{project}, no longer exists" in screen.replace("\n", "")
        await tmux.prompt_ready("offline")
        tmux.keys("hello", "Enter")
        screen = await tmux.wait_for("error: The directory of session")
        assert f"`cody-client --resume {session_id} --cwd DIR`" in screen.replace("\n", "")
        await prompt_after_turn(tmux)
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=")
    finally:
        tmux.close()

    elsewhere = cody_env.root / "elsewhere"
    elsewhere.mkdir()
    tmux = Tmux(cody_env, "--resume", session_id, "--cwd", str(elsewhere))
    try:
        screen = await tmux.wait_for("Ctrl-C interrupts a turn")
        assert f"continues in {elsewhere} instead of {project}" in screen.replace("\n", "")
        await tmux.prompt_ready("offline")
        tmux.keys("list files", "Enter")
        await tmux.wait_for("The directory is empty.")
        await tmux.wait_for("stop: end_turn")
        await prompt_after_turn(tmux)  # keys typed during a turn do not reach the prompt
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()
