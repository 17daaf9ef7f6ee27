"""The codex/claude mapping table, error classification, CLI discovery and display helpers.

Every row of the table in backends/mapping.py (and docs/backends.md) is checked here; the
behaviour behind each flag is checked with the real CLIs in tests/e2e/test_backends.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cody_daemon.backends.base import BackendSettings
from cody_daemon.backends.discovery import find_cli, login_status, not_installed_message
from cody_daemon.backends.display import (
    apply_unified_diff,
    command_display,
    exec_grant_key,
    paths_grant_key,
)
from cody_daemon.backends.failures import classify, cli_exited
from cody_daemon.backends.mapping import claude_flags, claude_tool_to_cody, codex_policy
from cody_daemon.backends.process import kill_tree
from cody_daemon.backends.project_guard import codex_project_overrides
from cody_daemon.errors import ProviderError
from cody_daemon.policy.allowlist import allowed_tools
from cody_daemon.policy.commands import normalize_command
from cody_daemon.tools.registry import ToolRegistry

FACTS = ToolRegistry.builtin().facts()
"""What Cody's tools can do: the engine hands backends these with the settings."""


def settings(
    policy: str = "on-request", sandbox: str = "workspace-write", **extra: object
) -> BackendSettings:
    extra.setdefault("tool_facts", FACTS)
    return BackendSettings(approval_policy=policy, sandbox_mode=sandbox, **extra)  # type: ignore[arg-type]


# -- the table --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "sandbox", "codex", "claude"),
    [
        ("untrusted", "workspace-write", ("untrusted", "workspace-write"), "default"),
        ("on-request", "workspace-write", ("untrusted", "workspace-write"), "default"),
        ("on-failure", "workspace-write", ("on-request", "workspace-write"), "default"),
        ("never", "workspace-write", ("never", "workspace-write"), "acceptEdits"),
        ("never", "danger-full-access", ("untrusted", "danger-full-access"), "acceptEdits"),
        ("on-failure", "danger-full-access", ("untrusted", "danger-full-access"), "default"),
        ("on-request", "read-only", ("untrusted", "read-only"), "plan"),
        ("never", "read-only", ("never", "read-only"), "plan"),
    ],
)
def test_modes_map_to_each_cli(
    policy: str, sandbox: str, codex: tuple[str, str], claude: str
) -> None:
    mapped = codex_policy(settings(policy, sandbox))
    assert (mapped.approval_policy, mapped.sandbox) == codex
    assert claude_flags(settings(policy, sandbox)).permission_mode == claude


def test_a_read_only_phase_runs_codex_read_only_and_asking() -> None:
    research = allowed_tools(None, "research", FACTS)
    mapped = codex_policy(settings("never", "danger-full-access", allowed_tools=research))
    assert (mapped.approval_policy, mapped.sandbox) == ("untrusted", "read-only")
    assert mapped.notes
    implement = codex_policy(
        settings("never", allowed_tools=allowed_tools(None, "implement", FACTS))
    )
    assert (implement.approval_policy, implement.sandbox) == ("never", "workspace-write")


def test_an_allowlist_without_exec_makes_codex_ask_but_keeps_its_sandbox() -> None:
    mapped = codex_policy(settings("never", allowed_tools=frozenset({"readFile", "applyPatch"})))
    assert (mapped.approval_policy, mapped.sandbox) == ("untrusted", "workspace-write")


def test_claude_tools_follow_the_allowlist_and_never_skip_our_prompt() -> None:
    flags = claude_flags(settings(allowed_tools=allowed_tools(None, "research", FACTS)))
    assert flags.tools is not None
    assert {"Read", "Grep", "Glob", "WebFetch", "WebSearch"} <= set(flags.tools)
    assert "Bash" not in flags.tools and "Edit" not in flags.tools
    assert {"Bash", "Edit", "Write"} <= set(flags.disallowed)
    argv = flags.argv()
    assert "--allowedTools" not in argv, "it would skip our client's approval"
    assert argv[argv.index("--tools") + 1] == ",".join(flags.tools)
    unrestricted = claude_flags(settings())
    assert unrestricted.tools is None and unrestricted.disallowed == []


def test_claude_reads_project_settings_only_for_trusted_projects() -> None:
    untrusted = claude_flags(settings()).argv()
    assert untrusted[untrusted.index("--setting-sources") + 1] == "user"
    assert "--strict-mcp-config" in untrusted
    assert "--setting-sources" not in claude_flags(settings(project_trusted=True)).argv()


def test_claude_tool_names_map_to_cody_tools() -> None:
    assert claude_tool_to_cody("Bash") == "exec"
    assert claude_tool_to_cody("Edit") == "applyPatch"
    assert claude_tool_to_cody("mcp__files__read") == "mcp__files__read"
    assert claude_tool_to_cody("Workflow") is None


def test_codex_project_mcp_servers_are_overridden_for_untrusted_projects(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".codex").mkdir(parents=True)
    (tmp_path / "repo" / ".codex" / "config.toml").write_text(
        '[mcp_servers.evil]\ncommand = "touch"\n[mcp_servers.other-one]\nurl = "http://x"\n'
    )
    sub = tmp_path / "repo" / "sub"
    sub.mkdir()
    args = codex_project_overrides(sub, tmp_path / "codex-home")
    assert args[0::2] == ["-c", "-c"]
    assert [a.split("=", 1)[0] for a in args[1::2]] == [
        "mcp_servers.evil",
        "mcp_servers.other-one",
    ]
    assert all("enabled=false" in a for a in args[1::2])
    (tmp_path / "repo" / ".codex" / "config.toml").write_text('[mcp_servers."a.b"]\ncommand="x"\n')
    with pytest.raises(ProviderError, match="trusted_projects"):
        codex_project_overrides(sub, tmp_path / "codex-home")


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("detail", "status", "code", "kind"),
    [
        ("unexpected status 401 Unauthorized", 401, None, "auth"),
        ("whatever", None, "unauthorized", "auth"),
        ("Invalid API key · Please run /login", None, None, "auth"),
        ("exceeded retry limit, last status: 429 Too Many Requests", 429, None, "rate_limit"),
        ("usage limit reached", None, "usageLimitExceeded", "rate_limit"),
        ("prompt is too long: 210000 tokens > 200000 maximum", 400, None, "context_window"),
        ("x", None, "contextWindowExceeded", "context_window"),
        ("error sending request: Connection refused", None, None, "network"),
        ("stream disconnected before completion", None, "responseStreamDisconnected", "network"),
        ("API Error: 500 Internal server error", 500, None, "provider"),
    ],
)
def test_failures_are_classified(
    detail: str, status: int | None, code: str | None, kind: str
) -> None:
    error = classify("codex", detail, status=status, code=code)
    assert error.kind == kind
    assert error.provider == "codex"


def test_auth_errors_say_how_to_log_in_and_hide_keys() -> None:
    codex = classify("codex", "Incorrect API key provided: sk-proj-abc****1234", status=401)
    assert "run `codex login`" in codex.message
    assert "sk-proj" not in codex.message and "<redacted>" in codex.message
    claude = classify("claude", "invalid x-api-key", status=401)
    assert "run `claude` and log in" in claude.message


def test_an_exit_is_explained_by_the_last_stderr_lines() -> None:
    error = cli_exited(
        "claude", 1, "starting\nWARN noise\nError: Invalid API key · Please run /login\n"
    )
    assert error.kind == "auth"
    assert "exited with code 1" in error.message and "Invalid API key" in error.message


# -- discovery --------------------------------------------------------------------------------


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 9.9\n")
    path.chmod(0o755)
    return path


def test_the_override_wins_then_path_then_install_dirs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    in_path = _exe(tmp_path / "bin" / "codex")
    in_local = _exe(home / ".local" / "bin" / "codex")
    override = _exe(tmp_path / "custom" / "my-codex")
    env = {"HOME": str(home), "PATH": str(tmp_path / "bin")}
    assert find_cli("codex", {**env, "CODEX_CLI_PATH": str(override)}).path == override
    found = find_cli("codex", env)
    assert (found.path, found.via) == (in_path, "PATH")
    assert find_cli("codex", {**env, "PATH": "/nonexistent"}).path == in_local
    claude_local = _exe(home / ".claude" / "local" / "claude")
    assert find_cli("claude", {"HOME": str(home), "PATH": "/nonexistent"}).path == claude_local


def test_a_bad_override_is_missing_and_says_why(tmp_path: Path) -> None:
    location = find_cli(
        "claude", {"HOME": str(tmp_path), "PATH": "", "CLAUDE_CLI_PATH": "/no/such"}
    )
    assert not location.found
    message = not_installed_message("claude", location)
    assert "CLAUDE_CLI_PATH=/no/such is not an executable file" in message
    assert "npm install -g @anthropic-ai/claude-code" in message


def test_login_detection_looks_at_names_and_files_only(tmp_path: Path) -> None:
    assert login_status("claude", {"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "k"}).source == (
        "env ANTHROPIC_API_KEY"
    )
    assert login_status("codex", {"HOME": str(tmp_path)}).state == "missing"
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model_provider = "m"\n[model_providers.m]\nbase_url = "http://x"\nenv_key = "M_KEY"\n'
    )
    missing = login_status("codex", {"HOME": str(tmp_path)})
    assert missing.state == "missing" and "M_KEY" in str(missing.source)
    assert login_status("codex", {"HOME": str(tmp_path), "M_KEY": "v"}).state == "ok"


# -- display ----------------------------------------------------------------------------------


def test_a_shell_wrapped_command_shows_and_grants_like_cody_exec() -> None:
    assert command_display("/bin/bash -lc 'git status --short'") == "git status --short"
    assert exec_grant_key("/bin/bash -lc 'git status'") == (
        "exec",
        *normalize_command("git status"),
    )
    assert exec_grant_key("git status") == exec_grant_key(["bash", "-c", "git status"])


def test_paths_grant_key_resolves_paths(tmp_path: Path) -> None:
    assert paths_grant_key(["a.txt", "./a.txt"], tmp_path) == ("paths", str(tmp_path / "a.txt"))


def test_unified_diff_hunks_apply_to_the_old_text() -> None:
    old = "first\nold line\nlast\n"
    diff = "@@ -1,3 +1,3 @@\n first\n-old line\n+new line\n last\n"
    assert apply_unified_diff(old, diff) == "first\nnew line\nlast\n"
    assert apply_unified_diff("something else\n", diff) is None


# -- killing a process tree -------------------------------------------------------------------


def test_kill_tree_reaches_children_that_left_the_group(tmp_path: Path) -> None:
    """A child that called setsid is not in the CLI's group; it must die too."""
    script = (
        "import os, subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    pid_file = tmp_path / "pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        asyncio.run(asyncio.sleep(0.02))
    grandchild = int(pid_file.read_text())
    asyncio.run(kill_tree(proc.pid, lambda: proc.poll() is not None, grace_s=1.0))
    proc.wait(timeout=5)
    for _ in range(100):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        state = (
            Path(f"/proc/{grandchild}/stat").read_text()
            if Path(f"/proc/{grandchild}").exists()
            else ""
        )
        if ") Z" in state:
            break
        asyncio.run(asyncio.sleep(0.02))
    else:
        raise AssertionError("the grandchild survived")


def test_cody_sandbox_is_kept_where_the_cli_would_not_keep_it(tmp_path: Path) -> None:
    from cody_daemon.backends.mapping import sandbox_violation

    read_only = settings("on-request", "read-only")
    workspace = settings("on-request", "workspace-write")
    assert (
        sandbox_violation("codex", read_only, tmp_path, cody_tool="exec", known_safe=True) is None
    )
    refused = sandbox_violation("codex", read_only, tmp_path, cody_tool="exec", known_safe=False)
    assert refused is not None and "outside any sandbox" in refused
    assert (
        sandbox_violation("claude", workspace, tmp_path, cody_tool="exec", known_safe=False) is None
    )
    inside = (str(tmp_path / "a.txt"),)
    outside = ("/etc/passwd",)
    assert (
        sandbox_violation(
            "claude", workspace, tmp_path, cody_tool="applyPatch", known_safe=False, paths=inside
        )
        is None
    )
    assert "outside the writable roots" in str(
        sandbox_violation(
            "claude", workspace, tmp_path, cody_tool="applyPatch", known_safe=False, paths=outside
        )
    )
    assert "read-only" in str(
        sandbox_violation(
            "codex", read_only, tmp_path, cody_tool="applyPatch", known_safe=False, paths=inside
        )
    )


def test_codex_is_billed_per_token_only_with_an_api_key(tmp_path: Path) -> None:
    from cody_daemon.backends.codex_config import codex_bills_per_token

    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "cx")}
    assert not codex_bills_per_token(env)
    assert codex_bills_per_token({**env, "OPENAI_API_KEY": "k"})
    (tmp_path / "cx").mkdir()
    (tmp_path / "cx" / "auth.json").write_text('{"tokens": {"access_token": "t"}}')
    assert not codex_bills_per_token({**env, "OPENAI_API_KEY": "k"}), "a ChatGPT plan login"
