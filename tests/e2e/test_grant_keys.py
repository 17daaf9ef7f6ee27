"""A session grant covers exactly one command (docs/protocol.md "Grant keys"), through the daemon.

After "allow for this session" on `git status`, nothing that can run other code under that
name may pass unasked: environment prefixes (`PATH`, `GIT_CONFIG_*`, `BASH_ENV`), an `env`
prefix, a workspace program called `bash`, a shell string that expands differently from
the argv that was granted, or the same command in another directory. Each hostile call is
rejected and the file it would create must not exist.

Every call asks to run outside the sandbox (`escalate`): that is where a grant matters under
the default policy (a sandboxed command runs without a question), and where a hostile
spelling would do the most harm.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

DENIED = json.dumps({"error": "User denied approval"})


def exec_call(command: str | list[str], call_id: str, cwd: str | None = None) -> object:
    args: dict[str, Any] = {"command": command, "escalate": True, "justification": "needed"}
    if cwd is not None:
        args["cwd"] = cwd
    return tool_call("exec", args, call_id=call_id)


def _git_repo(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def _script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


async def test_a_git_status_grant_covers_no_prefix_no_wrapper_and_no_other_directory(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    _git_repo(ws)
    _script(ws / "evilbin" / "git", f"touch {ws}/X-path")
    _script(ws / "evil.sh", f"touch {ws}/X-bash-env")
    _script(ws / "bash", f"touch {ws}/X-workspace-bash")
    (ws / "other").mkdir()
    _git_repo(ws / "other")
    fsmonitor = "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="
    hostile = {
        "h1": "PATH=./evilbin:$PATH git status",
        "h2": f"{fsmonitor}'touch X-config' git status",
        "h3": f"env {fsmonitor}'touch X-env' git status",
        "h4": [
            "env",
            "GIT_CONFIG_COUNT=1",
            "GIT_CONFIG_KEY_0=core.fsmonitor",
            "GIT_CONFIG_VALUE_0=touch X-env-argv",
            "git",
            "status",
        ],
        "h5": "BASH_ENV=./evil.sh bash -c 'git status'",
        "h6": ["./bash", "-c", "git status"],
        "h7": "git\nstatus",
    }
    model.enqueue(exec_call("git status", "g1"))
    model.enqueue(text("granted"))
    model.enqueue(
        exec_call(["bash", "-lc", "git status"], "same1"),
        exec_call("git  status", "same2"),
        *[exec_call(command, call_id) for call_id, command in hostile.items()],
        exec_call("git status", "h8", cwd="other"),
    )
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    daemon.answer_fn = lambda params: (
        "allow_always" if params["toolCall"]["toolCallId"] == "g1" else "reject_once"
    )

    await daemon.prompt(sid, "check the status")
    await daemon.prompt(sid, "and again, in every spelling")

    asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
    assert asked == ["g1", *hostile, "h8"], "only the granted spellings ran unasked"
    outputs = tool_outputs(model.requests[-1])
    assert "On branch" in outputs["same1"] or "No commits yet" in outputs["same1"]
    for call_id in [*hostile, "h8"]:
        assert outputs[call_id] == DENIED, call_id
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith("X")) == []


async def test_an_argv_grant_never_covers_a_shell_string_that_expands(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    model.enqueue(exec_call(["echo", "$(touch X-subst)"], "a1"))
    model.enqueue(text("granted"))
    model.enqueue(exec_call('echo "$(touch X-subst)"', "a2"))
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    daemon.answer("allow_always", "reject_once")

    await daemon.prompt(sid, "echo it")
    await daemon.prompt(sid, "echo it through bash")

    assert [r["toolCall"]["toolCallId"] for r in daemon.permission_requests] == ["a1", "a2"]
    assert tool_outputs(model.requests[-1])["a2"] == DENIED
    assert not (ws / "X-subst").exists()
