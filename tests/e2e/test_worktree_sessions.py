"""Worktree sessions through the real daemon: `_meta.cody.worktree` runs a session in a new
git worktree of its project on a branch of its own; two of them edit the same file at the same
time without touching each other or the main checkout; closing one keeps its worktree when it
changed something and removes it (and its branch) otherwise."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_sandbox_escapes import require_bwrap
from tests.support.daemon import Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs
from tests.support.routed_model import Routes

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None and os.environ.get("CI") != "true", reason="git is not installed"
)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "shared.txt").write_text("base\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")


async def new_worktree_session(daemon: Daemon, name: str | bool = True) -> dict:
    result = await daemon.request(
        "session/new",
        {
            "cwd": str(daemon.env.workspace),
            "mcpServers": [],
            "_meta": {"cody": {"worktree": name, "approvalPolicy": "never"}},
        },
    )
    return result


async def test_two_worktree_sessions_edit_the_same_file_at_once_each_on_its_own_branch(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    workspace = daemon.env.workspace
    make_repo(workspace)
    routes = Routes(model)
    for marker, content in (("EDIT-ONE", "one\n"), ("EDIT-TWO", "two\n")):
        routes.add(
            marker,
            tool_call("writeFile", {"filePath": "shared.txt", "content": content}, call_id="w"),
        )
        routes.add(marker, text("edited"))
    routes.install()
    first = await new_worktree_session(daemon)
    second = await new_worktree_session(daemon, "second")
    trees = [Path(r["_meta"]["cody"]["worktree"]["path"]) for r in (first, second)]
    branches = [r["_meta"]["cody"]["worktree"]["branch"] for r in (first, second)]
    assert branches[1] == "cody/second" and branches[0].startswith("cody/")
    assert all(str(daemon.env.cody_home) in str(tree) for tree in trees), "under the data dir"

    await asyncio.gather(
        daemon.prompt(first["sessionId"], "change it EDIT-ONE"),
        daemon.prompt(second["sessionId"], "change it EDIT-TWO"),
    )

    assert (trees[0] / "shared.txt").read_text() == "one\n"
    assert (trees[1] / "shared.txt").read_text() == "two\n"
    assert (workspace / "shared.txt").read_text() == "base\n", "the main checkout is untouched"
    for tree, branch, content in zip(trees, branches, ("one", "two"), strict=True):
        assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch
        assert f"+{content}" in git(tree, "diff")
    described = await daemon.request("_cody/session/worktree", {"sessionId": first["sessionId"]})
    assert described["worktree"]["changes"] == [{"path": "shared.txt", "change": "modified"}]

    closed = await daemon.request("session/close", {"sessionId": first["sessionId"]})
    kept = closed["_meta"]["cody"]["worktree"]
    assert kept["kept"] is True and kept["branch"] == branches[0]
    assert (trees[0] / "shared.txt").read_text() == "one\n", "a changed worktree is kept"
    assert branches[0] in git(workspace, "branch", "--list", "cody/*")


async def test_closing_a_worktree_session_without_changes_removes_its_worktree_and_branch(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    workspace = daemon.env.workspace
    make_repo(workspace)
    opened = await daemon.request(
        "session/new",
        {
            "cwd": str(workspace / "src"),
            "mcpServers": [],
            "_meta": {"cody": {"worktree": "idle"}},
        },
    )
    tree = Path(opened["_meta"]["cody"]["worktree"]["path"])
    assert (tree / "src" / "app.py").is_file()
    listed_before = git(workspace, "worktree", "list")
    assert str(tree) in listed_before

    closed = await daemon.request("session/close", {"sessionId": opened["sessionId"]})

    assert closed["_meta"]["cody"]["worktree"]["kept"] is False
    assert not tree.exists()
    assert "cody/idle" not in git(workspace, "branch", "--list")
    assert str(tree) not in git(workspace, "worktree", "list")


async def test_a_worktree_outside_a_git_repository_is_refused_clearly(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    error = await expect_error(new_worktree_session(daemon), -32602)
    assert "not inside a git work tree" in error.message
    assert not (daemon.env.cody_home / "sessions").exists() or not list(
        (daemon.env.cody_home / "sessions").rglob("*.jsonl")
    )


async def test_sandboxed_commands_write_the_worktree_read_its_history_and_leave_the_main_git_alone(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    require_bwrap(daemon.env)
    workspace = daemon.env.workspace
    make_repo(workspace)
    main_git = workspace / ".git"
    commands = {
        "c1": "echo made > built.txt && cat built.txt",
        "c2": "git log --oneline -1 && git status --short",
        "c3": f"touch {main_git}/hooks/post-checkout",
        "c4": f"echo evil > {main_git}/config",
        "c5": "echo evil > .git",
    }
    for call_id, command in commands.items():
        model.enqueue(tool_call("exec", {"command": command}, call_id=call_id))
    model.enqueue(text("tried"))
    opened = await daemon.request(
        "session/new",
        {
            "cwd": str(workspace),
            "mcpServers": [],
            "_meta": {"cody": {"worktree": True, "approvalPolicy": "never"}},
        },
    )
    tree = Path(opened["_meta"]["cody"]["worktree"]["path"])
    before = {str(p.relative_to(main_git)): p.stat().st_mtime_ns for p in main_git.rglob("*")}

    await daemon.prompt(opened["sessionId"], "work in the worktree")

    outputs = tool_outputs(model.requests[-1])
    assert (tree / "built.txt").read_text() == "made\n", "the worktree is writable"
    assert "base" in outputs["c2"] and "built.txt" in outputs["c2"], outputs["c2"]
    assert not (main_git / "hooks" / "post-checkout").exists()
    assert "evil" not in (main_git / "config").read_text()
    assert (tree / ".git").read_text().startswith("gitdir:"), "its gitfile is read-only too"
    after = {str(p.relative_to(main_git)): p.stat().st_mtime_ns for p in main_git.rglob("*")}
    assert after == before, "nothing in the main repository's .git was written"


async def test_a_repository_whose_config_names_a_filter_gets_no_worktree_and_runs_nothing(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    workspace = daemon.env.workspace
    make_repo(workspace)
    pwned = daemon.env.root / "pwned"
    (workspace / ".gitattributes").write_text("*.txt filter=evil\n")
    git(workspace, "add", ".gitattributes")
    git(workspace, "commit", "-q", "-m", "attributes")
    git(workspace, "config", "filter.evil.smudge", f"touch {pwned}; cat")
    git(workspace, "config", "filter.evil.process", f"touch {pwned}")
    hooks = workspace / ".git" / "hooks" / "post-checkout"
    hooks.write_text(f"#!/bin/sh\ntouch {pwned}\n")
    hooks.chmod(0o755)

    error = await expect_error(new_worktree_session(daemon), -32602)

    assert "filter.evil" in error.message and "without a worktree" in error.message
    assert not pwned.exists()
    assert "cody/" not in git(workspace, "branch", "--list")


async def test_a_hooked_repository_gets_a_worktree_without_running_its_hooks(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    workspace = daemon.env.workspace
    make_repo(workspace)
    pwned = daemon.env.root / "pwned"
    for hook in ("post-checkout", "reference-transaction", "post-index-change"):
        path = workspace / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\necho {hook} >> {pwned}\n")
        path.chmod(0o755)
    fsmonitor = daemon.env.root / "fsmonitor.sh"
    fsmonitor.write_text(f"#!/bin/sh\necho fsmonitor >> {pwned}\n")
    fsmonitor.chmod(0o755)
    git(workspace, "config", "core.fsmonitor", str(fsmonitor))

    opened = await new_worktree_session(daemon)
    await daemon.request("_cody/session/worktree", {"sessionId": opened["sessionId"]})
    closed = await daemon.request("session/close", {"sessionId": opened["sessionId"]})

    assert closed["_meta"]["cody"]["worktree"]["kept"] is False
    assert not pwned.exists(), pwned.read_text() if pwned.exists() else ""


async def test_a_session_file_that_claims_the_workspace_as_its_worktree_removes_nothing(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    workspace = daemon.env.workspace
    make_repo(workspace)
    model.enqueue(text("hello"))
    session = await daemon.new_session()
    await daemon.prompt(session, "hi")
    await daemon.request("session/close", {"sessionId": session})
    [path] = (daemon.env.cody_home / "sessions").rglob(f"*{session}.jsonl")
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    base = git(workspace, "rev-parse", "HEAD").strip()
    header["payload"]["worktree"] = {
        "path": str(workspace),
        "branch": "cody/main",
        "base": base,
        "projectRoot": str(workspace),
        "subdir": "",
    }
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")

    await daemon.request(
        "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    described = await daemon.request("_cody/session/worktree", {"sessionId": session})
    closed = await daemon.request("session/close", {"sessionId": session})

    assert described == {} or described.get("worktree") is None
    assert closed == {}
    assert (workspace / "shared.txt").read_text() == "base\n"
    assert git(workspace, "worktree", "list").count("\n") == 1


async def test_a_task_with_worktree_isolation_edits_its_own_worktree_and_says_where(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    workspace = daemon.env.workspace
    make_repo(workspace)
    model.enqueue(
        tool_call(
            "task",
            {
                "description": "edit apart",
                "prompt": "ISOLATED change shared.txt",
                "isolation": "worktree",
            },
            call_id="p1",
        )
    )
    model.enqueue(
        tool_call("writeFile", {"filePath": "shared.txt", "content": "child\n"}, call_id="c1")
    )
    model.enqueue(text("changed it"))
    model.enqueue(text("the child changed it in its worktree"))
    parent = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(parent, "delegate an edit")

    answer = tool_outputs(model.requests[-1])["p1"]
    assert "its own git worktree" in answer and "cody/" in answer
    final = [u for u in daemon.tool_updates(parent, "p1") if u.get("status")][-1]
    tree = Path(final["rawOutput"]["worktree"]["path"])
    assert (tree / "shared.txt").read_text() == "child\n"
    assert (workspace / "shared.txt").read_text() == "base\n", "the parent's checkout is untouched"
    await daemon.request("session/close", {"sessionId": parent})
    assert (tree / "shared.txt").read_text() == "child\n", (
        "closed with its parent, kept: it changed"
    )
