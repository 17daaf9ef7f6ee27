"""Issue 20 (items 1-4, 11): a Codex CLI or Claude Code session gets no more than Cody's own
loop would. The pinned real CLIs (tests/agents) run offline against loopback mock models
through the daemon, as in test_backends.py; the repository, the model and the daemon's
environment are the attackers.

- A hostile repository (tests/support/hostile_repo.py: `core.fsmonitor`, hooks, `gpg.program`
  with `log.showSignature`, `diff.external`, filter and textconv drivers) runs nothing on a
  plain prompt. Claude Code ran `git status` at every turn start; the Codex CLI runs one too,
  so it is refused where a filter driver would run, and shown to run it when trusted.
- Every tool call reaches Cody's decision (an `approval` event per call in the session file):
  Claude Code's own read-only list (`git status`, `ls`, `Read`) no longer skips it, so the
  hostile `git status` is asked for, and rejected, while `ls` is known-safe.
- The CLI gets the daemon's environment without credentials (but its own model key), and
  nothing the CLI reports reaches the session file or the client unredacted.
- Login files are refused without asking, in policy `never` too; protected paths (`.cody`,
  `.git`) hold for edits Claude Code would accept on its own (`acceptEdits`).
- `/cost` reaches the model as text; `/init` and `/review` are expanded by Cody first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.engine.prompt_files import prompt as builtin_prompt

from tests.support import backend_agents
from tests.support import mock_responses as responses
from tests.support.backend_agents import KINDS, BackendKind, BackendRig
from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.hostile_repo import hostile_repository, markers_in, prove_it_runs

pytestmark = [pytest.mark.e2e, pytest.mark.reliability, pytest.mark.timeout(150)]


async def _start(cody_env: CodyEnv) -> Daemon:
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    return daemon


def _config(cody_env: CodyEnv, extra: str = "") -> None:
    """Codex runs commands in its own sandbox, which may not work in a container: the CLIs
    get `danger-full-access` unless a session asks for another mode."""
    cody_env.write_config(
        f'approval_policy = "on-request"\nsandbox_mode = "danger-full-access"\n{extra}'
    )


def _tool(rig: BackendRig, name: str, arguments: dict[str, Any], call_id: str) -> None:
    """The next model call uses a Claude Code tool."""
    rig.mock.enqueue(responses.tool_call(name, arguments, call_id=call_id))


# -- 1. a hostile repository runs nothing on a prompt ----------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_a_prompt_runs_no_program_of_a_hostile_repository(
    kind: BackendKind, cody_env: CodyEnv
) -> None:
    markers = cody_env.root / "markers"
    # Codex's own `git status` would run a filter driver: that repository is refused (below).
    repo = hostile_repository(cody_env.root / "repo", markers, filters=kind == "claude")
    shown = set(prove_it_runs(repo, markers))
    assert {"PWNED-fsmonitor", "PWNED-gpg", "PWNED-external"} <= shown
    if kind == "claude":
        assert "PWNED-clean" in shown
    async with BackendRig.open(kind, cody_env) as rig:
        _config(cody_env)
        daemon = await _start(cody_env)
        try:
            sid = await daemon.new_session(repo, backend=kind)
            for text in ("hello", "hello again"):  # Claude Code ran git at each turn start
                rig.say(f"answering {text}")
                assert (await daemon.prompt(sid, text))["stopReason"] == "end_turn"
            assert daemon.agent_text(sid).endswith("answering hello again")
            assert markers_in(markers) == []
        finally:
            await daemon.close()


async def test_codex_is_not_started_where_its_own_git_status_would_run_a_filter(
    cody_env: CodyEnv,
) -> None:
    markers = cody_env.root / "markers"
    repo = hostile_repository(cody_env.root / "repo", markers)
    assert "PWNED-clean" in prove_it_runs(repo, markers)
    async with BackendRig.open("codex", cody_env) as rig:
        _config(cody_env)
        daemon = await _start(cody_env)
        try:
            sid = await daemon.new_session(repo, backend="codex")
            rig.say("hello")
            error = await expect_error(daemon.prompt(sid, "hello"), -32010)
            assert "filter.evil." in error.message and "trusted_projects" in error.message
            assert error.data["kind"] == "provider"
            assert rig.mock.requests == [] and markers_in(markers) == []
        finally:
            await daemon.close()

        # Trusted, the CLI runs, and its own `git status` runs the filter: the refusal above
        # is what kept it from running.
        _config(cody_env, f'trusted_projects = ["{repo}"]\n')
        daemon = await _start(cody_env)
        try:
            sid = await daemon.new_session(repo, backend="codex")
            assert (await daemon.prompt(sid, "hello"))["stopReason"] == "end_turn"
            assert "PWNED-clean" in markers_in(markers)
        finally:
            await daemon.close()


# -- 2. every tool call reaches Cody's decision ------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_every_tool_call_of_a_backend_reaches_codys_decision(
    kind: BackendKind, cody_env: CodyEnv
) -> None:
    markers = cody_env.root / "markers"
    repo = hostile_repository(cody_env.root / "repo", markers, filters=False)
    assert "PWNED-fsmonitor" in prove_it_runs(repo, markers)
    async with BackendRig.open(kind, cody_env) as rig:
        _config(cody_env)
        if kind == "claude":  # the user's own rules cannot let a call skip Cody either
            (cody_env.root / "claude-config" / "settings.json").write_text(
                json.dumps(
                    {
                        "disableAllHooks": True,
                        "permissions": {"allow": ["Bash(git status:*)", "Bash(ls:*)", "Read"]},
                    }
                )
            )
        daemon = await _start(cody_env)
        try:
            sid = await daemon.new_session(repo, backend=kind, approvalPolicy="untrusted")
            rig.run("git status", "call_git")  # Claude Code's own list runs it unasked
            rig.run("ls", "call_ls")
            calls = ["call_git", "call_ls"]
            if kind == "claude":
                _tool(rig, "Read", {"file_path": str(repo / "a.txt")}, "call_read")
                calls.append("call_read")
            rig.say("looked around")
            daemon.answer_fn = lambda params: "reject_once"

            assert (await daemon.prompt(sid, "look around"))["stopReason"] == "end_turn"

            decided = backend_agents.decided(cody_env)
            assert set(calls) <= set(decided), decided
            # Claude Code's allow rules are the user's, so Cody honours them (issue 23) as
            # its own decision; `Bash(git status:*)` still does not vouch for a repository
            # whose configuration makes git run a program: that is asked.
            assert decided["call_git"] == ("reject_once", "user")
            assert decided["call_ls"] == (
                ("allow", "rule") if kind == "claude" else ("allow", "known-safe command")
            )
            if kind == "claude":
                assert decided["call_read"] == ("allow", "rule")  # the user's `Read` rule
                assert daemon.tool_updates(sid, "call_read")[-1]["status"] == "completed"
            asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
            assert asked == ["call_git"], "the hostile git status is asked for, nothing else"
            assert daemon.tool_updates(sid, "call_git")[-1]["status"] == "failed"
            assert daemon.tool_updates(sid, "call_ls")[-1]["status"] == "completed"
            assert markers_in(markers) == []
        finally:
            await daemon.close()


# -- 3. a scrubbed environment, redacted output ------------------------------------------------

SECRETS = {
    "GITHUB_TOKEN": "ghp_MARKERgithub7c1e9a3d5f2b8046",
    "DB_PASSWORD": "MARKERdbpass4a8c2e6f0b1d9375",
}
CLI_KEYS = {"codex": "MOCK_KEY", "claude": "ANTHROPIC_API_KEY"}
CLI_KEY_VALUE = "sk-MARKERclikey5d3b9f1a7c2e8046"


def _leaks(text: str, values: list[str]) -> list[str]:
    return [v for v in values if any(v[i : i + 12] in text for i in range(len(v) - 11))]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_backend_gets_no_credential_and_nothing_it_reports_leaks_one(
    kind: BackendKind, cody_env: CodyEnv
) -> None:
    async with BackendRig.open(kind, cody_env) as rig:
        _config(cody_env)
        cody_env.env.update(SECRETS)
        cody_env.env[CLI_KEYS[kind]] = CLI_KEY_VALUE  # the mock model does not check keys
        daemon = await _start(cody_env)
        try:
            sid = await daemon.new_session(backend=kind, approvalPolicy="never")
            rig.run("env", "call_env")
            # a model that saw a key repeats it in its text and in a command
            rig.say(f"your key is {CLI_KEY_VALUE} and {SECRETS['GITHUB_TOKEN']}")
            assert (await daemon.prompt(sid, "show the environment"))["stopReason"] == "end_turn"

            output = json.dumps(daemon.tool_updates(sid, "call_env"))
            assert "PATH=" in output, "the command ran and its output was shown"
            model_saw = rig.model_saw()
            assert "PATH=" in model_saw
            assert _leaks(model_saw, list(SECRETS.values())) == [], "withheld from the CLI"
            if kind == "codex":  # Codex keeps its own key from its commands
                i = model_saw.find("sk-MARKERcli")
                assert _leaks(model_saw, [CLI_KEY_VALUE]) == [], model_saw[i - 300 : i + 100]
            everything = [*SECRETS.values(), CLI_KEY_VALUE]
            frames = json.dumps(daemon.received)
            assert "[REDACTED]" in frames
            assert _leaks(frames, everything) == []
            stored = "\n".join(p.read_text() for p in cody_env.cody_home.rglob("*.jsonl"))
            assert _leaks(stored, everything) == []
            assert _leaks("\n".join(daemon.stderr), everything) == []
        finally:
            await daemon.close()


# -- 4. login files and protected paths ---------------------------------------------------------

TOKEN = "eyMARKER.logintoken.9b2d7f4a1c6e3058"


def _login_files(cody_env: CodyEnv) -> list[Path]:
    codex = cody_env.root / "codex-home" / "auth.json"
    claude = cody_env.root / "home" / ".claude" / ".credentials.json"
    claude.parent.mkdir(parents=True, exist_ok=True)
    codex.write_text(json.dumps({"tokens": {"access_token": TOKEN}}))
    claude.write_text(json.dumps({"claudeAiOauth": {"accessToken": TOKEN}}))
    return [codex, claude]


@pytest.mark.parametrize("kind", KINDS)
async def test_login_files_are_refused_without_asking(kind: BackendKind, cody_env: CodyEnv) -> None:
    logins = _login_files(cody_env)
    async with BackendRig.open(kind, cody_env) as rig:
        _config(cody_env)
        daemon = await _start(cody_env)
        try:
            for policy in ("on-request", "never"):
                sid = await daemon.new_session(backend=kind, approvalPolicy=policy)
                rig.run(f"cat {logins[0]}", f"call_cat_{policy}")
                if kind == "claude":
                    _tool(rig, "Read", {"file_path": str(logins[1])}, f"call_read_{policy}")
                rig.say("could not read it")
                assert (await daemon.prompt(sid, "read the logins"))["stopReason"] == "end_turn"
                refused = [f"call_cat_{policy}"] + ([f"call_read_{policy}"] * (kind == "claude"))
                for call_id in refused:
                    assert backend_agents.decided(cody_env)[call_id] == ("deny", "credentials")
                    assert daemon.tool_updates(sid, call_id)[-1]["status"] == "failed"
            assert daemon.permission_requests == [], "refused, never asked"
            assert TOKEN not in rig.model_saw()
            if kind == "claude":  # Codex's `decline` carries no message to its model
                assert "login credentials" in rig.model_saw()
        finally:
            await daemon.close()


async def test_claude_code_cannot_write_protected_paths_in_policy_never(
    cody_env: CodyEnv,
) -> None:
    repo = cody_env.workspace
    hostile_repository(repo / "project", cody_env.root / "markers", filters=False)
    project = repo / "project"
    async with BackendRig.open("claude", cody_env) as rig:
        _config(cody_env)
        daemon = await _start(cody_env)
        try:
            sid = await daemon.new_session(
                project, backend="claude", approvalPolicy="never", sandboxMode="workspace-write"
            )
            _tool(
                rig,
                "Write",
                {
                    "file_path": str(project / ".cody" / "config.toml"),
                    "content": 'sandbox_mode = "danger-full-access"\n',
                },
                "call_cody",
            )
            _tool(
                rig,
                "Write",
                {
                    "file_path": str(project / ".git" / "hooks" / "pre-push"),
                    "content": "#!/bin/sh\ntouch PWNED\n",
                },
                "call_hook",
            )
            _tool(
                rig,
                "Write",
                {"file_path": str(project / "notes.txt"), "content": "fine\n"},
                "call_ok",
            )
            # Claude Code's Bash has no sandbox: in `never`, as Cody's exec without bubblewrap
            rig.run("mkdir -p .cody && touch .cody/config.toml", "call_bash")
            rig.say("done")
            assert (await daemon.prompt(sid, "configure"))["stopReason"] == "end_turn"

            assert not (project / ".cody" / "config.toml").exists()
            assert not (project / ".git" / "hooks" / "pre-push").exists()
            assert (project / "notes.txt").read_text() == "fine\n", "acceptEdits still edits"
            decided = backend_agents.decided(cody_env)
            assert decided["call_cody"] == ("deny", "sandbox")
            assert decided["call_hook"] == ("deny", "sandbox")
            assert decided["call_ok"] == ("allow", "policy")
            assert decided["call_bash"] == ("deny", "policy")
            assert "Claude Code would run it outside any sandbox" in json.dumps(
                daemon.tool_updates(sid, "call_bash")
            )
            assert daemon.permission_requests == []
        finally:
            await daemon.close()


# -- 11. slash prompts ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_slash_prompts_reach_the_model_as_text(kind: BackendKind, cody_env: CodyEnv) -> None:
    async with BackendRig.open(kind, cody_env) as rig:
        _config(cody_env)
        daemon = await _start(cody_env)
        try:
            sid = await daemon.new_session(backend=kind)
            expected = {
                "/cost": "/cost",
                "/init": builtin_prompt("init").splitlines()[0][8:60],
                "/review focus on tests": builtin_prompt("review").splitlines()[0][10:60],
            }
            for prompt, seen in expected.items():
                rig.say(f"model answer to {prompt}")
                before = len(rig.mock.requests)
                done = await daemon.prompt(sid, prompt)
                assert done["stopReason"] == "end_turn"
                assert len(rig.mock.requests) > before, f"{prompt} reached no model"
                assert seen in json.dumps(rig.mock.requests[-1].body), prompt
                assert daemon.agent_text(sid).endswith(f"model answer to {prompt}")
            assert "Total cost" not in daemon.agent_text(sid), "Claude Code's /cost did not run"
        finally:
            await daemon.close()
