"""Checkpoints where a session's directory changes (engine/workdir.py): gone, relocated, or
never saved (ephemeral). Through the real daemon; docs/checkpoints.md "Where the session runs".
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from tests.support.checkpoints import checkpoints, rewind, turn_checkpoint
from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call


def write_turn(model: MockResponsesServer, path: str, content: str, call_id: str) -> None:
    model.enqueue(tool_call("writeFile", {"filePath": path, "content": content}, call_id=call_id))
    model.enqueue(text("written"))


def refs_of(env: CodyEnv, session_id: str) -> list[Path]:
    store = env.cody_home / "checkpoints"
    return [ref for ref in store.glob(f"*/refs/cody/{session_id}") if ref.is_file()]


def rewind_events(session_file: Path) -> list[dict]:
    lines = [json.loads(line) for line in session_file.read_text().splitlines() if line]
    return [line for line in lines if line["payload"].get("kind") == "rewind"]


async def test_a_session_whose_directory_is_gone_lists_its_checkpoints_and_rewinds_nothing(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    gone = daemon.env.root / "gone"
    gone.mkdir()
    sid = await daemon.new_session(gone)
    write_turn(model, "A.txt", "a\n", "w1")
    await daemon.prompt(sid, "write A")
    await daemon.request("session/close", {"sessionId": sid})
    shutil.rmtree(gone)

    loaded = await daemon.request(
        "session/resume", {"sessionId": sid, "cwd": str(daemon.env.workspace), "mcpServers": []}
    )
    listed = await checkpoints(daemon, sid)
    first = turn_checkpoint(listed, 1)
    assert first["files"] == [{"path": "A.txt", "change": "added"}]

    error = await expect_error(rewind(daemon, sid, first["checkpointId"], "both"), -32602)

    assert "no longer exists" in error.message and "relocate" in error.message
    assert not gone.exists(), "nothing was made again where the session was"
    assert not rewind_events(Path(loaded["_meta"]["cody"]["sessionFile"]))


async def test_a_relocated_session_rewinds_its_new_directory_only(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """Its old checkpoints' snapshots are in the old workspace's store: a rewind to one is a
    clear error that changes nothing (never the old tree written into the new directory);
    its checkpoints taken after the move rewind the new directory."""
    old, new = daemon.env.root / "old", daemon.env.root / "new"
    old.mkdir()
    new.mkdir()
    (new / "A.txt").write_text("mine\n")
    sid = await daemon.new_session(old)
    write_turn(model, "A.txt", "from the old turn\n", "w1")
    await daemon.prompt(sid, "write A")
    await daemon.request("session/close", {"sessionId": sid})
    await daemon.request(
        "session/resume",
        {
            "sessionId": sid,
            "cwd": str(new),
            "mcpServers": [],
            "_meta": {"cody": {"relocate": True}},
        },
    )

    old_turn = turn_checkpoint(await checkpoints(daemon, sid), 1)
    error = await expect_error(rewind(daemon, sid, old_turn["checkpointId"], "files"), -32602)

    assert "another directory" in error.message
    assert (new / "A.txt").read_text() == "mine\n"
    assert (old / "A.txt").read_text() == "from the old turn\n"

    write_turn(model, "B.txt", "b\n", "w2")
    await daemon.prompt(sid, "write B here")
    new_turn = turn_checkpoint(await checkpoints(daemon, sid), 2)
    result = await rewind(daemon, sid, new_turn["checkpointId"], "files")
    assert result["restored"] == ["B.txt"]
    assert not (new / "B.txt").exists()
    assert (new / "A.txt").read_text() == "mine\n"


async def test_an_ephemeral_sessions_snapshots_go_when_it_closes_or_the_daemon_ends(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"')
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        closed = await daemon.new_session(ephemeral=True)
        write_turn(model, "A.txt", "a\n", "w1")
        await daemon.prompt(closed, "write A")
        assert (await checkpoints(daemon, closed))[0]["files"], "it could be rewound while live"
        assert refs_of(cody_env, closed)
        await daemon.request("session/close", {"sessionId": closed})
        for _ in range(200):  # pruned in the background
            if not refs_of(cody_env, closed):
                break
            await asyncio.sleep(0.05)
        assert not refs_of(cody_env, closed)

        left = await daemon.new_session(ephemeral=True)
        write_turn(model, "B.txt", "b\n", "w2")
        await daemon.prompt(left, "write B")
        kept = await daemon.new_session()
        write_turn(model, "C.txt", "c\n", "w3")
        await daemon.prompt(kept, "write C")
        assert refs_of(cody_env, left) and refs_of(cody_env, kept)
    finally:
        await daemon.close()

    assert not refs_of(cody_env, left), "dropped at shutdown"
    assert refs_of(cody_env, kept), "a saved session keeps its checkpoints"
