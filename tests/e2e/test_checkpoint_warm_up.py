"""The warm-up of a workspace's checkpoint store, through the real daemon
(engine/checkpoints.py `Checkpoints.warm`, checkpoints/repo.py `ShadowRepo.warm`): a new
session's workspace is staged in the background, so the first turn's snapshot is
incremental; the checkpoint is still the tree as the turn found it; reading an old session
makes no store."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.checkpoints import checkpoints, rewind, turn_checkpoint
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call

pytestmark = pytest.mark.e2e


def store_of(env: CodyEnv, workspace: Path) -> Path | None:
    real = os.path.realpath(workspace)
    for store in (env.cody_home / "checkpoints").glob("*"):
        marker = store / "workspace"
        if marker.is_file() and marker.read_text().strip() == real:
            return store
    return None


def left_to_stage(store: Path, workspace: Path) -> list[str]:
    """What a snapshot would still have to stage (git's own answer, from the store's index)."""
    out = subprocess.run(
        ["git", "ls-files", "-m", "-d", "-o", "--exclude-standard"],
        env={
            "PATH": os.environ["PATH"],
            "GIT_DIR": str(store),
            "GIT_WORK_TREE": str(workspace),
            "GIT_INDEX_FILE": str(store / "index"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
        },
        cwd=store,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


async def staged(env: CodyEnv, workspace: Path) -> Path:
    """The workspace's store once the warm-up staged every file (it runs in the background)."""
    for _ in range(600):
        store = store_of(env, workspace)
        if (
            store is not None
            and (store / "index").is_file()
            and not left_to_stage(store, workspace)
        ):
            return store
        await asyncio.sleep(0.05)
    raise AssertionError("the workspace was never staged")


async def test_a_new_sessions_workspace_is_staged_ahead_and_the_checkpoint_is_the_tree_at_the_turn(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    for index in range(40):
        (ws / f"f{index}.txt").write_text(f"{index}\n")
    sid = await daemon.new_session(approvalPolicy="never")

    store = await staged(daemon.env, ws)

    assert [ref for ref in (store / "refs").rglob("*") if ref.is_file()] == [], "no commit yet"
    (ws / "f1.txt").write_text("the user's edit, before the turn\n")
    model.enqueue(tool_call("writeFile", {"filePath": "b.txt", "content": "b\n"}, call_id="w"))
    model.enqueue(text("wrote b"))
    await daemon.prompt(sid, "write b")

    first = turn_checkpoint(await checkpoints(daemon, sid), 1)
    assert first["files"] == [{"path": "b.txt", "change": "added"}]
    result = await rewind(daemon, sid, first["checkpointId"], "files")
    assert result["restored"] == ["b.txt"] and result["conflicts"] == []
    assert not (ws / "b.txt").exists()
    assert (ws / "f1.txt").read_text() == "the user's edit, before the turn\n"


async def test_reading_an_old_session_makes_no_store_for_its_workspace(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Its workspace had none (the session is from before checkpoints, or they were off):
    a session/load to read it hashes nothing; a new session does."""
    old, new = cody_env.root / "old", cody_env.root / "new"
    old.mkdir()
    new.mkdir()
    (old / "a.txt").write_text("a\n")
    (new / "b.txt").write_text("b\n")
    cody_env.use_mock_provider(model.base_url, extra="checkpoints = false")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(old)
        model.enqueue(text("hello"))
        await daemon.prompt(sid, "hi")
    finally:
        await daemon.close()

    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        await daemon.request("session/load", {"sessionId": sid, "cwd": str(old), "mcpServers": []})
        await daemon.new_session(new)
        await staged(cody_env, new)
        assert store_of(cody_env, old) is None
    finally:
        await daemon.close()
