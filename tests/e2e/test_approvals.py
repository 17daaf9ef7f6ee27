"""Approvals through the real daemon: every policy, every option, timeouts and errors.

Most tests here are about asking itself, so they run under `untrusted` (the `ask` mode: every
edit and every command but known-safe reads asks); what `on-request` runs without asking is
in test_sandboxed_approvals.py."""

from __future__ import annotations

import json

from tests.support.bwrap import require_bwrap
from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

DENIED = json.dumps({"error": "User denied approval"})


def exec_call(command: str | list[str], call_id: str) -> object:
    return tool_call("exec", {"command": command}, call_id=call_id)


async def test_approved_exec_runs_and_its_output_reaches_the_model(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(exec_call("echo approved-output > made.txt; cat made.txt", "c1"))
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_once")

    result = await daemon.prompt(sid, "make the file")

    assert result["stopReason"] == "end_turn"
    assert (daemon.env.workspace / "made.txt").read_text() == "approved-output\n"
    [request] = daemon.permission_requests
    assert request["toolCall"]["toolCallId"] == "c1"
    assert "echo approved-output" in request["toolCall"]["content"][0]["content"]["text"]
    assert request["_meta"]["cody"]["requestId"] is not None
    assert [o["optionId"] for o in request["options"]] == [
        "allow_once",
        "allow_always",
        "allow_project",
        "reject_once",
        "reject_always",
    ], "option ids equal their kinds (avante.nvim decides by the id), plus allow_project"
    assert [o["kind"] for o in request["options"]] == [
        "allow_once",
        "allow_always",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert "approved-output" in tool_outputs(model.requests[1])["c1"]
    statuses = [u.get("status") for u in daemon.tool_updates(sid, "c1") if u.get("status")]
    assert statuses == ["pending", "in_progress", "completed"]


async def test_rejected_exec_does_not_run_and_the_turn_goes_on(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(exec_call("touch rejected.txt", "c1"))
    model.enqueue(text("ok, I will not"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("reject_once")

    result = await daemon.prompt(sid, "touch it")

    assert result["stopReason"] == "end_turn"
    assert not (daemon.env.workspace / "rejected.txt").exists()
    assert tool_outputs(model.requests[1])["c1"] == DENIED
    assert daemon.agent_text(sid).endswith("ok, I will not")
    assert daemon.tool_updates(sid, "c1")[-1]["status"] == "failed"


async def test_allow_always_stops_the_second_identical_prompt(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(exec_call("touch one", "c1"))
    model.enqueue(exec_call(["bash", "-lc", "touch one"], "c2"))
    model.enqueue(text("first turn done"))
    model.enqueue(exec_call("touch  'one'", "c3"))
    model.enqueue(exec_call("FOO=1 touch one", "c4"))
    model.enqueue(text("second turn done"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_always", "reject_once")

    await daemon.prompt(sid, "first")
    await daemon.prompt(sid, "second")

    asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
    assert asked == ["c1", "c4"], "the grant covers c2 and c3 (same normalised command) only"
    outputs = tool_outputs(model.requests[-1])
    assert "Exit code: 0" in outputs["c3"]
    assert outputs["c4"] == DENIED, "an assignment prefix is part of the grant key"


async def test_reject_always_is_remembered_without_asking(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(exec_call("touch x", "c1"))
    model.enqueue(exec_call(["bash", "-lc", "touch  x"], "c2"))
    model.enqueue(text("gave up"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("reject_always")

    await daemon.prompt(sid, "touch x twice")

    assert len(daemon.permission_requests) == 1
    assert tool_outputs(model.requests[-1])["c2"] == DENIED
    assert not (daemon.env.workspace / "x").exists()


async def test_the_option_ids_older_clients_answer_with_still_work(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """Clients written against the earlier ids answer `allow_session` / `reject_session`:
    they mean allow_always / reject_always, not an unknown option (= reject_once)."""
    model.enqueue(exec_call("touch legacy", "c1"))
    model.enqueue(exec_call(["bash", "-lc", "touch legacy"], "c2"))
    model.enqueue(exec_call("touch legacy-refused", "c3"))
    model.enqueue(exec_call(["sh", "-c", "touch legacy-refused"], "c4"))
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_session", "reject_session")

    await daemon.prompt(sid, "old client")

    asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
    assert asked == ["c1", "c3"], "the legacy answers were remembered as session grants"
    outputs = tool_outputs(model.requests[-1])
    assert "Exit code: 0" in outputs["c2"]
    assert outputs["c4"] == DENIED
    assert not (daemon.env.workspace / "legacy-refused").exists()


async def test_a_denial_is_not_reasked_in_the_same_turn_through_another_spelling(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(exec_call("touch x", "c1"))
    model.enqueue(exec_call(["sh", "-c", "touch x"], "c2"))
    model.enqueue(text("stopping"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("reject_once")

    await daemon.prompt(sid, "touch x")

    assert len(daemon.permission_requests) == 1
    assert tool_outputs(model.requests[-1])["c2"] == DENIED


async def test_policy_never_never_asks(daemon: Daemon, model: MockResponsesServer) -> None:
    model.enqueue(exec_call("echo hi > never.txt", "c1"))
    model.enqueue(tool_call("writeFile", {"filePath": "w.txt", "content": "w"}, call_id="c2"))
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "go")

    assert daemon.permission_requests == []
    assert (daemon.env.workspace / "never.txt").read_text() == "hi\n"
    assert (daemon.env.workspace / "w.txt").read_text() == "w"


async def test_on_failure_runs_sandboxed_unasked_and_asks_once_to_rerun_a_failure(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """on-failure: commands run in the sandbox without asking; a failed one asks once to run
    again outside it, and a rejected re-run leaves the model the first run's result."""
    require_bwrap(daemon.env)
    model.enqueue(exec_call("echo fine", "c1"))
    model.enqueue(exec_call("echo failing-output; exit 3", "c2"))
    model.enqueue(exec_call("echo after-failure", "c3"))
    model.enqueue(text("turn one done"))
    sid = await daemon.new_session(approvalPolicy="on-failure")
    daemon.answer("reject_once")

    await daemon.prompt(sid, "one")

    [rerun] = daemon.permission_requests
    assert rerun["toolCall"]["toolCallId"] == "c2"
    shown = rerun["toolCall"]["content"][0]["content"]["text"]
    assert "failed inside the sandbox (exit code 3)" in shown and "failing-output" in shown
    outputs = tool_outputs(model.requests[-1])
    assert "Exit code: 3" in outputs["c2"], "the model keeps the sandboxed run's result"
    assert "after-failure" in outputs["c3"], "a failure does not make later calls ask"


async def test_untrusted_lets_read_only_tools_and_safe_commands_through(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    (daemon.env.workspace / "notes.txt").write_text("hello\n")
    model.enqueue(tool_call("readFile", {"filePath": "notes.txt"}, call_id="c1"))
    model.enqueue(tool_call("listDir", {"dirPath": "."}, call_id="c2"))
    model.enqueue(exec_call("cat notes.txt", "c3"))
    model.enqueue(exec_call("touch created.txt", "c4"))
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("reject_once")

    await daemon.prompt(sid, "look around")

    assert [r["toolCall"]["toolCallId"] for r in daemon.permission_requests] == ["c4"]
    outputs = tool_outputs(model.requests[-1])
    assert "hello" in outputs["c1"]
    assert "notes.txt" in outputs["c2"]
    assert "hello" in outputs["c3"]
    assert outputs["c4"] == DENIED


async def test_an_unanswered_approval_times_out_to_a_rejection(
    cody_env, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="approval_timeout_s = 0.5")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(exec_call("touch late.txt", "c1"))
        model.enqueue(text("no answer, moving on"))
        sid = await daemon.new_session(approvalPolicy="untrusted")
        daemon.answer("hang")

        result = await daemon.prompt(sid, "touch late")

        assert result["stopReason"] == "end_turn"
        assert tool_outputs(model.requests[1])["c1"] == DENIED
        assert not (cody_env.workspace / "late.txt").exists()
        request_id = daemon.permission_requests[0]["_meta"]["cody"]["requestId"]
        cancels = [m for m in daemon.received if m.get("method") == "$/cancelRequest"]
        assert [c["params"]["id"] for c in cancels] == [request_id]
        # the connection still works after the withdrawn request
        model.enqueue(text("still here"))
        assert (await daemon.prompt(sid, "ping"))["stopReason"] == "end_turn"
    finally:
        await daemon.close()


async def test_an_error_answer_or_unknown_option_counts_as_reject_once(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    from cody_client.connection import RemoteError

    model.enqueue(exec_call("touch a", "c1"))
    model.enqueue(exec_call("touch b", "c2"))
    model.enqueue(text("both refused"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer(
        RemoteError(-32603, "dialog crashed"),
        {"outcome": {"outcome": "selected", "optionId": "yes-please"}},
    )

    result = await daemon.prompt(sid, "touch both")

    assert result["stopReason"] == "end_turn"
    outputs = tool_outputs(model.requests[-1])
    assert outputs == {"c1": DENIED, "c2": DENIED}
    assert not (daemon.env.workspace / "a").exists()


async def test_cancelled_outcome_stops_the_turn(daemon: Daemon, model: MockResponsesServer) -> None:
    model.enqueue(text("about to run"), exec_call("touch c.txt", "c1"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("cancelled")

    result = await daemon.prompt(sid, "touch c")

    assert result["stopReason"] == "cancelled"
    assert not (daemon.env.workspace / "c.txt").exists()
    assert daemon.tool_updates(sid, "c1")[-1]["status"] == "failed"
    assert model.pending == 0 and len(model.requests) == 1


async def test_approval_request_for_a_write_shows_the_diff(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    (daemon.env.workspace / "f.txt").write_text("old\n")
    model.enqueue(tool_call("writeFile", {"filePath": "f.txt", "content": "new\n"}, call_id="c1"))
    model.enqueue(text("written"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_once")

    await daemon.prompt(sid, "rewrite f")

    [request] = daemon.permission_requests
    [diff] = request["toolCall"]["content"]
    assert diff["type"] == "diff"
    assert diff["path"] == str(daemon.env.workspace / "f.txt")
    assert (diff["oldText"], diff["newText"]) == ("old\n", "new\n")
    assert (daemon.env.workspace / "f.txt").read_text() == "new\n"
