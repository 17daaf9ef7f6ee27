"""cody-client in a real terminal (tmux) while a turn runs (issue 30): Enter steers the turn,
Tab queues the next prompt, `@` completes a file and sends it along, images go with a
prompt (`exec -i`, `/image`, a pasted path), and a long turn ends with the bell and an OSC 9
notification."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, input_images, text, tool_call
from tests.support.model_inputs import user_texts
from tests.support.tmux import Tmux

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("tmux") is None and os.environ.get("CI") != "true",
        reason="tmux is not installed",
    ),
]

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
NO_ASKING = 'approval_policy = "never"\nsandbox_mode = "danger-full-access"'
WORKING = "working · Enter steers"


def waiting_command(gate: Path, marker: str) -> str:
    return f"while [ ! -e {gate} ]; do sleep 0.02; done; echo {marker}"


async def test_enter_during_a_turn_steers_it_and_the_model_reads_it_after_the_tool(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra=NO_ASKING)
    gate = cody_env.tmpdir / "go"
    model.enqueue(tool_call("exec", {"command": waiting_command(gate, "built")}, call_id="c1"))
    model.enqueue(text("Docs updated too."))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("build it", "Enter")
        await tmux.prompt_ready(WORKING)
        await tmux.wait_for("echo built  [execute]")  # the command runs: steer now
        tmux.keys("also update the docs", "Enter")
        await tmux.wait_for("(sent to the running turn")
        gate.touch()
        screen = await tmux.wait_for("stop: end_turn")
        assert "› also update the docs" in screen, "the steered message is shown where it joined"
        assert screen.index("✓ built") < screen.index("› also update the docs"), screen
        assert screen.index("› also update the docs") < screen.index("Docs updated too."), screen
    finally:
        tmux.close()
    assert len(model.requests) == 2
    assert user_texts(model.requests[1])[-1] == "also update the docs"


async def test_tab_during_a_turn_queues_the_next_prompt(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra=NO_ASKING)
    gate = cody_env.tmpdir / "go"
    model.enqueue(tool_call("exec", {"command": waiting_command(gate, "first")}, call_id="c1"))
    model.enqueue(text("First task done."))
    model.enqueue(text("Second task done."))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("first task", "Enter")
        await tmux.prompt_ready(WORKING)
        await tmux.wait_for("echo first  [execute]")
        tmux.keys("second task", "Tab")
        await tmux.wait_for("(queued: second task)")
        assert len(model.requests) == 1, "queued, not steered"
        gate.touch()
        screen = await tmux.wait_for("stop: end_turn", count=2)
        assert screen.index("First task done.") < screen.index("› second task")
        assert screen.index("› second task") < screen.index("Second task done.")
    finally:
        tmux.close()
    assert user_texts(model.requests[2])[-1] == "second task"
    assert "first task" in user_texts(model.requests[2]), "one session, in order"


async def test_ctrl_c_during_a_turn_drops_the_queued_prompt(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra=NO_ASKING)
    gate = cody_env.tmpdir / "never"
    model.enqueue(tool_call("exec", {"command": waiting_command(gate, "x")}, call_id="c1"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("long task", "Enter")
        await tmux.prompt_ready(WORKING)
        await tmux.wait_for("echo x  [execute]")
        tmux.keys("later", "Tab")
        await tmux.wait_for("(queued: later)")
        tmux.keys("C-c")
        screen = await tmux.wait_for("(dropped the queued prompt: later)")
        assert "stop: cancelled" in screen
    finally:
        tmux.close()
    assert len(model.requests) == 1


async def test_at_completion_inserts_a_workspace_file_and_sends_it_along(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    source = cody_env.workspace / "src" / "parser_utils.py"
    source.parent.mkdir()
    source.write_text("def parse():\n    return 42\n")
    (cody_env.workspace / "README.md").write_text("readme\n")
    model.enqueue(text("It returns 42."))
    tmux = Tmux(cody_env)
    try:
        await tmux.prompt_ready("mock/")
        tmux.keys("explain @parsut")
        await tmux.wait_for("src/parser_utils.py")
        tmux.keys("Tab")
        await tmux.wait_for("explain @src/parser_utils.py")
        tmux.keys("Enter")
        await tmux.wait_for("stop: end_turn")
    finally:
        tmux.close()
    [sent] = user_texts(model.requests[0])
    assert sent.startswith("explain @src/parser_utils.py")
    assert f'<file uri="{source.as_uri()}">' in sent and "return 42" in sent


async def test_exec_i_sends_an_image_part(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url)
    (cody_env.workspace / "shot.png").write_bytes(PNG)
    model.enqueue(text("A single pixel."))
    tmux = Tmux(cody_env, "exec", "-i", "shot.png", "what is in it?")
    try:
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()
    assert input_images(model.requests[0]) == [
        "data:image/png;base64," + base64.b64encode(PNG).decode()
    ]
    assert user_texts(model.requests[0]) == ["what is in it?"]


async def test_image_command_and_a_pasted_path_attach_images_to_the_next_message(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    first = cody_env.root / "first shot.png"
    first.write_bytes(PNG)
    (cody_env.root / "second.png").write_bytes(PNG)
    (cody_env.root / "fake.png").write_text("not an image")
    model.enqueue(text("Two pixels."))
    tmux = Tmux(cody_env)
    try:
        await tmux.prompt_ready("mock/")
        tmux.keys("/image ../fake.png", "Enter")
        await tmux.wait_for("not a PNG, JPEG, GIF or WebP image")
        tmux.keys(f"/image {first}", "Enter")
        await tmux.wait_for("Attached first shot.png")
        tmux.keys(f"'{cody_env.root / 'second.png'}'", "Enter")  # as a terminal pastes a drop
        await tmux.wait_for("Attached first shot.png, second.png")
        tmux.keys("compare them", "Enter")
        await tmux.wait_for("stop: end_turn")
    finally:
        tmux.close()
    assert len(input_images(model.requests[0])) == 2
    assert user_texts(model.requests[0]) == ["compare them"]


async def test_a_long_turn_ends_with_the_bell_and_an_osc_9_notification(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("quick"))
    model.enqueue(text("also quick"))
    tmux = Tmux(cody_env)
    try:
        await tmux.prompt_ready("mock/")
        tmux.keys("one", "Enter")
        await tmux.wait_for("stop: end_turn")
        await asyncio.sleep(0.3)
        assert b"\x1b]9;" not in tmux.output(), "a short turn in a focused window is quiet"
        tmux.keys("-l", "\x1b[O")  # the terminal reports: focus left the window
        await asyncio.sleep(0.3)
        tmux.keys("two", "Enter")
        await tmux.wait_for("stop: end_turn", count=2)
        await asyncio.sleep(0.3)
        output = tmux.output()
    finally:
        tmux.close()
    assert b"\x1b[?1004h" in output, "focus reports were asked for"
    assert b"\x07\x1b]9;Cody: turn ended (end_turn)\x07" in output
