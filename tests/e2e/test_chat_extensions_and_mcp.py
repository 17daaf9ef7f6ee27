"""The chat in a real terminal (tmux) with issue 27's and 28's features at once: a custom
command, a skill and the real `server-everything`'s prompts completed on Tab from one list;
a PostToolUse hook's failure reported as a `hook:` line; the server's elicitation asked in
the terminal while a turn runs (the turn's input line taken down, as for an approval) and
its answer reaching the server.

Regressions: the server's "ready" line was written into the idle prompt's line (the screen
garbled, Tab's completion drawn over it); an elicitation was asked while the turn's input
line was still up (two prompts at once: the question showed on the input line without the
server's message and URL).
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests.e2e.test_mcp_real_servers import server_toml
from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs
from tests.support.real_mcp_servers import everything
from tests.support.tmux import Tmux

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("tmux") is None and os.environ.get("CI") != "true",
        reason="tmux is not installed",
    ),
]


def extensions(env: CodyEnv) -> None:
    """A custom command and a skill in the workspace, a failing PostToolUse hook for the
    server's tools (user level)."""
    commands = env.workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "hello.md").write_text("---\ndescription: Greets\n---\nSay hello to $ARGUMENTS\n")
    skill = env.workspace / ".agents" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Writes release notes\n---\nbody\n"
    )
    hook = env.root / "lint.py"
    hook.write_text("import sys\nsys.exit('LINT-DOWN: the linter is not installed')\n")
    (env.cody_home / "hooks.json").write_text(
        '{"hooks": {"PostToolUse": [{"matcher": "mcp__every__.*", "hooks": '
        f'[{{"type": "command", "command": "{sys.executable} {hook}"}}]}}]}}}}'
    )


async def test_tab_completes_every_kind_of_command_and_an_elicitation_is_asked_whole_during_a_turn(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    # `never`: no approval takes the turn's input line down before the question comes.
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "never"')
    config = cody_env.cody_home / "config.toml"
    config.write_text(config.read_text() + "\n" + server_toml("every", everything()))
    extensions(cody_env)
    login = {"url": "https://example.com/login", "message": "Sign in to the demo"}
    model.enqueue(tool_call("mcp__every__trigger-url-elicitation", login, call_id="url"))
    model.enqueue(text("Signed in."))
    tmux = Tmux(cody_env)
    try:
        await tmux.prompt_ready("mock/mock-model")
        await tmux.wait_for("MCP server every: ready", timeout=40)
        # One list: the terminal's commands, a custom command, a skill, an MCP prompt.
        tmux.keys("/hel", "Tab")
        await tmux.wait_for("Greets")
        tmux.keys("C-u", "/release", "Tab")
        await tmux.wait_for("› /release-notes")
        tmux.keys("C-u", "/mcp:every:args", "Tab")
        await tmux.wait_for("› /mcp:every:args-prompt", timeout=40)
        tmux.keys("C-u")
        # /help lists them too: the files' commands and the servers' prompts.
        tmux.keys("/help", "Enter")
        screen = await tmux.wait_for("Prompts of the session's MCP servers:")
        assert "/hello" in screen.split("Commands from your files")[1]
        assert "/mcp:every:args-prompt city [state]" in screen
        assert "A prompt with two arguments, one required and one optional" in screen

        tmux.keys("sign me in", "Enter")
        screen = await tmux.wait_for("Did you open it and finish there? [y/n]:")
        # The question shows whole, with the turn's input line down (one prompt has the keys).
        assert "MCP server every asks:" in screen and "Sign in to the demo" in screen, screen
        assert "working · Enter steers" not in screen, screen
        tmux.keys("y", "Enter")
        screen = await tmux.wait_for("stop: end_turn")
        assert "hook: PostToolUse hook" in screen and "LINT-DOWN" in screen
        assert "Signed in." in screen
    finally:
        tmux.close()
    output = tool_outputs(model.requests[-1])["url"]
    assert "User completed the URL elicitation flow" in output, output
