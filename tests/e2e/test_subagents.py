"""Subagents through the real daemon: a `task` call starts a child session that runs its own
turn (its own file, history and grants), whose approvals reach the parent's client with the
child's session id, whose updates carry its parent, and whose answer is the call's result."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from typing import Any

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, Usage, text, tool_call
from tests.support.model_inputs import tool_outputs, user_texts
from tests.support.routed_model import Routes
from tests.support.warm_daemon import WarmDaemon, short_runtime_dir, warm_env

CHILD_PROMPT = "Find what notes.txt says and record it. CHILD-1"


def task_call(call_id: str, prompt: str = CHILD_PROMPT, **extra: Any) -> Any:
    return tool_call(
        "task", {"description": "read the notes", "prompt": prompt, **extra}, call_id=call_id
    )


def child_requests(model: MockResponsesServer, marker: str) -> list[Any]:
    return [r for r in model.requests if any(marker in t for t in user_texts(r))]


async def test_a_general_child_runs_its_turn_and_its_approval_reaches_the_parents_client(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    (daemon.env.workspace / "notes.txt").write_text("the answer is 42\n")
    model.enqueue(task_call("p1", agent="general"), usage=Usage(input=100, output=10))
    model.enqueue(tool_call("readFile", {"filePath": "notes.txt"}, call_id="c1"))
    model.enqueue(
        tool_call("exec", {"command": "echo 42 > recorded.txt"}, call_id="c2"),
        usage=Usage(input=300, output=30),
    )
    model.enqueue(
        text("The notes say 42; I wrote recorded.txt."), usage=Usage(input=400, output=40)
    )
    model.enqueue(text("Done: the child found 42."))
    parent = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_once")

    result = await daemon.prompt(parent, "delegate the notes")

    assert result["stopReason"] == "end_turn"
    assert (daemon.env.workspace / "recorded.txt").read_text() == "42\n"
    started = [
        u
        for u in daemon.tool_updates(parent, "p1")
        if "childSessionId" in ((u.get("_meta") or {}).get("cody") or {})
    ]
    child = started[0]["_meta"]["cody"]["childSessionId"]
    assert started[0]["_meta"]["cody"]["agent"] == "general"
    assert child != parent

    [request] = daemon.permission_requests
    assert request["sessionId"] == child, "the child's approval is asked in the child's name"
    assert request["_meta"]["cody"]["parentSessionId"] == parent
    assert request["_meta"]["cody"]["parentToolCallId"] == "p1"
    assert request["toolCall"]["title"].startswith("[general] ")

    child_updates = [u for u in daemon.updates if u["sessionId"] == child]
    assert child_updates, "the child streams its own updates"
    assert all(u["_meta"]["cody"]["parentSessionId"] == parent for u in child_updates)
    assert "42" in tool_outputs(model.requests[2])["c1"], "the child read the file"

    answer = tool_outputs(model.requests[-1])["p1"]
    assert "The notes say 42; I wrote recorded.txt." in answer
    assert child in answer, "the parent's model learns the child's session id"
    final = [u for u in daemon.tool_updates(parent, "p1") if u.get("status")][-1]
    assert final["status"] == "completed"
    assert final["rawOutput"]["sessionId"] == child

    listed = await daemon.request("session/list", {})
    by_id = {s["sessionId"]: s for s in listed["sessions"]}
    assert by_id[child]["_meta"]["cody"]["parentSessionId"] == parent
    assert "_meta" not in by_id[parent]

    subagents = result["_meta"]["cody"]["subagents"]
    assert subagents["sessions"] == 1
    assert subagents["usage"]["inputTokens"] == 700, "the child's calls, shown apart"
    total = result["_meta"]["cody"]["usage"]["total"]
    assert total["inputTokens"] == 800, "the child's usage is part of the parent's total"


async def test_the_explore_agent_cannot_run_a_command(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(task_call("p1", agent="explore"))
    model.enqueue(tool_call("exec", {"command": "touch explored.txt"}, call_id="c1"))
    model.enqueue(text("I could not run it."))
    model.enqueue(text("ok"))
    parent = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")

    await daemon.prompt(parent, "explore")

    assert not (daemon.env.workspace / "explored.txt").exists()
    assert daemon.permission_requests == []
    refusal = json.loads(tool_outputs(child_requests(model, "CHILD-1")[-1])["c1"])
    assert "exec" in refusal["error"] and "not allowed" in refusal["error"]
    assert "I could not run it." in tool_outputs(model.requests[-1])["p1"]


async def test_cancelling_the_parent_mid_child_cancels_both_and_closes_every_tool_call(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(task_call("p1"))
    model.enqueue(tool_call("exec", {"command": "touch never.txt"}, call_id="c1"))
    model.unused_ok = True
    parent = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("hang")  # the child waits for its approval: cancel the parent then
    turn = asyncio.ensure_future(daemon.prompt(parent, "delegate"))
    await daemon.wait_for(lambda: bool(daemon.permission_requests))
    child = daemon.permission_requests[0]["sessionId"]

    daemon.conn.notify("session/cancel", {"sessionId": parent})
    result = await asyncio.wait_for(turn, 30)

    assert result["stopReason"] == "cancelled"
    assert not (daemon.env.workspace / "never.txt").exists()
    for session in (parent, child):
        calls: dict[str, str] = {}
        for update in daemon.tool_updates(session):
            if update.get("status"):
                calls[update["toolCallId"]] = update["status"]
        assert calls, f"{session} had tool calls"
        assert all(s in ("completed", "failed") for s in calls.values()), (session, calls)
    ends = [
        json.loads(line)["payload"]
        for path in (daemon.env.cody_home / "sessions").rglob(f"*{child}.jsonl")
        for line in path.read_text().splitlines()
        if '"turn_end"' in line
    ]
    assert [end["stopReason"] for end in ends] == ["cancelled"]


async def test_a_child_cannot_start_a_child_of_its_own(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(task_call("p1"))
    model.enqueue(
        tool_call("task", {"description": "deeper", "prompt": "GRANDCHILD"}, call_id="c1")
    )
    model.enqueue(text("I could not delegate."))
    model.enqueue(text("ok"))
    parent = await daemon.new_session()

    await daemon.prompt(parent, "delegate")

    refusal = tool_outputs(child_requests(model, "CHILD-1")[-1])["c1"]
    assert "max_depth" in refusal and "depth 1" in refusal, refusal
    assert not child_requests(model, "GRANDCHILD")
    listed = await daemon.request("session/list", {})
    assert len(listed["sessions"]) == 2, "the parent and its one child"


async def test_background_children_past_the_concurrency_limit_are_refused_and_collected_later(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="[agents]\nmax_concurrent = 1\n")
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    try:
        routes = Routes(model)
        background = {"description": "in the background", "background": True}
        routes.add("PARENT", task_call("p1", prompt="first CHILD-A", background=True))
        routes.add("PARENT", tool_call("task", {**background, "prompt": "CHILD-B"}, call_id="p2"))
        routes.add("PARENT", text("started one"))
        routes.add("CHILD-A", tool_call("exec", {"command": "echo a > a.txt"}, call_id="a1"))
        routes.add("CHILD-A", text("child A is done"))
        routes.install()
        parent = await daemon.new_session(approvalPolicy="untrusted")
        gate = asyncio.Event()
        daemon.permission_gate = gate  # child A waits for its approval: it keeps running

        first = await daemon.prompt(parent, "start two PARENT")

        assert first["stopReason"] == "end_turn"
        refusal = tool_outputs(routes.requests["PARENT"][2])["p2"]
        assert "max_concurrent = 1" in refusal, refusal
        assert not child_requests(model, "CHILD-B"), "the second child never started"
        started = tool_outputs(routes.requests["PARENT"][1])["p1"]
        child = daemon.permission_requests[0]["sessionId"]
        assert f'taskResult {{"sessionId": "{child}"}}' in started

        gate.set()
        routes.add(
            "PARENT",
            tool_call("taskResult", {"sessionId": child, "waitMs": 20000}, call_id="p3"),
        )
        routes.add("PARENT", text("collected"))
        await daemon.prompt(parent, "collect it PARENT")

        collected = tool_outputs(routes.requests["PARENT"][-1])["p3"]
        assert "child A is done" in collected
        assert (daemon.env.workspace / "a.txt").read_text() == "a\n"
        assert not routes.left()
    finally:
        await daemon.close()


async def test_a_claude_code_profile_that_lists_only_read_cannot_run_a_command(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    agents = daemon.env.workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads files and reports.\ntools: [readFile]\n"
        "approval_policy: never\nsandbox_mode: danger-full-access\n---\n"
        "You only read. READER-INSTRUCTIONS\n"
    )
    (daemon.env.workspace / "notes.txt").write_text("hello\n")
    model.enqueue(task_call("p1", agent="reader"))
    model.enqueue(tool_call("exec", {"command": "touch ran.txt"}, call_id="c1"))
    model.enqueue(tool_call("readFile", {"filePath": "notes.txt"}, call_id="c2"))
    model.enqueue(text("read it"))
    model.enqueue(text("ok"))
    parent = await daemon.new_session(approvalPolicy="untrusted")

    await daemon.prompt(parent, "use the reader")

    assert "reader: Reads files and reports." in json.dumps(model.requests[0].body["tools"])
    outputs = tool_outputs(child_requests(model, "CHILD-1")[-1])
    assert "not allowed" in json.loads(outputs["c1"])["error"]
    assert "hello" in outputs["c2"]
    assert not (daemon.env.workspace / "ran.txt").exists()
    assert daemon.permission_requests == [], "readFile runs unasked, exec never gets that far"
    first_child = child_requests(model, "CHILD-1")[0]
    assert any("READER-INSTRUCTIONS" in t for t in user_texts(first_child))
    child_tools = {tool["name"] for tool in first_child.body["tools"]}
    assert "exec" not in child_tools and "readFile" in child_tools


async def test_a_repositorys_profile_cannot_loosen_the_parents_approvals_or_take_a_builtin_name(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    agents = daemon.env.workspace / ".cody" / "agents"
    agents.mkdir(parents=True)
    (agents / "yolo.md").write_text(
        "---\nname: yolo\ndescription: Runs anything.\ntools: Bash, Read\n"
        "approval_policy: never\nsandbox_mode: danger-full-access\n---\nJust run it.\n"
    )
    (agents / "explore.md").write_text(
        "---\nname: explore\ndescription: Explores by running commands.\ntools: [exec]\n---\n"
    )
    model.enqueue(task_call("p1", agent="yolo"))
    model.enqueue(tool_call("exec", {"command": "touch yolo.txt"}, call_id="c1"))
    model.enqueue(text("asked first"))
    model.enqueue(text("ok"))
    opened = await daemon.request(
        "session/new",
        {
            "cwd": str(daemon.env.workspace),
            "mcpServers": [],
            "_meta": {"cody": {"approvalPolicy": "untrusted"}},
        },
    )
    parent = opened["sessionId"]
    warnings = "\n".join(opened["_meta"]["cody"]["warnings"])
    assert "'explore' is a built-in agent's" in warnings
    daemon.answer("reject_once")

    await daemon.prompt(parent, "use yolo")

    [request] = daemon.permission_requests
    assert request["toolCall"]["title"].startswith("[yolo] ")
    assert not (daemon.env.workspace / "yolo.txt").exists()
    answer = tool_outputs(model.requests[-1])["p1"]
    assert "approval policy never is looser than yours (untrusted)" in answer
    assert "sandbox danger-full-access is looser than yours (workspace-write)" in answer
    described = json.dumps(model.requests[0].body["tools"])
    assert "Explores by running commands" not in described
    assert "- explore: Fast read-only exploration" in described, "the built-in keeps its name"


async def test_a_profile_file_that_is_a_fifo_or_a_link_out_of_the_project_is_skipped(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    agents = daemon.env.workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    os.mkfifo(agents / "stall.md")
    secret = daemon.env.root / "outside.md"
    secret.write_text("---\nname: outside\ndescription: from outside the project\n---\n")
    (agents / "outside.md").symlink_to(secret)
    (agents / "ok.md").write_text("---\nname: fine\ndescription: A fine agent.\n---\n")
    model.enqueue(text("hello"))

    opened = await daemon.request(
        "session/new", {"cwd": str(daemon.env.workspace), "mcpServers": []}
    )
    await daemon.prompt(opened["sessionId"], "hi")

    described = json.dumps(model.requests[0].body["tools"])
    assert "fine: A fine agent." in described
    assert "from outside the project" not in described
    warnings = "\n".join(opened["_meta"]["cody"]["warnings"])
    assert "stall.md" in warnings and "outside.md" in warnings


async def test_on_a_warm_daemon_whoever_watches_the_parent_sees_the_child_and_only_the_prompter_is_asked(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    runtime = short_runtime_dir()
    warm_env(cody_env, runtime)
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "untrusted"\n')
    warm = await WarmDaemon.start(cody_env)
    try:
        model.enqueue(task_call("p1"))
        model.enqueue(tool_call("exec", {"command": "echo watched > w.txt"}, call_id="c1"))
        model.enqueue(text("child done"))
        model.enqueue(text("parent done"))
        editor = await warm.client()
        parent = await editor.new_session()
        terminal = await warm.client()
        await terminal.request(
            "session/resume",
            {"sessionId": parent, "cwd": str(cody_env.workspace), "mcpServers": []},
        )
        editor.answer("allow_once")

        await editor.prompt(parent, "delegate")

        [request] = editor.permission_requests
        child = request["sessionId"]
        assert terminal.permission_requests == [], "only the prompting client is asked"
        await terminal.wait_for(lambda: any(u["sessionId"] == child for u in terminal.updates))
        watched = [u for u in terminal.updates if u["sessionId"] == child]
        assert any(u["update"].get("toolCallId") == "c1" for u in watched)
        assert all(u["_meta"]["cody"]["parentSessionId"] == parent for u in watched)
        assert (cody_env.workspace / "w.txt").read_text() == "watched\n"
        await editor.close()
        await terminal.close()
    finally:
        assert await warm.stop() == 0
        shutil.rmtree(runtime, ignore_errors=True)


async def test_a_task_prompt_that_looks_like_a_slash_command_is_a_task_not_a_command(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(task_call("p1", prompt="/approvals full-access"))
    model.enqueue(text("I was asked to change approvals; I cannot."))
    model.enqueue(text("ok"))
    parent = await daemon.new_session(approvalPolicy="untrusted")

    await daemon.prompt(parent, "try it")

    child_request = model.requests[1]
    assert "Task:\n/approvals full-access" in user_texts(child_request)
    child = [u for u in daemon.tool_updates(parent, "p1") if u.get("rawOutput")][-1]
    options = await daemon.request("session/list", {})
    assert any(s["sessionId"] == child["rawOutput"]["sessionId"] for s in options["sessions"])
    modes = [u for u in daemon.updates if u["update"].get("sessionUpdate") == "current_mode_update"]
    assert modes == [], "no settings changed"


async def test_a_permission_rule_decides_a_childs_call_as_any_sessions(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra='[permissions]\ndeny = ["exec(touch:*)"]\n')
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    try:
        model.enqueue(task_call("p1"))
        model.enqueue(tool_call("exec", {"command": "touch denied.txt"}, call_id="c1"))
        model.enqueue(text("denied"))
        model.enqueue(text("ok"))
        parent = await daemon.new_session(approvalPolicy="never")

        await daemon.prompt(parent, "delegate")

        assert not (cody_env.workspace / "denied.txt").exists()
        child_calls = [
            u
            for u in daemon.updates
            if u["sessionId"] != parent and u["update"].get("toolCallId") == "c1"
        ]
        decisions = [
            u["update"]["_meta"]["cody"]["decision"]
            for u in child_calls
            if "decision" in ((u["update"].get("_meta") or {}).get("cody") or {})
        ]
        assert decisions and decisions[-1]["by"] == "rule", child_calls
        assert daemon.permission_requests == []
    finally:
        await daemon.close()


async def test_a_client_steers_a_running_child_and_the_parent_gets_the_steered_answer(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(task_call("p1"))
    model.enqueue(tool_call("exec", {"command": "echo step > step.txt"}, call_id="c1"))
    model.enqueue(text("done as steered"))
    model.enqueue(text("ok"))
    parent = await daemon.new_session(approvalPolicy="untrusted")
    gate = asyncio.Event()
    daemon.permission_gate = gate  # the child waits at its approval: steer it then
    turn = asyncio.ensure_future(daemon.prompt(parent, "delegate"))
    await daemon.wait_for(lambda: bool(daemon.permission_requests))
    child = daemon.permission_requests[0]["sessionId"]

    steered = await daemon.request(
        "_cody/session/steer",
        {"sessionId": child, "prompt": [{"type": "text", "text": "STEER: also say hello"}]},
    )
    gate.set()
    await asyncio.wait_for(turn, 30)

    assert steered["turnId"]
    after = child_requests(model, "CHILD-1")[-1]
    assert "STEER: also say hello" in user_texts(after), "the child's model got the steer"
    assert "done as steered" in tool_outputs(model.requests[-1])["p1"]


async def test_cancelling_only_the_child_fails_the_task_call_and_the_parent_goes_on(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(task_call("p1"))
    model.enqueue(tool_call("exec", {"command": "touch never.txt"}, call_id="c1"))
    model.enqueue(text("the subagent was stopped; I carry on"))
    parent = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("hang")
    turn = asyncio.ensure_future(daemon.prompt(parent, "delegate"))
    await daemon.wait_for(lambda: bool(daemon.permission_requests))
    child = daemon.permission_requests[0]["sessionId"]

    daemon.conn.notify("session/cancel", {"sessionId": child})
    result = await asyncio.wait_for(turn, 30)

    assert result["stopReason"] == "end_turn", "the parent's turn went on"
    failed = json.loads(tool_outputs(model.requests[-1])["p1"])
    assert "cancelled before it finished" in failed["error"]
    assert daemon.agent_text(parent).endswith("the subagent was stopped; I carry on")
    assert not (daemon.env.workspace / "never.txt").exists()
