"""The chat as a newcomer met it in a real terminal (tmux), issue 24.11: Tab completion of
slash commands, keys typed during a turn, Ctrl-C, the grant line's quoting, an approved
edit's line counts, an 80-column terminal, the context after `/compact`, forks in `/resume`
and the message numbers `/fork N` takes shown by `/history`."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time

import pytest

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, Usage, text, tool_call
from tests.support.tmux import Tmux

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None and os.environ.get("CI") != "true", reason="tmux is not installed"
)

SESSION_ID = re.compile(r"session ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def toolbar(screen: str) -> str:
    """The bottom bar: the last line on screen that is not blank."""
    return [line for line in screen.splitlines() if line.strip()][-1]


async def bar_with(tmux: Tmux, needle: str, timeout: float = 15) -> str:
    """The bottom bar once it shows `needle` (it is drawn after the prompt comes up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bar = toolbar(tmux.screen())
        if bar.startswith("mock/") and needle in bar:
            return bar
        await asyncio.sleep(0.1)
    raise AssertionError(f"the bar never showed {needle!r}:\n{tmux.screen()}")


async def test_at_80_columns_tab_completes_commands_and_typing_during_a_turn_stays_quiet(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    # `untrusted`: every command and edit asks (the grant line is the approval prompt's).
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "untrusted"')
    model.enqueue(tool_call("exec", {"command": "touch 'two words.txt'"}, call_id="c1"))
    model.enqueue(text("counted"), usage=Usage(input=12000, output=40))
    model.enqueue(
        tool_call(
            "writeFile", {"filePath": "notes.txt", "content": "one\ntwo\nthree\n"}, call_id="w1"
        )
    )
    model.enqueue(text("wrote it"))
    model.enqueue(tool_call("exec", {"command": "sleep 2"}, call_id="s1"))
    model.enqueue(text("slept"))
    model.enqueue(text("slow " * 300, chunks=300), delay_s=0.03)
    (cody_env.workspace / "notes.txt").write_text("two words\n")
    tmux = Tmux(cody_env, width=80)
    try:
        screen = await tmux.wait_for("Ctrl-C interrupts a turn")
        assert SESSION_ID.search(screen), f"the session id is cut by the 80 columns:\n{screen}"
        await tmux.prompt_ready("mock/mock-model")
        assert "approvals untrusted" in toolbar(tmux.screen())

        # The grant line keeps the command's quoting (it was `touch two words.txt`).
        tmux.keys("touch it", "Enter")
        screen = await tmux.wait_for("choice [y/a/")
        assert "applies to the command `touch 'two words.txt'`" in screen, screen
        tmux.keys("y")
        screen = await tmux.wait_for("stop: end_turn")
        # The bar at 80 columns: the parts that matter most, each whole (none cut mid-word).
        bar = await bar_with(tmux, "context ")
        assert bar == "mock/mock-model · context 9% of 128k · approvals untrusted", bar

        # An approved edit says what changed, not just `completed`.
        tmux.keys("edit the notes", "Enter")
        await tmux.wait_for("choice [y/a/", count=2)
        tmux.keys("y")
        screen = await tmux.wait_for("stop: end_turn", count=2)
        assert "✓ notes.txt +3 -1" in screen, screen
        assert "✓ completed" not in screen.split("edit the notes")[-1], screen

        # Tab completes the terminal's own commands and the daemon's.
        tmux.keys("/his", "Tab")
        await tmux.wait_for("› /history")
        tmux.keys("C-u", "/rev", "Tab")
        await tmux.wait_for("› /review")
        tmux.keys("C-u")

        # Keys typed while a command runs are not echoed as escape codes (`^[[A`)...
        tmux.keys("nap", "Enter")
        await tmux.wait_for("choice [y/a/", count=3)
        tmux.keys("y")
        await tmux.wait_for("▸ sleep 2")
        tmux.keys("Up", "Left", "Escape", "x")
        screen = await tmux.wait_for("stop: end_turn", count=3)
        assert "^[" not in screen, screen
        tmux.keys("C-e", "C-u")  # what was typed went to the next prompt: cleared

        # ... and Ctrl-C during a turn shows one `^C` (the terminal's echo was a second).
        tmux.keys("talk slowly", "Enter")
        await tmux.wait_for("slow slow")
        tmux.keys("C-c")
        screen = await tmux.wait_for("stop: cancelled")
        assert screen.count("^C") == 1, screen
    finally:
        tmux.close()


async def test_compact_forks_history_numbers_and_resume(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="model_context_window = 20000")
    model.enqueue(text("first answer " * 20), usage=Usage(input=15000, output=300))
    model.enqueue(text("second answer"), usage=Usage(input=15500, output=20))
    model.enqueue(text("Summary: two questions were answered."), usage=Usage(input=900, output=30))
    tmux = Tmux(cody_env)
    try:
        await tmux.prompt_ready("mock/mock-model")
        tmux.keys("first question", "Enter")
        await tmux.wait_for("stop: end_turn")
        tmux.keys("second question", "Enter")
        await tmux.wait_for("stop: end_turn", count=2)
        await bar_with(tmux, "context 77% of 20k")

        # /compact: the bar shows the smaller context at once, not the old figure.
        tmux.keys("/compact", "Enter")
        await tmux.wait_for("Compacted: ")
        after = await bar_with(tmux, "of 20k")
        shown = re.search(r"context (\d+)% of 20k", after)
        assert shown and int(shown.group(1)) < 50, after  # the summary and recent items only

        # /history numbers the user messages as /fork N counts them.
        tmux.keys("/history", "Enter")
        screen = await tmux.wait_for("/fork N continues")
        replay = screen.split("/history")[-1]
        assert re.search(r"#0 › first question", replay), replay
        assert re.search(r"#1 › second question", replay), replay

        tmux.keys("/fork 0", "Enter")
        screen = await tmux.wait_for("Forked into session")
        tmux.keys("/fork 0", "Enter")
        screen = await tmux.wait_for("Forked into session", count=2)
        ids = SESSION_ID.findall(screen.replace("Forked into session", "session"))
        parent, fork_one, fork_two = ids[0], ids[-2], ids[-1]
        assert len({parent, fork_one, fork_two}) == 3

        # /resume: each row's id prefix is unique among every session (the current one too),
        # and a fork says whose fork it is instead of repeating the parent's title alone.
        tmux.keys("/resume", "Enter")
        screen = await tmux.wait_for("resume which?")
        rows = [
            line
            for line in screen.split("/resume")[-1].splitlines()
            if re.match(r"\s+\d+\. ", line)
        ]
        shown = [row.split()[1] for row in rows]
        everyone = [parent, fork_one, fork_two]
        for prefix in shown:
            assert sum(i.startswith(prefix) for i in everyone) == 1, (prefix, everyone)
        fork_rows = [row for row in rows if f"fork of {parent[: len(shown[0])]}" in row]
        assert len(fork_rows) == 1, rows  # the other fork is the current session (not listed)
        tmux.keys("Enter")
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()
