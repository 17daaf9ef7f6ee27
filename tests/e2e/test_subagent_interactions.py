"""Subagents next to the other features of a session, through the real daemon: the parent's
checkpoint covers what its child changed (so undoing the parent's turn undoes the child's
edits), a child's background processes end with it, a hook decides a child's calls as any
session's, and a child of a worktree session works in that worktree."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.providers.pricing import cost_usd, price_for
from cody_protocol.prompt import TokenUsage

from tests.e2e.test_cli import run_client
from tests.e2e.test_hooks import NO_RM, group, hooks_file, script
from tests.e2e.test_processes import all_gone, pids_with
from tests.support.checkpoints import checkpoints, rewind, turn_checkpoint
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, Usage, text, tool_call
from tests.support.model_inputs import tool_outputs


def task_call(call_id: str, prompt: str, **extra: Any) -> Any:
    return tool_call(
        "task", {"description": "delegated", "prompt": prompt, **extra}, call_id=call_id
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


async def test_undoing_the_parents_turn_undoes_what_its_child_changed(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    (ws / "kept.txt").write_text("before\n")
    model.enqueue(task_call("p1", "Change the files. CHILD-EDITS"))
    model.enqueue(
        tool_call("writeFile", {"filePath": "kept.txt", "content": "child\n"}, call_id="c1")
    )
    model.enqueue(tool_call("exec", {"command": "echo made > made.txt"}, call_id="c2"))
    model.enqueue(text("changed both"))
    model.enqueue(text("my child changed both"))
    parent = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")

    await daemon.prompt(parent, "delegate the edits")

    assert (ws / "kept.txt").read_text() == "child\n"
    assert (ws / "made.txt").read_text() == "made\n"
    checkpoint = turn_checkpoint(await checkpoints(daemon, parent), 1)
    assert {(f["path"], f["change"]) for f in checkpoint["files"]} == {
        ("kept.txt", "modified"),
        ("made.txt", "added"),
    }, "the parent's turn changed what its child changed"
    undone = await rewind(daemon, parent, checkpoint["checkpointId"], "files")
    assert undone["conflicts"] == [], undone
    assert (ws / "kept.txt").read_text() == "before\n", "the child's edit is undone"
    assert not (ws / "made.txt").exists(), "the file the child's command made is removed"


async def test_a_process_a_child_left_running_stops_when_its_task_ends_and_the_parent_is_told(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    marker = f"sleep {random.randint(100_000, 999_999)}"
    model.enqueue(task_call("p1", "Start a watcher. CHILD-PROC"))
    model.enqueue(tool_call("exec", {"command": marker, "background": True}, call_id="c1"))
    model.enqueue(tool_call("readOutput", {"processId": 1, "waitMs": 50}, call_id="c2"))
    model.enqueue(text("started it"))
    model.enqueue(text("the child started it"))
    parent = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")
    turn = asyncio.ensure_future(daemon.prompt(parent, "delegate a watcher"))
    await daemon.wait_for(lambda: bool(pids_with(marker)), timeout=30)
    running = pids_with(marker)

    await turn

    assert await all_gone(running), "the child's process outlived its task, seen by no /ps"
    answer = tool_outputs(model.requests[-1])["p1"]
    assert "started it" in answer
    assert f"stopped the process it left running when its turn ended: `{marker}`" in answer
    child = next(
        s["sessionId"]
        for s in (await daemon.request("session/list", {}))["sessions"]
        if s.get("_meta", {}).get("cody", {}).get("parentSessionId") == parent
    )
    listed = await daemon.request("_cody/session/processes", {"sessionId": child})
    assert [p["running"] for p in listed["processes"]] == [False]


async def test_a_hook_blocks_a_childs_call_as_any_sessions(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "never"')
    victim = cody_env.workspace / "keep.txt"
    victim.write_text("precious")
    no_rm = script(cody_env, "no_rm", NO_RM)
    hooks_file(cody_env.root / "codex-home" / "hooks.json", {"PreToolUse": group(no_rm, "Bash")})
    model.enqueue(task_call("p1", "Clean up. CHILD-HOOK"))
    model.enqueue(tool_call("exec", {"command": ["rm", "keep.txt"]}, call_id="c1"))
    model.enqueue(text("could not remove it"))
    model.enqueue(text("ok"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        parent = await daemon.new_session()
        await daemon.prompt(parent, "delegate a cleanup")
    finally:
        await daemon.close()
    assert victim.exists(), "the hook's exit 2 blocked the child's rm"
    assert "rm is not allowed here" in tool_outputs(model.requests[2])["c1"]


@pytest.mark.skipif(shutil.which("git") is None and os.environ.get("CI") != "true", reason="git")
async def test_a_child_of_a_worktree_session_works_in_that_worktree(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    git(ws, "init", "-q", "-b", "main")
    (ws / "shared.txt").write_text("base\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "base")
    model.enqueue(task_call("p1", "Edit it. CHILD-TREE"))
    model.enqueue(
        tool_call("writeFile", {"filePath": "shared.txt", "content": "child\n"}, call_id="c1")
    )
    model.enqueue(text("edited"))
    model.enqueue(text("ok"))
    new = await daemon.request(
        "session/new",
        {
            "cwd": str(ws),
            "mcpServers": [],
            "_meta": {"cody": {"worktree": "tree", "approvalPolicy": "never"}},
        },
    )
    parent = new["sessionId"]
    where = await daemon.request("_cody/session/worktree", {"sessionId": parent})

    await daemon.prompt(parent, "delegate an edit")

    assert (ws / "shared.txt").read_text() == "base\n", "the main checkout is untouched"
    tree = Path(where["worktree"]["path"])
    assert (tree / "shared.txt").read_text() == "child\n", "the child edited the worktree"


async def test_a_childs_allow_for_this_session_never_applies_to_its_parent(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(task_call("p1", "Record it. CHILD-GRANT"))
    model.enqueue(tool_call("exec", {"command": "echo child > child.txt"}, call_id="c1"))
    model.enqueue(tool_call("exec", {"command": "echo child > child.txt"}, call_id="c2"))
    model.enqueue(text("recorded twice"))
    model.enqueue(tool_call("exec", {"command": "echo child > child.txt"}, call_id="p2"))
    model.enqueue(text("the parent ran it too"))
    parent = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_session", "reject_once")

    await daemon.prompt(parent, "delegate, then do it yourself")

    asked = [(r["sessionId"], r["toolCall"]["toolCallId"]) for r in daemon.permission_requests]
    child = asked[0][0]
    assert child != parent
    assert asked == [(child, "c1"), (parent, "p2")], "the child's grant covered only the child"


async def test_an_acp_client_that_knows_no_children_sees_the_childs_progress_in_the_task_call(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    (daemon.env.workspace / "notes.txt").write_text("hello\n")
    model.enqueue(task_call("p1", "Read the notes. CHILD-PROGRESS", agent="explore"))
    model.enqueue(tool_call("readFile", {"filePath": "notes.txt"}, call_id="c1"))
    model.enqueue(text("they say hello"))
    model.enqueue(text("ok"))
    parent = await daemon.new_session()

    await daemon.prompt(parent, "delegate a read")

    updates = daemon.tool_updates(parent, "p1")
    assert updates[0]["title"] == "explore: delegated", updates[0]
    shown = [
        block["content"]["text"]
        for update in updates
        if update.get("status") != "completed"
        for block in update.get("content") or []
        if block.get("type") == "content"
    ]
    assert any(text.startswith("▸ ") and "notes.txt" in text for text in shown), shown
    assert updates[-1]["status"] == "completed"


@pytest.mark.skipif(shutil.which("git") is None and os.environ.get("CI") != "true", reason="git")
async def test_a_profile_with_worktree_isolation_runs_its_child_in_a_worktree(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    git(ws, "init", "-q", "-b", "main")
    (ws / "shared.txt").write_text("base\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "base")
    agents = daemon.env.cody_home / "agents"
    agents.mkdir(parents=True)
    (agents / "apart.md").write_text(
        "---\nname: apart\ndescription: Works apart.\nisolation: worktree\n---\nWork apart.\n"
    )
    model.enqueue(task_call("p1", "Edit it. CHILD-APART", agent="apart"))
    model.enqueue(
        tool_call("writeFile", {"filePath": "shared.txt", "content": "apart\n"}, call_id="c1")
    )
    model.enqueue(text("edited"))
    model.enqueue(text("ok"))
    parent = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(parent, "delegate an edit")

    final = [u for u in daemon.tool_updates(parent, "p1") if u.get("status")][-1]
    tree = Path(final["rawOutput"]["worktree"]["path"])
    assert (tree / "shared.txt").read_text() == "apart\n"
    assert (ws / "shared.txt").read_text() == "base\n", "the parent's checkout is untouched"
    assert final["rawOutput"]["worktree"]["branch"] in git(ws, "branch", "--list")


async def test_sessions_list_says_which_session_is_a_subagent_and_whose(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`sessions list` showed a child session as any other, titled by its task's prompt; it
    names its parent now (from `session/list`'s `_meta.cody.parentSessionId`), as a fork does."""
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(task_call("p1", "Look around. CHILD-LISTED"))
    model.enqueue(text("looked"))
    model.enqueue(text("ok"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        parent = await daemon.new_session()
        await daemon.prompt(parent, "delegate a look")
    finally:
        await daemon.close()

    code, out, err = await run_client(cody_env, "sessions", "list")

    assert code == 0, err
    [child_line] = [line for line in out.splitlines() if "CHILD-LISTED" in line]
    assert f"(subagent of {parent[:8]})" in child_line, out
    [parent_line] = [line for line in out.splitlines() if "delegate a look" in line]
    assert "subagent" not in parent_line


async def test_a_childs_cost_is_added_to_its_parents_total_and_shown_apart(
    cody_env: CodyEnv,
) -> None:
    async with MockResponsesServer() as api:
        cody_env.env["OPENAI_API_KEY"] = "sk-test-not-secret"
        cody_env.env["OPENAI_BASE_URL"] = api.base_url
        api.enqueue(task_call("p1", "Answer. CHILD-COST"), usage=Usage(input=1_000, output=100))
        api.enqueue(text("child answer"), usage=Usage(input=20_000, output=2_000))
        api.enqueue(text("parent answer"), usage=Usage(input=3_000, output=300))
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            parent = await daemon.new_session(provider="openai", model="gpt-5.5")
            result = await daemon.prompt(parent, "delegate")
        finally:
            await daemon.close()
    price = price_for("openai", "gpt-5.5")
    assert price is not None
    child_cost = cost_usd(price, TokenUsage(input_tokens=20_000, output_tokens=2_000))
    own_cost = cost_usd(price, TokenUsage(input_tokens=4_000, output_tokens=400))
    cody = result["_meta"]["cody"]
    assert cody["subagents"]["cost"] == pytest.approx(child_cost), cody["subagents"]
    assert cody["cost"]["total"] == pytest.approx(child_cost + own_cost), cody["cost"]
