"""Approval policy `untrusted` in a hostile repository, through the daemon.

`git status` / `git diff` / `git show` are known-safe only while the repository cannot make
git run a program (policy/git_repo.py). Each hostile setting below is first shown to really
run a program when git is called directly; through the daemon the same command must ask,
and after the rejection the marker file must not exist.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

DENIED = json.dumps({"error": "User denied approval"})


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def exec_call(command: str | list[str], call_id: str) -> object:
    return tool_call("exec", {"command": command}, call_id=call_id)


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "a.txt").write_text("one\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "one")
    (path / "a.txt").write_text("two\n")  # a change, so diff and status compare contents
    return path


def _really_runs(repo: Path, marker: str, *command: str) -> None:
    """The hostile setting is real: plain git, run directly, creates the marker."""
    subprocess.run(["git", *command], cwd=repo, capture_output=True, check=False)
    assert (repo / marker).exists(), f"git {' '.join(command)} did not run the program"
    (repo / marker).unlink()


async def test_git_in_a_hostile_repository_asks_and_in_a_clean_one_does_not(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    _repo(ws / "clean")
    fsmonitor = _repo(ws / "fsmonitor")
    git(fsmonitor, "config", "core.fsmonitor", "touch PWNED-fsmonitor; false")
    _really_runs(fsmonitor, "PWNED-fsmonitor", "status")
    external = _repo(ws / "external")
    git(external, "config", "diff.external", "touch PWNED-external; true")
    _really_runs(external, "PWNED-external", "diff")
    textconv = _repo(ws / "textconv")
    (textconv / ".gitattributes").write_text("*.txt diff=evil\n")
    git(textconv, "config", "diff.evil.textconv", "touch PWNED-textconv; cat")
    _really_runs(textconv, "PWNED-textconv", "show", "HEAD")
    bare = ws / "clean" / "vendor" / "evil"
    git(ws, "init", "-q", "--bare", str(bare))
    git(bare, "config", "core.fsmonitor", "touch PWNED-bare; false")

    model.enqueue(
        tool_call("exec", {"command": "git status --short", "cwd": "clean"}, call_id="ok1"),
        tool_call("exec", {"command": ["git", "diff"], "cwd": "clean"}, call_id="ok2"),
        exec_call("git -C fsmonitor status", "bad1"),
        exec_call("git -C external diff", "bad2"),
        exec_call("git -C textconv show HEAD", "bad3"),
        exec_call("git -C clean/vendor/evil log", "bad4"),
    )
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer_fn = lambda params: "reject_once"

    await daemon.prompt(sid, "look at the repositories")

    asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
    assert asked == ["bad1", "bad2", "bad3", "bad4"]
    outputs = tool_outputs(model.requests[-1])
    assert "M a.txt" in outputs["ok1"]
    assert "+two" in outputs["ok2"]
    for call_id in ("bad1", "bad2", "bad3", "bad4"):
        assert outputs[call_id] == DENIED
    pwned = sorted(p.name for p in ws.rglob("PWNED*"))
    assert pwned == []


async def test_nothing_is_known_safe_while_path_has_a_relative_directory(
    cody_env, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    cody_env.env["PATH"] = f"bin{os.pathsep}{cody_env.env['PATH']}"
    evil = cody_env.workspace / "bin" / "ls"
    evil.parent.mkdir()
    evil.write_text(f"#!/bin/sh\ntouch {cody_env.workspace}/PWNED-ls\n")
    evil.chmod(0o755)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(exec_call("ls", "c1"))
        model.enqueue(text("done"))
        sid = await daemon.new_session(approvalPolicy="untrusted")
        daemon.answer("reject_once")

        await daemon.prompt(sid, "list")

        assert [r["toolCall"]["toolCallId"] for r in daemon.permission_requests] == ["c1"]
        assert not (cody_env.workspace / "PWNED-ls").exists()
    finally:
        await daemon.close()


async def test_file_search_never_runs_a_hostile_repository_s_fsmonitor(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    git(ws, "init", "-q")
    (ws / "findme.py").write_text("")
    git(ws, "add", "findme.py")
    git(ws, "config", "core.fsmonitor", "touch PWNED-ls-files; false")
    _really_runs(ws, "PWNED-ls-files", "ls-files")
    model.enqueue(tool_call("fileSearch", {"query": "findme"}, call_id="f1"))
    model.enqueue(text("found"))
    sid = await daemon.new_session(approvalPolicy="untrusted")

    await daemon.prompt(sid, "find it")

    assert "findme.py" in tool_outputs(model.requests[-1])["f1"]
    assert daemon.permission_requests == [], "a read-only tool"
    assert not (ws / "PWNED-ls-files").exists()
