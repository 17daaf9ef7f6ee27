"""What a backend CLI is given and what Cody keeps from it (issue 20, items 2-4 and 11):
its environment, the paths a command names, redaction of what it reports, `/` prompts, and
the tripwire for a tool call that skipped Cody. The real CLIs are in
tests/e2e/test_backend_attacks.py; these pin the pieces the e2e tests cannot reach."""

from __future__ import annotations

from pathlib import Path

import pytest
from cody_daemon.backends.base import (
    BackendSettings,
    FileRead,
    Launch,
    TextDelta,
    ToolStarted,
    TurnIO,
)
from cody_daemon.backends.claude_code import ClaudeBackend
from cody_daemon.backends.claude_turn import ClaudeTurn
from cody_daemon.backends.display import command_reads
from cody_daemon.backends.env import cli_credentials, cli_environment, codex_command_env_args
from cody_daemon.engine.backend_guard import BackendGuard
from cody_daemon.policy.secrets import REDACTED, SecretGuard

ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "GITHUB_TOKEN": "ghp_secretsecretsecret1",
    "DB_PASSWORD": "hunter2hunter2",
    "ANTHROPIC_API_KEY": "sk-ant-key-0123456789",
    "OPENAI_API_KEY": "sk-openai-0123456789",
    "MOCK_KEY": "sk-mock-0123456789",
    "CLAUDE_CODE_SAFE_MODE": "1",
}


def test_a_cli_gets_no_credential_but_its_own() -> None:
    guard = SecretGuard(env=ENV)
    own = cli_credentials("claude", ENV)
    claude = cli_environment("claude", ENV, guard, own_credentials=own)
    assert own == ("ANTHROPIC_API_KEY",)
    assert claude["ANTHROPIC_API_KEY"] == ENV["ANTHROPIC_API_KEY"]
    for withheld in ("GITHUB_TOKEN", "DB_PASSWORD", "OPENAI_API_KEY", "MOCK_KEY"):
        assert withheld not in claude
    assert claude["PATH"] == ENV["PATH"] and claude["HOME"] == ENV["HOME"]
    assert claude["CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS"] == "1"
    assert "CLAUDE_CODE_SAFE_MODE" not in claude, "it would drop Cody's PreToolUse hook"

    own = cli_credentials("codex", ENV, "MOCK_KEY")  # the env_key of Codex's own provider
    codex = cli_environment("codex", ENV, guard, own_credentials=own)
    assert own == ("MOCK_KEY", "OPENAI_API_KEY")
    assert {"MOCK_KEY", "OPENAI_API_KEY"} <= set(codex)
    assert not {"GITHUB_TOKEN", "DB_PASSWORD", "ANTHROPIC_API_KEY"} & set(codex)
    assert "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS" not in codex


def test_codex_keeps_its_own_key_from_its_commands(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    assert codex_command_env_args(("MOCK_KEY",), config) == [
        "-c",
        'shell_environment_policy.exclude=["MOCK_KEY"]',
    ]
    config.write_text('[shell_environment_policy]\nexclude = ["AWS_*"]\n')
    assert codex_command_env_args(("MOCK_KEY", "bad name"), config)[1] == (
        'shell_environment_policy.exclude=["AWS_*", "MOCK_KEY"]'
    )
    assert codex_command_env_args((), config) == []


def test_the_paths_a_command_names_are_found_through_shells_and_pipes() -> None:
    cwd = Path("/work")
    home = str(Path("~").expanduser())
    assert command_reads("/bin/bash -lc 'cat ~/.codex/auth.json|base64'", cwd) == (
        FileRead(f"{home}/.codex/auth.json"),
    )
    assert command_reads(["tool", "--config=conf/a.toml"], cwd) == (FileRead("/work/conf/a.toml"),)
    assert command_reads("ls -la && echo hi", cwd) == ()


def test_everything_a_cli_reports_is_redacted() -> None:
    guard = BackendGuard(secrets=SecretGuard(env=ENV))
    secret = ENV["GITHUB_TOKEN"]
    text = guard.redact_event(TextDelta(f"the token is {secret}"))
    assert text == TextDelta(f"the token is {REDACTED}")
    started = guard.redact_event(
        ToolStarted(
            call_id="c1",
            tool="Bash",
            cody_tool="exec",
            title=f"curl -H {secret} x",
            kind="execute",
            raw_input={"command": f"curl -H {secret} x"},
            arguments=f'{{"command": "curl -H {secret} x"}}',
        )
    )
    assert isinstance(started, ToolStarted)
    assert secret not in repr(started) and started.call_id == "c1"


def _claude(tmp_path: Path) -> ClaudeBackend:
    return ClaudeBackend(Launch(cli=tmp_path / "claude", cwd=tmp_path, env={}))


SETTINGS = BackendSettings(approval_policy="on-request", sandbox_mode="workspace-write")


@pytest.mark.parametrize("prompt", ["/cost", "  /init: write AGENTS.md"])
def test_a_slash_prompt_is_text_for_claude_code(tmp_path: Path, prompt: str) -> None:
    report = _claude(tmp_path).dry_run(prompt, SETTINGS)
    assert report.requests[0]["request"]["hooks"]["PreToolUse"], "every tool call is put to Cody"
    sent = report.requests[1]["message"]["content"]
    assert sent == "\u200b" + prompt
    assert _claude(tmp_path).dry_run("hello /x", SETTINGS).requests[1]["message"]["content"] == (
        "hello /x"
    )


def test_a_tool_result_that_skipped_cody_ends_the_turn(tmp_path: Path) -> None:
    backend = _claude(tmp_path)
    turn = ClaudeTurn(backend, TurnIO(lambda event: None, None, SETTINGS))  # type: ignore[arg-type]
    turn.decided.add("toolu_asked")
    result = {"type": "tool_result", "tool_use_id": "toolu_asked", "content": "ok"}
    refused = {"type": "tool_result", "tool_use_id": "toolu_x", "content": "no", "is_error": True}
    turn._tool_results({"content": [result, refused]})  # asked, or refused by Claude Code
    skipped = {"type": "tool_result", "tool_use_id": "toolu_skipped", "content": "ran"}
    with pytest.raises(Exception, match="without asking Cody"):
        turn._tool_results({"content": [skipped]})
