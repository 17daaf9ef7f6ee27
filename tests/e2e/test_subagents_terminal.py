"""cody-client in a real terminal (tmux) with subagents and worktrees: a child's activity shows
under the parent's `task` call, its approval is asked in its name, `/agents` lists and opens it,
and `--worktree` says where the session works and what became of the worktree."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.tmux import Tmux

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None and os.environ.get("CI") != "true", reason="tmux is not installed"
)


def line_of(lines: list[str], needle: str) -> int:
    found = [i for i, line in enumerate(lines) if needle in line]
    assert found, f"{needle!r} is not on the screen:\n" + "\n".join(lines)
    return found[0]


async def test_a_childs_activity_shows_under_the_parents_call_and_agents_opens_it(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "untrusted"\n')
    (cody_env.workspace / "notes.txt").write_text("forty-two\n")
    hostile = "echo made\x1b]0;PWNED-TITLE\x07 > made.txt"
    model.enqueue(
        tool_call(
            "task",
            {
                "description": "look at the notes",
                "prompt": "Read notes.txt. CHILD",
                "agent": "general",
            },
            call_id="p1",
        )
    )
    model.enqueue(tool_call("readFile", {"filePath": "notes.txt"}, call_id="c1"))
    model.enqueue(tool_call("exec", {"command": hostile}, call_id="c2"))
    model.enqueue(text("The notes say forty-two."))
    model.enqueue(text("My subagent says forty-two."))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("ask a subagent", "Enter")
        screen = await tmux.wait_for("choice [y/a/p/n/r/c]:")
        assert "Approval needed: [general] echo made" in screen
        tmux.keys("y")
        screen = await tmux.wait_for("stop: end_turn")

        lines = screen.splitlines()
        call = line_of(lines, "general: look at the notes")
        started = line_of(lines, "↳ general working · session")
        read = line_of(lines, "│ general: ▸ Read notes.txt")
        ran = line_of(lines, "│ general: ▸ echo made")
        answer = line_of(lines, "✓ The notes say forty-two.")
        assert call < started < read < ran < answer, screen
        assert "␛]0;PWNED-TITLE" in screen, "the child's title reached the screen inert"
        assert "PWNED" not in tmux.pane_title()
        assert "subagents 1:" in screen
        child = lines[started].split("session ")[-1].strip()

        tmux.keys("/agents", "Enter")
        screen = await tmux.wait_for("/agents N opens one")
        assert f"1. general    {child}" in screen

        tmux.keys("/agents 1", "Enter")
        screen = await tmux.wait_for(f"In subagent session {child}")
        assert "Read notes.txt. CHILD" in screen, "opening it replays the child's history"
        tmux.keys("/agents back", "Enter")
        await tmux.wait_for("Back in session")

        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()


async def test_worktree_option_says_where_the_session_works_and_what_became_of_it(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    workspace = cody_env.workspace
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)
    tmux = Tmux(cody_env, "--worktree", "demo")
    try:
        screen = await tmux.wait_for("Ctrl-C interrupts a turn")
        assert "Working in a worktree:" in screen and "(branch cody/demo)" in screen
        await tmux.prompt_ready("mock/mock-model")
        tmux.keys("C-d")
        screen = await tmux.wait_for("EXITED=0")
        assert "Worktree removed: nothing changed in it." in screen
        branches = subprocess.run(
            ["git", "branch", "--list"], cwd=workspace, capture_output=True, text=True, check=True
        )
        assert "cody/demo" not in branches.stdout
    finally:
        tmux.close()


async def test_undo_ps_and_agents_next_to_each_other_and_agents_after_a_resume(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`/undo` in the parent undoes what its child changed (the parent's checkpoint covers
    its `task` call); `/ps` lists the parent's own processes; a resumed parent's `/agents`
    finds its saved child through `session/list`'s `_meta.cody.parentSessionId`."""
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"\n')
    made = cody_env.workspace / "made.txt"
    model.enqueue(
        tool_call(
            "task",
            {"description": "make a file", "prompt": "Write made.txt. CHILD"},
            call_id="p1",
        )
    )
    model.enqueue(
        tool_call("writeFile", {"filePath": "made.txt", "content": "child\n"}, call_id="c1")
    )
    model.enqueue(text("I wrote made.txt."))
    model.enqueue(text("My subagent wrote it."))
    tmux = Tmux(cody_env)
    try:
        screen = await tmux.wait_for("Ctrl-C interrupts a turn")
        parent = screen.split("session ", 1)[1].split()[0]
        tmux.keys("ask a subagent", "Enter")
        screen = await tmux.wait_for("stop: end_turn")
        child = line_of_text(screen, "↳ general working · session").split("session ")[-1].strip()
        assert made.read_text() == "child\n"

        tmux.keys("/ps", "Enter")
        await tmux.wait_for("No processes in this session.")
        tmux.keys("/undo", "Enter")
        await tmux.wait_for("Restored 1 file(s): made.txt")
        assert not made.exists(), "undoing the parent's turn undid its child's edit"
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()

    resumed = Tmux(cody_env, "--resume", parent)
    try:
        await resumed.wait_for("Ctrl-C interrupts a turn")
        await resumed.prompt_ready("mock/mock-model")
        resumed.keys("/agents", "Enter")
        screen = await resumed.wait_for("/agents N opens one")
        assert f"1. subagent   {child}" in screen, screen
        resumed.keys("/agents 1", "Enter")
        await resumed.wait_for(f"In subagent session {child}")
        resumed.keys("C-d")
        await resumed.wait_for("EXITED=0")
    finally:
        resumed.close()


def line_of_text(screen: str, needle: str) -> str:
    lines = screen.splitlines()
    return lines[line_of(lines, needle)]
