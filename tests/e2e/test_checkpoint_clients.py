"""cody-client's `/undo` and `/rewind` in a real terminal (tmux), and
`cody-client sessions checkpoints|rewind` for scripts, against the real daemon."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys

import pytest

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.tmux import Tmux

CLIENT = [sys.executable, "-m", "cody_client"]


def write(path: str, content: str, call_id: str) -> object:
    return tool_call("writeFile", {"filePath": path, "content": content}, call_id=call_id)


async def run_client(env: CodyEnv, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env.env,
        cwd=env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.skipif(
    shutil.which("tmux") is None and os.environ.get("CI") != "true", reason="tmux is not installed"
)
async def test_chat_undo_and_the_rewind_picker_with_a_conflict(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"')
    ws = cody_env.workspace
    model.enqueue(write("a.txt", "a\n", "w1"))
    model.enqueue(text("wrote a"))
    model.enqueue(write("b.txt", "b\n", "w2"))
    model.enqueue(text("wrote b"))
    model.enqueue(write("c.txt", "c\n", "w3"))
    model.enqueue(text("wrote c"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("write a", "Enter")
        await tmux.wait_for("stop: end_turn")
        assert (ws / "a.txt").exists()

        tmux.keys("/undo", "Enter")
        screen = await tmux.wait_for("Rewound to before turn 1")
        assert "Restored 1 file(s): a.txt" in screen
        assert not (ws / "a.txt").exists()

        tmux.keys("write b", "Enter")
        await tmux.wait_for("stop: end_turn", count=2)
        tmux.keys("write c", "Enter")
        await tmux.wait_for("stop: end_turn", count=3)
        (ws / "b.txt").write_text("b, edited by the user\n")

        tmux.keys("/rewind", "Enter")
        screen = await tmux.wait_for("rewind to before which?")
        assert "1. turn 2 · " in screen and "“write c” · A c.txt" in screen
        assert "“write b” · A b.txt" in screen
        number = next(
            line.split(".")[0].strip() for line in screen.splitlines() if "“write b”" in line
        )
        tmux.keys(number, "Enter")
        await tmux.wait_for("restore [b]oth, [f]iles or [c]onversation?")
        tmux.keys("f", "Enter")
        screen = await tmux.wait_for("overwrite them with the checkpoint's version?")
        assert "left as they are: b.txt" in screen
        assert not (ws / "c.txt").exists() and (ws / "b.txt").exists()
        tmux.keys("y", "Enter")
        await tmux.wait_for("undoes this rewind", count=2)
        assert not (ws / "b.txt").exists(), "overwritten once the user said so"

        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()


async def test_sessions_checkpoints_and_rewind_for_scripts(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    ws = cody_env.workspace
    model.enqueue(write("a.txt", "a\n", "w1"))
    model.enqueue(text("wrote a"))
    code, _, err = await run_client(cody_env, "exec", "--approval-policy", "never", "write a")
    assert code == 0, err
    code, out, _ = await run_client(cody_env, "sessions", "list")
    session_id = out.split()[0]

    code, out, err = await run_client(cody_env, "sessions", "checkpoints", session_id[:8])
    assert code == 0, err
    assert "1. turn 1 · " in out and "“write a” · A a.txt" in out

    (ws / "a.txt").write_text("the user's a\n")
    code, out, err = await run_client(
        cody_env, "sessions", "rewind", session_id, "1", "--restore", "files"
    )
    assert code == 3, (out, err)
    assert "Conflicts, left as they are (--force overwrites them):\n  a.txt" in out
    assert (ws / "a.txt").read_text() == "the user's a\n"

    code, out, err = await run_client(
        cody_env, "sessions", "rewind", session_id, "2", "--restore", "files", "--force", "--json"
    )
    assert code == 0, err
    assert '"restored": [\n    "a.txt"\n  ]' in out and not (ws / "a.txt").exists()

    code, _, err = await run_client(cody_env, "sessions", "rewind", session_id, "99")
    assert code == 2 and "no checkpoint number 99" in err
