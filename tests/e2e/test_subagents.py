"""Subagents through the real daemon: a `task` call starts a child session that runs its own
turn (its own file, history and grants), whose approvals reach the parent's client with the
child's session id, whose updates carry its parent, and whose answer is the call's result."""

from __future__ import annotations

import json
from typing import Any

from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, Usage, text, tool_call
from tests.support.model_inputs import tool_outputs, user_texts

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
    model.enqueue(text("The notes say 42; I wrote recorded.txt."), usage=Usage(input=400, output=40))
    model.enqueue(text("Done: the child found 42."))
    parent = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_once")

    result = await daemon.prompt(parent, "delegate the notes")

    assert result["stopReason"] == "end_turn"
    assert (daemon.env.workspace / "recorded.txt").read_text() == "42\n"
    started = [
        u for u in daemon.tool_updates(parent, "p1") if (u.get("_meta") or {}).get("cody")
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
    assert by_id[child]["parentSessionId"] == parent
    assert "parentSessionId" not in by_id[parent]

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
