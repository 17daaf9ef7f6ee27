"""A Codex CLI or Claude Code session's turns are checkpointed too: the CLI changes files
the daemon never sees written, and a rewind restores them (the conversation is the CLI's
own: only files can be rewound). The real pinned CLIs, offline (tests/support/backend_agents.py)."""

from __future__ import annotations

import pytest

from tests.support.backend_agents import KINDS, BackendKind, BackendRig
from tests.support.checkpoints import checkpoints, rewind, workspace_state
from tests.support.daemon import CodyEnv, Daemon, expect_error

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_backend_turn_is_undone_by_a_files_rewind(
    kind: BackendKind, cody_env: CodyEnv
) -> None:
    ws = cody_env.workspace
    (ws / "old.txt").write_text("old\n")
    async with BackendRig.open(kind, cody_env) as rig:
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            result = await daemon.request(
                "session/new",
                {"cwd": str(ws), "mcpServers": [], "_meta": {"cody": {"backend": kind}}},
            )
            sid = result["sessionId"]
            before = workspace_state(ws)
            rig.run("echo made > made.txt && rm old.txt", "call_1")
            rig.say("made one, removed the other")
            daemon.answer("allow_once")
            await daemon.prompt(sid, "change the files")
            assert (ws / "made.txt").exists() and not (ws / "old.txt").exists()
            [checkpoint] = await checkpoints(daemon, sid)
            assert {(f["path"], f["change"]) for f in checkpoint["files"]} >= {
                ("made.txt", "added"),
                ("old.txt", "deleted"),
            }

            await expect_error(rewind(daemon, sid, checkpoint["checkpointId"], "both"), -32602)
            done = await rewind(daemon, sid, checkpoint["checkpointId"], "files")

            assert {"made.txt", "old.txt"} <= set(done["restored"])
            assert {k: v for k, v in workspace_state(ws).items() if not k.startswith(".")} == {
                k: v for k, v in before.items() if not k.startswith(".")
            }
        finally:
            await daemon.close()
