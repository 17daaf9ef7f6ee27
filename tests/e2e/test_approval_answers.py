"""What a permission answer may add (issue 24.8, docs/protocol.md "Approvals"): a reason for
the model with a rejection (`_meta.cody.message`), and edited arguments with an approval
(`_meta.cody.updatedInput`). The edited arguments go through the whole decision the model's
would (issue 23's included: permission rules, whether the call leaves the sandbox): a client
cannot pass a different call past a deny rule or a session rejection by approving an edit.

Under the default policy a sandboxed command runs unasked, so the calls here ask because the
session is in the ask mode (`untrusted`) or because the model asks to leave the sandbox."""

from __future__ import annotations

import json
from typing import Any

from tests.support.bwrap import require_bwrap
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

ASK = {"approvalPolicy": "untrusted"}
"""The ask mode: every command that is not known-safe asks (touch, a redirection...)."""


def answer(option: str, **cody: Any) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}, "_meta": {"cody": cody}}


def decision(daemon: Daemon, sid: str, call_id: str) -> dict[str, Any]:
    for update in daemon.tool_updates(sid, call_id):
        found = (update.get("_meta") or {}).get("cody", {}).get("decision")
        if found is not None:
            return dict(found)
    raise AssertionError(f"no decision for {call_id}")


async def test_a_rejection_can_tell_the_model_why(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    escalated = {
        "command": "find / -name '*.py'",
        "escalate": True,
        "justification": "the whole disk",
    }
    model.enqueue(tool_call("exec", escalated, call_id="c1"))
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
    sid = await daemon.new_session(**ASK)
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
    model.enqueue(tool_call("exec", {"command": "touch one"}, call_id="c1"))
    model.enqueue(tool_call("exec", {"command": "touch two"}, call_id="c2"))
    model.enqueue(text("done"))
    sid = await daemon.new_session(**ASK)
    daemon.answer(answer("allow_always", updatedInput={"command": "touch two"}), "reject_once")

    await daemon.prompt(sid, "touch")

    assert len(daemon.permission_requests) == 1, "touch two was granted by the edited answer"
    assert (daemon.env.workspace / "two").exists() and not (daemon.env.workspace / "one").exists()
    outputs = tool_outputs(model.requests[2])
    assert "edited" in outputs["c1"] and "edited" not in outputs["c2"]


async def test_an_edit_a_deny_rule_forbids_is_refused_and_nothing_is_written(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """The model's call asks (the ask mode); the client approves an edit into a command the
    user's deny rule forbids. The rule refuses the edit as it would refuse the model."""
    config = '[permissions]\ndeny = ["exec(touch smuggled:*)"]\n'
    cody_env.use_mock_provider(model.base_url, extra=config)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(tool_call("exec", {"command": "touch inside"}, call_id="c1"))
        model.enqueue(text("ok"))
        sid = await daemon.new_session(**ASK)
        daemon.answer(answer("allow_once", updatedInput={"command": "touch smuggled"}))

        await daemon.prompt(sid, "touch it")

        workspace = daemon.env.workspace
        assert not (workspace / "smuggled").exists() and not (workspace / "inside").exists()
        final = daemon.tool_updates(sid, "c1")[-1]
        assert final["status"] == "failed" and final["rawOutput"]["refused"] == "rule"
        told = json.loads(tool_outputs(model.requests[1])["c1"])
        assert "exec(touch smuggled:*)" in told["error"]
        found = decision(daemon, sid, "c1")
        assert found["by"] == "rule" and found["outcome"] == "deny"
        assert "edited" in found["detail"]
    finally:
        await daemon.close()


async def test_whether_an_edited_call_leaves_the_sandbox_is_its_own(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """The model asks to run a command outside the sandbox; the user approves an edit without
    `escalate`: the edited command runs inside the sandbox, so its write outside the
    workspace fails (the approval of the model's escalation does not carry over)."""
    require_bwrap(cody_env)
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        target = cody_env.root / "outside.txt"
        escalated = {"command": "touch escalated", "escalate": True, "justification": "needed"}
        model.enqueue(tool_call("exec", escalated, call_id="c1"))
        model.enqueue(text("ok"))
        sid = await daemon.new_session()
        daemon.answer(answer("allow_once", updatedInput={"command": f"touch {target}"}))

        await daemon.prompt(sid, "touch it")

        [request] = daemon.permission_requests
        assert request["_meta"]["cody"]["justification"] == "needed"
        assert not target.exists(), "the edited command ran inside the sandbox"
        final = daemon.tool_updates(sid, "c1")[-1]
        assert final["status"] == "failed" and final["rawOutput"]["sandboxed"] is True
        assert final["rawOutput"]["editedInput"] == {"command": f"touch {target}"}
    finally:
        await daemon.close()


async def test_allow_project_with_an_edit_saves_the_edited_call_s_rule(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(tool_call("exec", {"command": "mkdir -p build"}, call_id="c1"))
        model.enqueue(text("ok"))
        sid = await daemon.new_session(**ASK)
        daemon.answer(answer("allow_project", updatedInput={"command": "touch made"}))

        await daemon.prompt(sid, "build")

        [request] = daemon.permission_requests
        assert request["_meta"]["cody"]["projectRules"] == ["exec(mkdir:*)"]
        assert (daemon.env.workspace / "made").exists()
        assert not (daemon.env.workspace / "build").exists()
        found = decision(daemon, sid, "c1")
        assert found["by"] == "user" and "exec(touch made:*)" in found["detail"]
    finally:
        await daemon.close()
    config = (cody_env.cody_home / "config.toml").read_text()
    assert '"exec(touch made:*)"' in config and "mkdir" not in config


async def test_an_edit_into_a_rejected_call_is_refused(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """`reject_always` for `touch evil` holds for the session: an approval whose edit turns
    another call into it does not run it."""
    model.enqueue(tool_call("exec", {"command": "touch evil"}, call_id="c1"))
    model.enqueue(text("ok"))
    model.enqueue(tool_call("exec", {"command": "touch fine"}, call_id="c2"))
    model.enqueue(text("ok"))
    sid = await daemon.new_session(**ASK)
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
    model.enqueue(tool_call("exec", {"command": "touch hi"}, call_id="c1"))
    model.enqueue(text("ok"))
    sid = await daemon.new_session(**ASK)
    daemon.answer(answer("allow_once", updatedInput={"cmd": "touch hi"}))

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
    sid = await daemon.new_session(**ASK)

    for index in range(3):
        await daemon.prompt(sid, f"run {index}")

    assert not list(daemon.env.workspace.glob("ran*"))
    for index in range(3):
        final = daemon.tool_updates(sid, f"c{index}")[-1]
        assert final["status"] == "failed" and final["rawOutput"]["refused"] == "user"
