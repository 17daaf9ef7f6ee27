"""`on-request` trusts the sandbox (issue 23), through the real daemon with bubblewrap.

Under the default settings what the sandbox contains runs without a question (`ls`, a test
run, an edit in the workspace); what needs more asks: a command the model asks to run
outside the sandbox (with its justification), a write outside the workspace, the network
tools. `network_access` gives sandboxed commands the host's network; writable roots and
`on-failure`'s re-run outside the sandbox are checked on the real file system.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.bwrap import require_bwrap
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.mock_web import MockWeb
from tests.support.model_inputs import tool_outputs

DENIED = json.dumps({"error": "User denied approval"})


def exec_call(command: str, call_id: str, **extra: Any) -> object:
    return tool_call("exec", {"command": command, **extra}, call_id=call_id)


def decision(daemon: Daemon, sid: str, call_id: str) -> dict[str, Any]:
    """The call's `_meta.cody.decision` (exactly one update carries it)."""
    found = [
        update["_meta"]["cody"]["decision"]
        for update in daemon.tool_updates(sid, call_id)
        if "decision" in (update.get("_meta") or {}).get("cody", {})
    ]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture
def outside(cody_env: CodyEnv) -> Path:
    require_bwrap(cody_env)
    path = cody_env.root / "outside"
    path.mkdir()
    return path


async def test_under_the_default_settings_sandboxed_work_runs_without_asking(
    daemon: Daemon, model: MockResponsesServer, outside: Path
) -> None:
    ws = daemon.env.workspace
    (ws / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (ws / "notes.txt").write_text("old\n")
    patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-old\n+new\n*** End Patch\n"
    pytest_cmd = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider test_ok.py"
    model.enqueue(exec_call("ls", "c1"))
    model.enqueue(exec_call(pytest_cmd, "c2"))
    model.enqueue(tool_call("applyPatch", {"patch": patch}, call_id="c3"))
    model.enqueue(exec_call(f"echo escaped > {outside}/sneaky.txt", "c4"))
    model.enqueue(text("done"))
    sid = await daemon.new_session()

    await daemon.prompt(sid, "look, test, fix")

    assert daemon.permission_requests == []
    outputs = tool_outputs(model.requests[-1])
    assert "test_ok.py" in outputs["c1"]
    assert "1 passed" in outputs["c2"]
    assert (ws / "notes.txt").read_text() == "new\n"
    assert "Exit code: 0" not in outputs["c4"], "the sandbox still stops what leaves it"
    assert not (outside / "sneaky.txt").exists()
    for call_id in ("c1", "c2", "c3"):
        assert decision(daemon, sid, call_id) == {
            "by": "sandbox",
            "detail": "the sandbox contains it",
            "outcome": "allow",
        }


async def test_a_sandboxed_command_gets_the_network_only_with_network_access(
    cody_env: CodyEnv, model: MockResponsesServer, outside: Path
) -> None:
    async with MockWeb() as web:
        web.page("/hello", "hello-from-the-host", content_type="text/plain")
        curl = f"curl -sS --max-time 5 {web.url('/hello')}"
        results: dict[bool, str] = {}
        for network in (False, True):
            extra = "[sandbox_workspace_write]\nnetwork_access = true\n" if network else ""
            cody_env.use_mock_provider(model.base_url, extra=extra)
            daemon = await Daemon.start(cody_env)
            try:
                await daemon.initialize()
                model.enqueue(exec_call(curl, "c1"))
                model.enqueue(tool_call("fetchUrl", {"url": web.url("/hello")}, call_id="c2"))
                model.enqueue(text("done"))
                sid = await daemon.new_session()
                daemon.answer("reject_once")
                await daemon.prompt(sid, "fetch it")
                results[network] = tool_outputs(model.requests[-1])["c1"]
                asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
                assert asked == ["c2"], "the network tools still ask"
            finally:
                await daemon.close()
    assert "hello-from-the-host" not in results[False]
    assert "Exit code: 0" not in results[False]
    assert "hello-from-the-host" in results[True]
    assert len(web.requests_to("/hello")) == 1, "only the sandbox with the network reached it"


async def test_an_escalation_asks_once_with_its_justification_and_runs_outside_only_if_allowed(
    daemon: Daemon, model: MockResponsesServer, outside: Path
) -> None:
    why = "the release notes go to the shared folder"
    model.enqueue(exec_call(f"echo one > {outside}/one", "c1", escalate=True, justification=why))
    model.enqueue(exec_call(f"echo two > {outside}/two", "c2", escalate=True, justification=why))
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    daemon.answer("reject_once", "allow_once")

    await daemon.prompt(sid, "publish")

    first, second = daemon.permission_requests
    assert [first["toolCall"]["toolCallId"], second["toolCall"]["toolCallId"]] == ["c1", "c2"]
    shown = first["toolCall"]["content"][0]["content"]["text"]
    assert why in shown and "OUTSIDE THE SANDBOX" in shown
    assert first["_meta"]["cody"]["justification"] == why
    assert first["_meta"]["cody"]["sandboxed"] is False
    outputs = tool_outputs(model.requests[-1])
    assert outputs["c1"] == DENIED
    assert not (outside / "one").exists()
    assert (outside / "two").read_text() == "two\n"
    raw = daemon.tool_updates(sid, "c2")[-1]["rawOutput"]
    assert raw["sandboxed"] is False
    assert decision(daemon, sid, "c2")["by"] == "user"


async def test_an_escalation_without_a_justification_is_an_error_for_the_model(
    daemon: Daemon, model: MockResponsesServer, outside: Path
) -> None:
    model.enqueue(exec_call(f"echo x > {outside}/x", "c1", escalate=True))
    model.enqueue(text("done"))
    sid = await daemon.new_session()

    await daemon.prompt(sid, "go")

    assert daemon.permission_requests == []
    assert "justification is required" in tool_outputs(model.requests[-1])["c1"]
    assert not (outside / "x").exists()


async def test_a_write_outside_the_workspace_asks_and_happens_only_when_allowed(
    daemon: Daemon, model: MockResponsesServer, outside: Path
) -> None:
    model.enqueue(
        tool_call("writeFile", {"filePath": str(outside / "a.txt"), "content": "a"}, call_id="w1")
    )
    model.enqueue(
        tool_call("writeFile", {"filePath": str(outside / "b.txt"), "content": "b"}, call_id="w2")
    )
    model.enqueue(tool_call("writeFile", {"filePath": "inside.txt", "content": "i"}, call_id="w3"))
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    daemon.answer("reject_once", "allow_once")

    await daemon.prompt(sid, "write")

    asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
    assert asked == ["w1", "w2"]
    note = daemon.permission_requests[0]["toolCall"]["content"][0]["content"]["text"]
    assert "OUTSIDE THE SANDBOX" in note and "outside the writable roots" in note
    assert not (outside / "a.txt").exists()
    assert (outside / "b.txt").read_text() == "b"
    assert (daemon.env.workspace / "inside.txt").read_text() == "i"


async def test_writable_roots_from_meta_let_commands_and_edits_write_there_unasked(
    daemon: Daemon, model: MockResponsesServer, outside: Path
) -> None:
    model.enqueue(exec_call(f"echo from-exec > {outside}/e.txt", "c1"))
    model.enqueue(
        tool_call("writeFile", {"filePath": str(outside / "w.txt"), "content": "w"}, call_id="c2")
    )
    model.enqueue(text("done"))
    sid = await daemon.new_session(writableRoots=[str(outside)])

    await daemon.prompt(sid, "write there")

    assert daemon.permission_requests == []
    assert (outside / "e.txt").read_text() == "from-exec\n"
    assert (outside / "w.txt").read_text() == "w"


async def test_a_writable_root_that_is_not_a_directory_is_refused_at_session_new(
    daemon: Daemon, outside: Path
) -> None:
    from cody_client.connection import RemoteError

    with pytest.raises(RemoteError) as caught:
        await daemon.new_session(writableRoots=[str(outside / "missing")])
    assert caught.value.code == -32602
    assert "writableRoots" in caught.value.message


async def test_on_failure_reruns_a_failed_command_outside_the_sandbox_when_allowed(
    daemon: Daemon, model: MockResponsesServer, outside: Path
) -> None:
    model.enqueue(exec_call(f"echo rerun > {outside}/r.txt", "c1"))
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="on-failure")
    daemon.answer("allow_once")

    await daemon.prompt(sid, "write it")

    [request] = daemon.permission_requests
    assert "failed inside the sandbox" in request["toolCall"]["content"][0]["content"]["text"]
    assert (outside / "r.txt").read_text() == "rerun\n"
    output = tool_outputs(model.requests[-1])["c1"]
    assert output.startswith("The command failed inside the sandbox; the user let it run again")
    assert "Exit code: 0" in output


async def test_policy_never_refuses_an_escalation_without_asking(
    daemon: Daemon, model: MockResponsesServer, outside: Path
) -> None:
    model.enqueue(exec_call(f"echo x > {outside}/x", "c1", escalate=True, justification="why"))
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "go")

    assert daemon.permission_requests == []
    assert "approval policy is `never`" in tool_outputs(model.requests[-1])["c1"]
    assert not (outside / "x").exists()
    assert decision(daemon, sid, "c1")["outcome"] == "deny"
