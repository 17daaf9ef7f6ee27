"""The interactive chat in a real terminal (tmux): streaming, Ctrl-C interrupts, Ctrl-D quits.

Under the default policy a sandboxed command runs without a question, so the commands that
must ask here ask to run outside the sandbox (`escalate`), as a model does when the sandbox
is in its way."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, reasoning, text, tool_call
from tests.support.tmux import Tmux

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None and os.environ.get("CI") != "true", reason="tmux is not installed"
)


CHOICE = "choice [y/a/p/n/r/c]:"
"""The one-key prompt of a request that offers "always allow in this project"."""


def outside(command: str, call_id: str) -> object:
    """An exec the model asks to run outside the sandbox (it asks under the default policy)."""
    args = {"command": command, "escalate": True, "justification": "the sandbox is in the way"}
    return tool_call("exec", args, call_id=call_id)


async def test_chat_streams_markdown_interrupts_and_quits(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("# Plan\n\n- **first** step\n- second step\n", chunks=6))
    model.enqueue(text("word " * 200, chunks=200), delay_s=0.05)
    model.enqueue(outside("echo ran-it", "c1"))
    model.enqueue(text("done"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("make a plan", "Enter")
        screen = await tmux.wait_for("stop: end_turn")
        assert "# Plan" not in screen and "**first**" not in screen, "markdown is rendered"
        assert "first step" in screen and "Plan" in screen

        tmux.keys("talk a lot", "Enter")
        await tmux.wait_for("word word word")
        tmux.keys("C-c")
        screen = await tmux.wait_for("stop: cancelled")
        assert "cancelling the turn" in screen

        tmux.keys("run it", "Enter")
        await tmux.wait_for(CHOICE)
        tmux.keys("y")
        screen = await tmux.wait_for("stop: end_turn", count=2)
        assert "ran-it" in screen

        tmux.keys("C-d")
        screen = await tmux.wait_for("EXITED=0")
        assert "Resume with: cody-client --resume" in screen
    finally:
        tmux.close()


def _running(marker: str) -> bool:
    """Whether a process whose command line contains `marker` is alive (read from /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and "tmux" not in cmdline:
            return True
    return False


async def test_ctrl_c_after_an_approval_cancels_the_turn_and_kills_the_command(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Regression: once an approval prompt was answered, Ctrl-C did nothing for the turn."""
    cody_env.use_mock_provider(model.base_url)
    marker = f"{time.time_ns() % 100000 + 900000}"
    model.enqueue(outside(f"sleep {marker}", "c1"))
    model.enqueue(text("never reached"))
    model.unused_ok = True  # the turn is cancelled before this answer
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("sleep a while", "Enter")
        await tmux.wait_for(CHOICE)
        tmux.keys("y")
        deadline = time.monotonic() + 20
        while not _running(f"sleep {marker}"):
            assert time.monotonic() < deadline, tmux.screen()
            await asyncio.sleep(0.05)
        tmux.keys("C-c")
        screen = await tmux.wait_for("stop: cancelled", timeout=10)
        assert "cancelling the turn" in screen
        assert not _running(f"sleep {marker}"), "the command's process group is gone"

        tmux.keys("C-c")  # the second Ctrl-C in a row quits, also after the turn ended
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()


async def test_ctrl_c_twice_during_a_turn_quits(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(outside("echo approved", "c1"))
    model.enqueue(text("slow " * 400, chunks=400), delay_s=0.05)
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("go", "Enter")
        await tmux.wait_for(CHOICE)
        tmux.keys("y")
        await tmux.wait_for("slow slow")
        tmux.keys("C-c")
        tmux.keys("C-c")
        screen = await tmux.wait_for("EXITED=", timeout=15)
        assert "cancelling the turn" in screen
    finally:
        tmux.close()


async def test_exec_on_a_terminal_cancelled_after_an_approval_exits_3(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    marker = f"{time.time_ns() % 100000 + 800000}"
    model.enqueue(outside(f"sleep {marker}", "c1"))
    tmux = Tmux(cody_env, "exec", "--approve", "ask", "wait for it")
    try:
        await tmux.wait_for(CHOICE)
        tmux.keys("y")
        deadline = time.monotonic() + 20
        while not _running(f"sleep {marker}"):
            assert time.monotonic() < deadline, tmux.screen()
            await asyncio.sleep(0.05)
        tmux.keys("C-c")
        await tmux.wait_for("EXITED=3", timeout=10)
        assert not _running(f"sleep {marker}")
    finally:
        tmux.close()


async def test_the_screen_shows_each_reply_once_names_as_typed_and_diffs_in_their_frame(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Regressions seen in the demo: the reply glued onto the thinking line and printed twice,
    `__init__.py` rendered as a bold `init.py`, and the approval diff's `--- a//tmp/...`
    header printed outside the approval frame."""
    cody_env.use_mock_provider(model.base_url)
    (cody_env.workspace / "notes.txt").write_text("old line\n")
    model.enqueue(
        reasoning("Looking at the package first."),
        text("Let me check."),
        tool_call("listDir", {"dirPath": "."}, call_id="l1"),
    )
    model.enqueue(
        reasoning("The listing is short."),
        text("Found __init__.py and __pycache__/ here; the reply ends now."),
    )
    model.enqueue(
        tool_call("writeFile", {"filePath": "notes.txt", "content": "new line\n"}, call_id="w1")
    )
    model.enqueue(text("Edited."))
    tmux = Tmux(cody_env, "--approval-policy", "untrusted")  # every edit asks
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("look around", "Enter")
        screen = await tmux.wait_for("stop: end_turn")
        assert screen.count("the reply ends now") == 1, screen
        [reply_line] = [line for line in screen.splitlines() if "the reply ends now" in line]
        assert "thinking" not in reply_line and "listing is short" not in reply_line, screen
        assert "__init__.py" in reply_line and "__pycache__/" in reply_line, screen

        tmux.keys("edit the notes", "Enter")
        screen = await tmux.wait_for(CHOICE)
        frame_start = screen.index("Approval needed")
        frame = screen[frame_start : screen.index(CHOICE)].splitlines()
        assert any("p: Always allow `writeFile(./**)` in " in line for line in frame), frame
        body = [line for line in frame[1:] if line.strip()]
        assert body[-1].startswith("╰─"), "\n".join(frame)
        assert all(line.startswith("│") for line in body[:-1]), "\n".join(frame)
        assert any("-old line" in line for line in body) and any(
            "+new line" in line for line in body
        )
        assert "--- a/" not in screen and "+++ b/" not in screen
        tmux.keys("y")
        await tmux.wait_for("stop: end_turn", count=2)
    finally:
        tmux.close()


async def test_chat_resume_picker_prefixes_history_fork_and_newlines(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("listDir", {"dirPath": "."}, call_id="l1"))
    model.enqueue(text("listed once"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        first_id = tmux.screen().split("session ")[1].split()[0]
        tmux.keys("list them", "Enter")
        await tmux.wait_for("stop: end_turn")

        tmux.keys("/history", "Enter")
        screen = await tmux.wait_for("listed once", count=2)  # the reply comes last
        assert screen.count("▸ List .") == 2, "the replay shows the call and the reply again"

        tmux.keys("/fork 5", "Enter")
        screen = await tmux.wait_for("There is no user message 5 to fork at")
        assert "has 1 user message, numbered 0 to 0" in screen

        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()

    model.enqueue(text("second session answer"))
    tmux = Tmux(cody_env)
    try:
        await tmux.prompt_ready("mock/mock-model")
        tmux.keys("line one")
        tmux.keys("M-Enter")  # Alt-Enter: a new line, not a send
        tmux.keys("line two", "Enter")
        await tmux.wait_for("stop: end_turn")
        assert model.requests[-1].body["input"][-1]["content"][0]["text"] == "line one\nline two"

        tmux.keys("/resume", "Enter")
        screen = await tmux.wait_for("resume which?")
        assert "  1. " + first_id[:8] in screen
        tmux.keys("1", "Enter")
        screen = await tmux.wait_for(f"Resumed session {first_id}.")
        assert "listed once" in screen.split("resume which?")[1], "the history was replayed"

        tmux.keys(f"/resume {first_id[:13]}", "Enter")  # a unique prefix
        await tmux.wait_for(f"Resumed session {first_id}.", count=2)
    finally:
        tmux.close()


async def test_the_approval_options_fit_an_80_column_terminal(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(outside("echo narrow", "c1"))
    model.enqueue(text("ok"))
    tmux = Tmux(cody_env, width=80)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("go", "Enter")
        screen = await tmux.wait_for(CHOICE)
        [options] = [line for line in screen.splitlines() if line.startswith("╰─")]
        assert options.rstrip().endswith("c cancel"), screen
        tmux.keys("n")
        await tmux.wait_for("stop: end_turn")
    finally:
        tmux.close()


async def test_the_sessions_own_commands_are_in_help_complete_with_tab_and_run(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    commands = cody_env.workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet-team.md").write_text(
        "---\ndescription: Greet the team\nargument-hint: [team]\n---\nSay hello to $ARGUMENTS.\n"
    )
    model.enqueue(text("hello, core team"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        await tmux.prompt_ready("mock/mock-model")
        tmux.keys("/help", "Enter")
        screen = await tmux.wait_for("Greet the team (project claude)")  # the last row
        assert "Commands from your files" in screen and "/greet-team [team]" in screen

        tmux.keys("/greet-t", "Tab")
        await tmux.wait_for("› /greet-team")
        tmux.keys(" core", "Enter")
        await tmux.wait_for("hello, core team")
        assert model.requests[0].body["input"][-1]["content"][0]["text"] == "Say hello to core."
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()


async def test_at_opens_the_files_menu_as_typed_and_a_slash_name_waits_for_tab(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`@` completion and `/` completion share one prompt: the files' menu opens while an
    `@word` is typed; a command's name completes on Tab only (no menu racing the Tab)."""
    cody_env.use_mock_provider(model.base_url)
    (cody_env.workspace / "notes-for-review.txt").write_text("remember the milk\n")
    model.enqueue(text("read it"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        await tmux.prompt_ready("mock/mock-model")  # keys typed sooner miss the completer
        tmux.keys("/rev")
        await asyncio.sleep(0.5)
        assert "have the model review" not in tmux.screen()  # no menu for a name as typed
        tmux.keys("BSpace", "BSpace", "BSpace", "BSpace", "look at @notes-for")
        await tmux.wait_for("notes-for-review.txt")  # the menu, as typed
        tmux.keys("Tab")
        await tmux.wait_for("look at @notes-for-review.txt")
        tmux.keys("Enter")
        await tmux.wait_for("read it")
        sent = json.dumps(model.requests[0].body["input"][-1])
        assert "remember the milk" in sent
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()


async def test_an_mcp_servers_question_is_answered_in_the_terminal(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    import sys

    from tests.support.mcp_servers import SCRIPTS
    from tests.support.model_inputs import tool_outputs

    cody_env.use_mock_provider(
        model.base_url,
        extra=(
            f'[mcp_servers.demo]\ncommand = "{sys.executable}"\nargs = ["{SCRIPTS["demo"]}"]\n'
            "startup_timeout_s = 20\nrequires_approval = false\n"
        ),
    )
    model.enqueue(tool_call("mcp__demo__ask_name", {}, call_id="ask"))
    model.enqueue(text("Nice to meet you."))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("MCP server demo: ready")  # a turn waits for servers briefly
        tmux.keys("who am I?", "Enter")
        await tmux.wait_for("Answer? [y/n]:")
        tmux.keys("y", "Enter")
        await tmux.wait_for("Name (string) *:")
        tmux.keys("Ada", "Enter")
        await tmux.wait_for("Age (integer; default 30):")
        tmux.keys("old", "Enter")
        await tmux.wait_for("an integer")
        tmux.keys("36", "Enter")
        screen = await tmux.wait_for("stop: end_turn")
        assert "MCP server demo asks:" in screen and "Who are you?" in screen
        assert tool_outputs(model.requests[-1])["ask"] == "Hello Ada, 36"
    finally:
        tmux.close()


async def test_p_always_allows_in_this_project_and_the_next_run_does_not_ask(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(outside("mkdir -p ../made-first", "c1"))
    model.enqueue(text("first done"))
    model.enqueue(outside("mkdir -p ../made-second", "c2"))
    model.enqueue(text("second done"))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("make one", "Enter")
        screen = await tmux.wait_for(CHOICE)
        assert f"p: Always allow `exec(mkdir:*)` in {cody_env.workspace}" in screen
        assert "the sandbox is in the way" in screen, "the justification is shown"
        tmux.keys("p")
        await tmux.wait_for("stop: end_turn")
        tmux.keys("make another", "Enter")
        screen = await tmux.wait_for("stop: end_turn", count=2)
        assert screen.count("choice [") == 1, "the saved rule answered the second run"
        assert (cody_env.root / "made-first").is_dir() and (cody_env.root / "made-second").is_dir()
        config = (cody_env.cody_home / "config.toml").read_text()
        assert f'[projects."{cody_env.workspace}".permissions]' in config
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()


async def test_ps_lists_and_stops_the_sessions_processes_and_the_status_bar_counts_them(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`/ps` and the status bar (issue 26): a background process the model started is
    counted and listed, a command that would retitle the terminal is shown inert, and
    `/ps kill` stops it (the process is gone, the count with it)."""
    cody_env.use_mock_provider(
        model.base_url,
        extra='approval_policy = "never"\nsandbox_mode = "danger-full-access"',
    )
    marker = f"{time.time_ns() % 100000 + 800000}"
    command = f"sleep {marker} # \x1b]0;pwned\x07"
    model.enqueue(tool_call("exec", {"command": command, "background": True}, call_id="c1"))
    model.enqueue(text("The server runs."))
    tmux = Tmux(cody_env)
    try:
        await tmux.wait_for("Ctrl-C interrupts a turn")
        tmux.keys("start it", "Enter")
        await tmux.wait_for("stop: end_turn")
        assert _running(f"sleep {marker}")
        await tmux.wait_for("1 process running (/ps)")
        tmux.keys("/ps", "Enter")
        screen = await tmux.wait_for("  1  running")
        rows = [line for line in screen.splitlines() if line.split()[:2] == ["1", "running"]]
        assert len(rows) == 1, screen
        row = rows[0]
        assert " bg " in row and f"sleep {marker} # ␛]0;pwned" in row
        assert tmux.pane_title() != "pwned"
        tmux.keys("/ps kill 1", "Enter")
        await tmux.wait_for("Stopped process 1 (killed by SIGTERM)")
        deadline = time.monotonic() + 10
        while _running(f"sleep {marker}"):
            assert time.monotonic() < deadline, "the process outlived /ps kill"
            await asyncio.sleep(0.05)
        tmux.keys("/ps", "Enter")
        await tmux.wait_for("killed by SIGTERM", count=2)
        assert "process running (/ps)" not in tmux.screen().splitlines()[-1]
        tmux.keys("C-d")
        await tmux.wait_for("EXITED=0")
    finally:
        tmux.close()
