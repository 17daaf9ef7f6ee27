"""Checkpoints and rewind through the real daemon (docs/checkpoints.md): every turn can be
undone, its files (also what `exec` changed) and its conversation, and a rewind can be
undone too."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.checkpoints import (
    checkpoints,
    require_bwrap,
    rewind,
    turn_checkpoint,
    workspace_state,
)
from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import user_texts

PATCH_B = "*** Begin Patch\n*** Update File: B.txt\n@@\n-b one\n+b two\n*** End Patch\n"


def seed(ws: Path) -> None:
    (ws / "B.txt").write_text("b one\n")
    os.chmod(ws / "B.txt", 0o640)
    (ws / "D.sh").write_text("#!/bin/sh\necho d\n")
    os.chmod(ws / "D.sh", 0o755)
    (ws / "src").mkdir()
    (ws / "src" / "keep.py").write_text("x = 1\n")


def script_changing_turn(model: MockResponsesServer) -> None:
    """writeFile A, applyPatch B, exec creates C (in a new directory) and deletes D."""
    model.enqueue(tool_call("writeFile", {"filePath": "A.txt", "content": "a\n"}, call_id="w"))
    model.enqueue(tool_call("applyPatch", {"patch": PATCH_B}, call_id="p"))
    model.enqueue(
        tool_call("exec", {"command": "mkdir -p out && echo c > out/C.txt && rm D.sh"}, call_id="e")
    )
    model.enqueue(text("changed"))


async def test_a_turn_of_write_patch_and_exec_is_undone_exactly_and_redone(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    require_bwrap(daemon.env)
    ws = daemon.env.workspace
    seed(ws)
    before = workspace_state(ws)
    script_changing_turn(model)
    sid = await daemon.new_session()

    await daemon.prompt(sid, "change things\nwith a second line")

    after = workspace_state(ws)
    assert "A.txt" in after and "out/C.txt" in after and "D.sh" not in after
    listing = await checkpoints(daemon, sid)
    assert len(listing) == 1
    checkpoint = listing[0]
    assert checkpoint["prompt"] == "change things"
    assert checkpoint["turn"] == 1 and checkpoint["inConversation"] is True
    assert {(f["path"], f["change"]) for f in checkpoint["files"]} == {
        ("A.txt", "added"),
        ("B.txt", "modified"),
        ("out/C.txt", "added"),
        ("D.sh", "deleted"),
    }

    result = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

    assert sorted(result["restored"]) == ["A.txt", "B.txt", "D.sh", "out/C.txt"]
    assert result["conflicts"] == []
    assert workspace_state(ws) == before, "contents, modes, D back, A and C gone"
    assert not (ws / "out").exists(), "the directory the turn made is gone with its file"

    redo = await rewind(daemon, sid, result["redoCheckpointId"], "files")

    assert redo["conflicts"] == []
    assert workspace_state(ws) == after, "the rewind itself was undone"


async def test_conversation_rewind_truncates_what_the_next_request_sees(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    model.enqueue(text("one"))
    model.enqueue(tool_call("writeFile", {"filePath": "two.txt", "content": "2\n"}, call_id="w"))
    model.enqueue(text("two"))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "first prompt")
    await daemon.prompt(sid, "second prompt")
    second = turn_checkpoint(await checkpoints(daemon, sid), 2)

    result = await rewind(daemon, sid, second["checkpointId"], "conversation")

    assert result["restored"] == [] and (ws / "two.txt").exists(), "files untouched"
    model.enqueue(text("three"))
    await daemon.prompt(sid, "third prompt")
    assert user_texts(model.requests[-1]) == ["first prompt", "third prompt"]
    listing = await checkpoints(daemon, sid)
    assert turn_checkpoint(listing, 2)["prompt"] == "third prompt"
    old = next(c for c in listing if c["checkpointId"] == second["checkpointId"])
    assert old["inConversation"] is False
