"""What a permission answer may add (issue 24.8, docs/protocol.md "Approvals"): a reason for
the model with a rejection (`_meta.cody.message`), and edited arguments with an approval
(`_meta.cody.updatedInput`). The edited arguments go through the same decision as the
model's: a client cannot pass a different call past the sandbox or a session rejection by
approving an edit."""

from __future__ import annotations

import json
from typing import Any

from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs


def answer(option: str, **cody: Any) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}, "_meta": {"cody": cody}}


async def test_a_rejection_can_tell_the_model_why(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": "find / -name '*.py'"}, call_id="c1"))
    model.enqueue(text("I will search the workspace only"))
    sid = await daemon.new_session()
    daemon.answer(answer("reject_once", message="search only the workspace, with rg"))

    result = await daemon.prompt(sid, "find the python files")

    assert result["stopReason"] == "end_turn"
    told = json.loads(tool_outputs(model.requests[1])["c1"])
    assert told == {"error": "User denied approval: search only the workspace, with rg"}
    final = daemon.tool_updates(sid, "c1")[-1]
    assert final["status"] == "failed" and final["rawOutput"]["refused"] == "user"


async def test_an_approval_can_run_edited_arguments_and_the_model_is_told(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": "echo from-the-model > out.txt"}, call_id="c1"))
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    edited = {"command": "echo from-the-user > out.txt"}
    daemon.answer(answer("allow_once", updatedInput=edited))

    await daemon.prompt(sid, "write out.txt")

    assert (daemon.env.workspace / "out.txt").read_text() == "from-the-user\n"
    output = tool_outputs(model.requests[1])["c1"]
    assert output.startswith("(The user edited this call before approving it")
    assert "from-the-user" in output
    running = next(u for u in daemon.tool_updates(sid, "c1") if u.get("status") == "in_progress")
    assert running["rawInput"] == edited, "the client is shown what runs"
    assert "from-the-user" in running["title"]
    assert daemon.tool_updates(sid, "c1")[-1]["rawOutput"]["editedInput"] == edited


async def test_allow_always_with_an_edit_remembers_the_edited_call(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": "echo one"}, call_id="c1"))
    model.enqueue(tool_call("exec", {"command": "echo two"}, call_id="c2"))
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    daemon.answer(answer("allow_always", updatedInput={"command": "echo two"}), "reject_once")

    await daemon.prompt(sid, "echo")

    assert len(daemon.permission_requests) == 1, "echo two was granted by the edited answer"
    outputs = tool_outputs(model.requests[2])
    assert outputs["c2"].endswith("Output:\ntwo\n") and "edited" not in outputs["c2"]


async def test_an_edit_the_sandbox_forbids_is_refused_and_nothing_is_written(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """The model's call is inside the workspace; the client approves an edit that writes
    outside it. The sandbox refuses the edit as it would refuse the model."""
    outside = daemon.env.root / "outside.txt"
    model.enqueue(
        tool_call("writeFile", {"filePath": "inside.txt", "content": "hello"}, call_id="w1")
    )
    model.enqueue(text("ok"))
    sid = await daemon.new_session(approvalPolicy="untrusted", sandboxMode="workspace-write")
    daemon.answer(
        answer("allow_once", updatedInput={"filePath": str(outside), "content": "smuggled"})
    )

    await daemon.prompt(sid, "write it")

    assert not outside.exists() and not (daemon.env.workspace / "inside.txt").exists()
    final = daemon.tool_updates(sid, "w1")[-1]
    assert final["status"] == "failed" and final["rawOutput"]["refused"] == "sandbox"


async def test_an_edit_into_a_rejected_call_is_refused(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """`reject_always` for `touch evil` holds for the session: an approval whose edit turns
    another call into it does not run it."""
    model.enqueue(tool_call("exec", {"command": "touch evil"}, call_id="c1"))
    model.enqueue(text("ok"))
    model.enqueue(tool_call("exec", {"command": "touch fine"}, call_id="c2"))
    model.enqueue(text("ok"))
    sid = await daemon.new_session()
    daemon.answer("reject_always", answer("allow_once", updatedInput={"command": "touch evil"}))

    await daemon.prompt(sid, "first")
    await daemon.prompt(sid, "second")

    assert not (daemon.env.workspace / "evil").exists()
    assert not (daemon.env.workspace / "fine").exists()
    final = daemon.tool_updates(sid, "c2")[-1]
    assert final["status"] == "failed" and final["rawOutput"]["refused"] == "session rejection"


async def test_edited_arguments_the_tool_does_not_take_are_refused(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": "echo hi"}, call_id="c1"))
    model.enqueue(text("ok"))
    sid = await daemon.new_session()
    daemon.answer(answer("allow_once", updatedInput={"cmd": "echo hi"}))

    await daemon.prompt(sid, "say hi")

    told = json.loads(tool_outputs(model.requests[1])["c1"])
    assert "The arguments the user edited are not valid for exec" in told["error"]
    assert daemon.tool_updates(sid, "c1")[-1]["rawOutput"]["refused"] == "invalid edit"


async def test_a_malformed_addition_counts_as_a_rejection(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """An answer whose `_meta.cody` is not what the protocol says (a message that is not a
    string, edited arguments that are not an object, a message over 4000 characters) is
    invalid, and an invalid answer rejects: nothing runs on a garbled approval."""
    for index, bad in enumerate(
        ({"message": 42}, {"updatedInput": ["echo", "x"]}, {"message": "x" * 4001})
    ):
        model.enqueue(tool_call("exec", {"command": f"touch ran{index}"}, call_id=f"c{index}"))
        model.enqueue(text("ok"))
        daemon.answer(answer("allow_once", **bad))
    sid = await daemon.new_session()

    for index in range(3):
        await daemon.prompt(sid, f"run {index}")

    assert not list(daemon.env.workspace.glob("ran*"))
    for index in range(3):
        final = daemon.tool_updates(sid, f"c{index}")[-1]
        assert final["status"] == "failed" and final["rawOutput"]["refused"] == "user"
