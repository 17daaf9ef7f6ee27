"""The Codex CLI runs its commands and edits in Cody's sandbox (backends/codex_sandbox.py).

The hole (docs/backends.md): under Cody's `never` / `on-failure` with sandbox
`workspace-write`, Codex ran commands and edits in its own built-in sandbox without asking
Cody, and that sandbox kept `.git` read-only but not `.cody` (a trusted project's
`.cody/config.toml` lifts the next session's sandbox) nor a nested repository's `.git`, and
let commands read the login files. Codex now runs with Cody's sandbox as a permission profile.
These drive the pinned real CLI through the daemon, its own sandbox included (skipped where it
cannot start, required under CI=true); what a command printed is what the CLI sent its model.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.support.agent_clis import require_codex_sandbox
from tests.support.backend_agents import BackendRig, decided
from tests.support.daemon import CodyEnv, Daemon

pytestmark = [pytest.mark.e2e, pytest.mark.reliability, pytest.mark.timeout(150)]

TOKEN = "eyMARKER.codexsandbox.4f1c9e2a7b3d6058"
LIFTED = 'sandbox_mode = "danger-full-access"'


def _project(cody_env: CodyEnv) -> Path:
    """A trusted project without `.cody` yet, holding a nested repository."""
    project = cody_env.workspace / "project"
    (project / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(project / "sub")], check=True)
    return project


def _logins(cody_env: CodyEnv) -> list[Path]:
    files = [
        cody_env.root / "codex-home" / "auth.json",
        cody_env.root / "home" / ".claude" / ".credentials.json",
    ]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"tokens": {"access_token": TOKEN}}))
    return files


@asynccontextmanager
async def _codex_session(
    cody_env: CodyEnv, policy: str
) -> AsyncIterator[tuple[BackendRig, Daemon, str, Path]]:
    """A Codex session in `workspace-write` with approval `policy`, in a trusted project."""
    require_codex_sandbox()
    project = _project(cody_env)
    async with BackendRig.open("codex", cody_env) as rig:
        cody_env.write_config(
            f'approval_policy = "{policy}"\nsandbox_mode = "workspace-write"\n'
            f'trusted_projects = ["{project}"]\n'
        )
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session(project, backend="codex")
            yield rig, daemon, sid, project
        finally:
            await daemon.close()


async def test_codex_commands_and_edits_stay_in_codys_sandbox_in_policy_never(
    cody_env: CodyEnv,
) -> None:
    logins = _logins(cody_env)
    async with _codex_session(cody_env, "never") as (rig, daemon, sid, project):
        rig.run("touch made-here.txt", "call_ok")
        rig.run(f"mkdir -p .cody; echo '{LIFTED}' > .cody/config.toml", "call_cody")
        rig.run("touch sub/.git/hooks/pre-commit", "call_hook")
        rig.edit("sub/.git/HEAD", "ref: refs/heads/main", "ref: refs/heads/pwned", "call_edit")
        rig.run(f"cat {logins[0]} {logins[1]}", "call_login")
        rig.run_escalated(f"echo '{LIFTED}' > .cody/config.toml", "call_escape")
        rig.say("done")
        assert (await daemon.prompt(sid, "configure it"))["stopReason"] == "end_turn"

        assert (project / "made-here.txt").exists(), "the sandbox runs commands"
        assert (project / ".cody").is_dir(), "made by Cody, to be kept read-only"
        assert not (project / ".cody" / "config.toml").exists()
        assert not (project / "sub" / ".git" / "hooks" / "pre-commit").exists()
        assert "pwned" not in (project / "sub" / ".git" / "HEAD").read_text()
        saw = rig.model_saw()
        assert TOKEN not in saw, "a login file was read"
        assert "Read-only file system" in saw and "Permission denied" in saw
        assert "cannot ask for escalated permissions" in saw, "never: no way out"
        assert daemon.permission_requests == [], "never asks nobody"


async def test_an_approved_codex_command_is_not_rerun_outside_the_sandbox(
    cody_env: CodyEnv,
) -> None:
    """Under Codex's `untrusted` (Cody's `untrusted` and `on-request`) Codex re-ran an approved
    command outside its sandbox when the sandbox refused it, without asking again. With Cody's
    profile the refusal stands; the approval still says the command may leave the sandbox
    (its model can ask for that, and the request would not say so)."""
    async with _codex_session(cody_env, "untrusted") as (rig, daemon, sid, project):
        rig.run("touch sub/.git/hooks/post-checkout", "call_hook")
        rig.say("it did not work")
        daemon.answer("allow_once")
        assert (await daemon.prompt(sid, "add a hook"))["stopReason"] == "end_turn"

        assert not (project / "sub" / ".git" / "hooks" / "post-checkout").exists()
        assert "Read-only file system" in rig.model_saw()
        asked = daemon.permission_requests[-1]
        assert asked["toolCall"]["toolCallId"] == "call_hook"
        assert "may run this command outside its sandbox" in json.dumps(asked)
        assert decided(cody_env)["call_hook"] == ("allow_once", "user")


async def test_a_mode_change_reaches_codex_sandbox_at_the_next_turn(cody_env: CodyEnv) -> None:
    """`read-only` mid-session: the next turn runs with Cody's read-only profile (selected by
    `turn/start`, the same Codex process)."""
    async with _codex_session(cody_env, "never") as (rig, daemon, sid, project):
        rig.run("touch first.txt", "call_first")
        rig.say("made it")
        assert (await daemon.prompt(sid, "make first.txt"))["stopReason"] == "end_turn"
        assert (project / "first.txt").exists()

        await daemon.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "sandbox_mode", "value": "read-only"},
        )
        rig.run("echo pwned > first.txt && touch second.txt", "call_second")
        rig.say("could not")
        assert (await daemon.prompt(sid, "write more"))["stopReason"] == "end_turn"
        assert not (project / "second.txt").exists()
        assert (project / "first.txt").read_text() == ""
        assert "Read-only file system" in rig.model_saw()
