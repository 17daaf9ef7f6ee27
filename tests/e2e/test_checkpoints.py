"""Checkpoints and rewind through the real daemon (docs/checkpoints.md): every turn can be
undone, its files (also what `exec` changed) and its conversation, and a rewind can be
undone too."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

from tests.support.checkpoints import (
    State,
    checkpoints,
    require_bwrap,
    rewind,
    turn_checkpoint,
    workspace_state,
)
from tests.support.daemon import CodyEnv, Daemon, expect_error
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

    # The replay shows the conversation as it now is, and where it was rewound.
    daemon.updates.clear()
    await daemon.request("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    shown = [
        (u["sessionUpdate"], u["content"]["text"])
        for u in daemon.session_updates(sid)
        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
    ]
    assert [text for kind, text in shown if kind == "user_message_chunk"] == [
        "first prompt",
        "third prompt",
    ]
    note = next(text for kind, text in shown if "Rewound the conversation" in text)
    assert "turn 2: “second prompt”" in note
    assert [text for _, text in shown].index(note) == 2, "between turn 1's answer and turn 3"


async def test_both_rewinds_files_and_conversation_and_redo_brings_both_back(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    model.enqueue(tool_call("writeFile", {"filePath": "one.txt", "content": "1\n"}, call_id="a"))
    model.enqueue(text("wrote one"))
    model.enqueue(tool_call("writeFile", {"filePath": "two.txt", "content": "2\n"}, call_id="b"))
    model.enqueue(text("wrote two"))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "write one")
    before_two = workspace_state(ws)
    await daemon.prompt(sid, "write two")
    after_two = workspace_state(ws)
    second = turn_checkpoint(await checkpoints(daemon, sid), 2)

    result = await rewind(daemon, sid, second["checkpointId"], "both")

    assert result["restored"] == ["two.txt"]
    assert workspace_state(ws) == before_two
    model.enqueue(text("ok"))
    await daemon.prompt(sid, "after the rewind")
    assert user_texts(model.requests[-1]) == ["write one", "after the rewind"]

    # Undo the rewind (and the turn after it): back to both turns, files and conversation.
    listing = await checkpoints(daemon, sid)
    redo = next(c for c in listing if c["checkpointId"] == result["redoCheckpointId"])
    assert redo["reason"] == "rewind" and "write two" in redo["prompt"]
    again = await rewind(daemon, sid, redo["checkpointId"], "both")

    assert again["conflicts"] == []
    assert workspace_state(ws) == after_two
    model.enqueue(text("ok"))
    await daemon.prompt(sid, "after the redo")
    assert user_texts(model.requests[-1]) == ["write one", "write two", "after the redo"]


async def test_a_file_the_user_changed_since_is_a_conflict_left_alone_until_forced(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    (ws / "B.txt").write_text("b one\n")
    model.enqueue(tool_call("writeFile", {"filePath": "A.txt", "content": "a\n"}, call_id="w"))
    model.enqueue(tool_call("applyPatch", {"patch": PATCH_B}, call_id="p"))
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "edit B")
    (ws / "B.txt").write_text("b two\nthe user's own line\n")  # the user, in their editor
    checkpoint = (await checkpoints(daemon, sid))[0]

    result = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

    assert result["conflicts"] == ["B.txt"]
    assert result["restored"] == ["A.txt"]
    assert (ws / "B.txt").read_text() == "b two\nthe user's own line\n", "not overwritten"
    assert not (ws / "A.txt").exists()

    forced = await rewind(daemon, sid, checkpoint["checkpointId"], "files", force=True)

    assert forced["restored"] == ["B.txt"] and forced["conflicts"] == []
    assert (ws / "B.txt").read_text() == "b one\n"


async def test_many_turns_survive_kill_9_and_a_rewind_to_the_third_undoes_every_later_change(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    ws = cody_env.workspace
    (ws / "log.txt").write_text("start\n")
    states: list[State] = []

    def script(turn: int) -> None:
        model.enqueue(
            tool_call(
                "writeFile",
                {"filePath": f"t{turn}.txt", "content": f"{turn}\n"},
                call_id=f"w{turn}",
            )
        )
        model.enqueue(
            tool_call(
                "exec",
                {"command": f"echo turn {turn} >> log.txt && rm -f t{turn - 1}.txt"},
                call_id=f"e{turn}",
            )
        )
        model.enqueue(text(f"turn {turn} done"))

    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session(approvalPolicy="never")
    for turn in (1, 2, 3):
        states.append(workspace_state(ws))
        script(turn)
        await first.prompt(sid, f"prompt {turn}")
    first.process.process.send_signal(signal.SIGKILL)  # between turns 3 and 4
    await first.process.process.wait()
    await first.process.connection.aclose()

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        await second.request("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        listed = await checkpoints(second, sid)
        assert [c["turn"] for c in listed] == [3, 2, 1], "listed after session/load"
        assert listed[0]["files"], "what turn 3 changed survived the kill"
        for turn in (4, 5):
            states.append(workspace_state(ws))
            script(turn)
            await second.prompt(sid, f"prompt {turn}")
        third = turn_checkpoint(await checkpoints(second, sid), 3)

        result = await rewind(second, sid, third["checkpointId"], "both")

        assert result["conflicts"] == [] and result["failed"] == []
        assert workspace_state(ws) == states[2], "every change of turns 3, 4 and 5 undone"
        model.enqueue(text("fresh"))
        await second.prompt(sid, "prompt 3 again")
        assert user_texts(model.requests[-1]) == ["prompt 1", "prompt 2", "prompt 3 again"]
    finally:
        await second.close()


async def test_a_turn_killed_mid_way_is_listed_as_interrupted_and_its_files_need_force(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Who changed what during a turn the daemon never finished is not known: its files
    count as changed by someone else."""
    cody_env.use_mock_provider(model.base_url)
    ws = cody_env.workspace
    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session(approvalPolicy="never")
    model.enqueue(tool_call("exec", {"command": "echo half > half.txt && sleep 30"}, call_id="e"))
    turn = asyncio.create_task(first.prompt(sid, "slow turn"))
    await first.wait_for((ws / "half.txt").exists)
    first.process.process.send_signal(signal.SIGKILL)
    await first.process.process.wait()
    turn.cancel()
    await first.process.connection.aclose()

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        await second.request("session/resume", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        [checkpoint] = await checkpoints(second, sid)
        assert checkpoint["interrupted"] is True
        assert checkpoint["files"] == [{"path": "half.txt", "change": "added"}]

        result = await rewind(second, sid, checkpoint["checkpointId"], "files")
        assert result["conflicts"] == ["half.txt"] and (ws / "half.txt").exists()
        forced = await rewind(second, sid, checkpoint["checkpointId"], "files", force=True)
        assert forced["restored"] == ["half.txt"] and not (ws / "half.txt").exists()
    finally:
        await second.close()


async def test_rewind_while_a_turn_runs_is_refused_as_busy_and_changes_nothing(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    model.enqueue(tool_call("writeFile", {"filePath": "a.txt", "content": "a\n"}, call_id="w"))
    model.enqueue(text("first"))
    sid = await daemon.new_session(approvalPolicy="untrusted")
    daemon.answer("allow_once")
    await daemon.prompt(sid, "first")
    checkpoint = (await checkpoints(daemon, sid))[0]
    daemon.permission_gate = asyncio.Event()  # the next approval waits: the turn runs
    model.enqueue(tool_call("exec", {"command": "touch b.txt"}, call_id="x"))
    model.enqueue(text("second"))
    turn = asyncio.create_task(daemon.prompt(sid, "second"))
    await daemon.wait_for(lambda: len(daemon.permission_requests) == 2)

    await expect_error(rewind(daemon, sid, checkpoint["checkpointId"], "both"), -32011)

    daemon.permission_gate.set()
    await turn
    assert (ws / "a.txt").exists() and (ws / "b.txt").exists(), "the refused rewind did nothing"
    assert [c["turn"] for c in await checkpoints(daemon, sid)] == [2, 1]


async def test_ignored_large_and_nested_repository_files_are_not_covered_and_left_alone(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_text("old object\n")
    (ws / "x.log").write_text("old log\n")
    (ws / "big.bin").write_bytes(b"\0" * (6 * 1024 * 1024))
    (ws / "tracked.txt").write_text("one\n")
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    (nested / "f.txt").write_text("nested\n")
    model.enqueue(
        tool_call(
            "exec",
            {
                "command": "echo more >> x.log && echo new > build/out.o && echo two > tracked.txt"
                " && echo changed > vendor/lib/f.txt && head -c 6291456 /dev/zero > big2.bin"
            },
            call_id="e",
        )
    )
    model.enqueue(text("done"))
    sid = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(sid, "change covered and uncovered files")
    after = workspace_state(ws)
    [checkpoint] = await checkpoints(daemon, sid)

    assert checkpoint["files"] == [{"path": "tracked.txt", "change": "modified"}]
    not_covered = {item["path"]: item["why"] for item in checkpoint["notCovered"]}
    assert "big.bin" in not_covered and "big2.bin" in not_covered
    assert "larger than" in not_covered["big.bin"]
    assert not_covered.get("vendor/lib") == "nested git repository"
    assert "x.log" not in not_covered, "ignored files are left out silently"

    result = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

    assert result["restored"] == ["tracked.txt"]
    now = workspace_state(ws)
    assert now["tracked.txt"][1] == b"one\n"
    for path in ("x.log", "build/out.o", "big.bin", "big2.bin", "vendor/lib/f.txt"):
        assert now[path] == after[path], f"{path} is not covered: left as it was"


async def test_deleting_a_session_prunes_the_snapshots_only_it_kept(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    secret = "only session A ever had this text\n"
    blob = subprocess.run(
        ["git", "hash-object", "--stdin"], input=secret, capture_output=True, text=True, check=True
    ).stdout.strip()
    model.enqueue(tool_call("writeFile", {"filePath": "a.txt", "content": secret}, call_id="a"))
    model.enqueue(text("a"))
    first = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(first, "write a")
    (ws / "a.txt").unlink()
    model.enqueue(tool_call("writeFile", {"filePath": "b.txt", "content": "b\n"}, call_id="b"))
    model.enqueue(text("b"))
    second = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(second, "write b")
    [store] = list((daemon.env.cody_home / "checkpoints").iterdir())

    def stored() -> bool:
        probe = subprocess.run(
            ["git", "cat-file", "-e", blob],
            env={"GIT_DIR": str(store)},
            capture_output=True,
            check=False,
        )
        return probe.returncode == 0

    assert stored()

    await daemon.request("session/delete", {"sessionId": first})

    await daemon.wait_for(lambda: not stored())
    [checkpoint] = await checkpoints(daemon, second)
    result = await rewind(daemon, second, checkpoint["checkpointId"], "files")
    assert result["restored"] == ["b.txt"], "the other session's checkpoints still work"


async def test_a_session_whose_only_turn_was_undone_is_kept_when_it_closes(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """`/undo` of a chat's only turn, then quitting, deleted the session's file: its
    conversation was empty again, so closing it took it for a session never prompted. Its
    checkpoints (the redo of the undo among them) and its children went with it."""
    ws = daemon.env.workspace
    model.enqueue(tool_call("writeFile", {"filePath": "A.txt", "content": "a\n"}, call_id="w"))
    model.enqueue(text("wrote it"))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "write A")
    undone = await rewind(
        daemon, sid, turn_checkpoint(await checkpoints(daemon, sid), 1)["checkpointId"], "both"
    )
    assert not (ws / "A.txt").exists()

    await daemon.request("session/close", {"sessionId": sid})

    listed = await daemon.request("session/list", {})
    assert sid in [s["sessionId"] for s in listed["sessions"]], "the session is still saved"
    await daemon.request("session/resume", {"sessionId": sid, "cwd": str(ws)})
    redo = await rewind(daemon, sid, undone["redoCheckpointId"], "both")
    assert redo["conflicts"] == []
    assert (ws / "A.txt").read_text() == "a\n", "the undo can still be undone"
    # Undone again, and deleted while live: the file goes (the close kept it).
    first = turn_checkpoint(await checkpoints(daemon, sid), 1)["checkpointId"]
    await rewind(daemon, sid, first, "both")
    await daemon.request("session/delete", {"sessionId": sid})
    assert sid not in [
        s["sessionId"] for s in (await daemon.request("session/list", {}))["sessions"]
    ]
