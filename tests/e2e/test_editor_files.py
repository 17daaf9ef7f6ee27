"""The editor's files (issue 13.8): with `fs.readTextFile` / `fs.writeTextFile` declared, file
tools read and write through the client (unsaved buffers seen, the editor saves and owns
undo), under exactly the checks disk access has; an editor's refusal is a clear tool error.

ACP: https://agentclientprotocol.com/protocol/file-system
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.editor import ZED_CAPABILITIES, Editor
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs


@pytest.fixture
async def editor_daemon(
    cody_env: CodyEnv, model: MockResponsesServer
) -> AsyncIterator[tuple[Daemon, Editor]]:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    editor = Editor().attach(daemon)
    await daemon.initialize(ZED_CAPABILITIES)
    yield daemon, editor
    await daemon.close()
    assert editor.problems == []


async def test_read_file_sees_the_unsaved_buffer(
    editor_daemon: tuple[Daemon, Editor], model: MockResponsesServer
) -> None:
    daemon, editor = editor_daemon
    ws = daemon.env.workspace
    (ws / "app.py").write_text("print('saved on disk')\n")
    editor.open(ws / "app.py", "print('unsaved in the editor')\nx = 1\n")
    model.enqueue(tool_call("readFile", {"filePath": "app.py"}, call_id="r1"))
    model.enqueue(text("read it"))
    sid = await daemon.new_session()

    await daemon.prompt(sid, "read app.py")

    output = tool_outputs(model.requests[-1])["r1"]
    assert "unsaved in the editor" in output and "saved on disk" not in output
    assert "     2\tx = 1" in output, "numbered like a disk read"
    assert editor.reads == [str(ws / "app.py")]


async def test_write_file_goes_through_the_editor_after_approval_with_the_buffer_diff(
    editor_daemon: tuple[Daemon, Editor], model: MockResponsesServer
) -> None:
    daemon, editor = editor_daemon
    ws = daemon.env.workspace
    (ws / "notes.md").write_text("disk text\n")
    editor.open(ws / "notes.md", "buffer text\n")
    model.enqueue(
        tool_call(
            "writeFile", {"filePath": "docs/new/notes.md", "content": "fresh\n"}, call_id="w0"
        ),
        tool_call("writeFile", {"filePath": "notes.md", "content": "rewritten\n"}, call_id="w1"),
    )
    model.enqueue(text("written"))
    sid = await daemon.new_session(approvalPolicy="untrusted")  # every edit asks
    daemon.answer("allow_once", "allow_once")

    await daemon.prompt(sid, "write both")

    diffs = [r["toolCall"]["content"][0] for r in daemon.permission_requests]
    assert diffs[1]["oldText"] == "buffer text\n", "the approval shows the editor's text"
    assert "oldText" not in diffs[0], "a new file"
    assert editor.writes == [
        (str(ws / "docs" / "new" / "notes.md"), "fresh\n"),
        (str(ws / "notes.md"), "rewritten\n"),
    ]
    assert (ws / "docs" / "new" / "notes.md").read_text() == "fresh\n", "parents were created"
    final = [u for u in daemon.tool_updates(sid, "w1") if u.get("status") == "completed"]
    assert final and final[0]["rawOutput"]["editor"] is True


async def test_the_sandbox_and_the_login_file_refusal_hold_and_the_editor_is_never_asked(
    editor_daemon: tuple[Daemon, Editor], model: MockResponsesServer
) -> None:
    daemon, editor = editor_daemon
    ws = daemon.env.workspace
    outside = daemon.env.root / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "escape")  # a hostile repository's symlink
    auth = daemon.env.root / "codex-home" / "auth.json"
    auth.write_text('{"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}')
    model.enqueue(
        tool_call("writeFile", {"filePath": "escape/owned.txt", "content": "x"}, call_id="w1"),
        tool_call("writeFile", {"filePath": str(outside / "b.txt"), "content": "x"}, call_id="w2"),
        tool_call("readFile", {"filePath": str(auth)}, call_id="r1"),
    )
    model.enqueue(text("refused"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "escape")

    outputs = tool_outputs(model.requests[-1])
    for call in ("w1", "w2"):
        assert "sandbox" in json.loads(outputs[call])["error"], outputs[call]
    assert "sk-test" not in outputs["r1"] and "error" in json.loads(outputs["r1"])
    assert editor.writes == [] and editor.reads == [], "the daemon decided; nothing was asked"
    assert list(outside.iterdir()) == []


async def test_an_editor_refusal_is_a_clear_tool_error_and_the_turn_goes_on(
    editor_daemon: tuple[Daemon, Editor], model: MockResponsesServer
) -> None:
    daemon, editor = editor_daemon
    ws = daemon.env.workspace
    (ws / "locked.txt").write_text("keep\n")
    editor.fail_writes.add(str(ws / "locked.txt"))
    editor.fail_reads.add(str(ws / "gone.txt"))
    model.enqueue(
        tool_call("writeFile", {"filePath": "locked.txt", "content": "new\n"}, call_id="w1"),
        tool_call("readFile", {"filePath": "gone.txt"}, call_id="r1"),
        tool_call("readFile", {"filePath": "."}, call_id="r2"),
    )
    model.enqueue(text("the editor said no"))
    sid = await daemon.new_session(approvalPolicy="never")

    result = await daemon.prompt(sid, "try")

    outputs = tool_outputs(model.requests[-1])
    write_error = json.loads(outputs["w1"])["error"]
    assert f"the editor could not write {ws / 'locked.txt'}" in write_error
    assert "read-only in this editor" in write_error
    read_error = json.loads(outputs["r1"])["error"]
    assert "file not found" in read_error and "buffer is locked" in read_error
    assert "is a directory" in json.loads(outputs["r2"])["error"]
    assert str(ws) not in editor.reads, "a directory is refused before the editor is asked"
    assert (ws / "locked.txt").read_text() == "keep\n"
    assert result["stopReason"] == "end_turn"


PATCH = (
    "*** Begin Patch\n"
    "*** Update File: a.py\n@@\n-value = 'buffer'\n+value = 'patched'\n"
    "*** Update File: b.py\n@@\n-b = 1\n+b = 2\n"
    "*** Add File: pkg/c.py\n+c = 3\n"
    "*** End Patch\n"
)


async def test_apply_patch_plans_against_buffers_and_writes_through_the_editor(
    editor_daemon: tuple[Daemon, Editor], model: MockResponsesServer
) -> None:
    daemon, editor = editor_daemon
    ws = daemon.env.workspace
    (ws / "a.py").write_text("value = 'disk'\n")
    editor.open(ws / "a.py", "value = 'buffer'\n")  # the hunk only matches the buffer
    (ws / "b.py").write_text("b = 1\n")
    model.enqueue(tool_call("applyPatch", {"patch": PATCH}, call_id="p1"))
    model.enqueue(text("patched"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "patch")

    assert "Success" in tool_outputs(model.requests[-1])["p1"]
    assert dict(editor.writes) == {
        str(ws / "a.py"): "value = 'patched'\n",
        str(ws / "b.py"): "b = 2\n",
        str(ws / "pkg" / "c.py"): "c = 3\n",
    }
    assert (ws / "a.py").read_text() == "value = 'patched'\n"


async def test_a_patch_the_editor_refuses_midway_is_restored_through_the_editor(
    editor_daemon: tuple[Daemon, Editor], model: MockResponsesServer
) -> None:
    daemon, editor = editor_daemon
    ws = daemon.env.workspace
    (ws / "a.py").write_text("value = 'buffer'\n")
    (ws / "b.py").write_text("b = 1\n")
    editor.fail_writes.add(str(ws / "b.py"))
    model.enqueue(tool_call("applyPatch", {"patch": PATCH}, call_id="p1"))
    model.enqueue(text("it failed"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "patch")

    error = json.loads(tool_outputs(model.requests[-1])["p1"])["error"]
    assert "the editor could not write b.py" in error and "no change was made" in error
    assert editor.writes == [
        (str(ws / "a.py"), "value = 'patched'\n"),
        (str(ws / "a.py"), "value = 'buffer'\n"),  # restored through the editor
    ]
    assert (ws / "a.py").read_text() == "value = 'buffer'\n"
    assert not (ws / "pkg").exists(), "the add after the failure never happened"
