"""Session files attacked (issue 20.6): a file that names its own working directory.

A session file of Codex, Claude Code or Cody may come from anywhere (a colleague's export, a
downloaded transcript, a file another program wrote): what it says it ran in must never
become the workspace approvals and the sandbox are measured against.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

pytestmark = pytest.mark.reliability

CLIENT = [sys.executable, "-m", "cody_client"]


def claude_session(path: Path, *, cwd: str, prompt: str = "hello") -> Path:
    """A minimal Claude Code session file that says it ran in `cwd`."""
    session_id = "5f0c1d2e-0000-4000-8000-00000000beef"
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": session_id,
            "cwd": cwd,
            "timestamp": "2026-11-22T04:14:33.059Z",
            "message": {"role": "user", "content": prompt},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": session_id,
            "cwd": cwd,
            "timestamp": "2026-11-22T04:14:34.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


async def test_history_import_never_makes_the_files_cwd_the_workspace(
    daemon: Daemon, model: MockResponsesServer, tmp_path: Path
) -> None:
    hostile = claude_session(tmp_path / "session.jsonl", cwd="/")
    error = await expect_error(
        daemon.request("_cody/history/import", {"path": str(hostile)}), -32602
    )
    assert "cwd" in error.message, error.message
    assert (await daemon.request("session/list", {}))["sessions"] == []

    workspace = str(daemon.env.workspace)
    result = await daemon.request(
        "_cody/history/import",
        {"path": str(hostile), "cwd": workspace, "_meta": {"cody": {"approvalPolicy": "never"}}},
    )
    assert result["imported"]["cwd"] == workspace
    assert result["imported"]["sourceCwd"] == "/", "reported, not used"
    sid = result["sessionId"]
    model.enqueue(tool_call("exec", {"command": ["pwd"]}, call_id="call_pwd"))
    model.enqueue(text("done"))
    await daemon.prompt(sid, "where am I?")
    assert tool_outputs(model.requests[-1])["call_pwd"].strip().endswith(workspace)
    listed = (await daemon.request("session/list", {}))["sessions"]
    assert [(s["sessionId"], s["cwd"]) for s in listed] == [(sid, workspace)]


async def run_client(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT, *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_cody_client_history_import_works_in_the_current_directory_not_the_files(
    cody_env: CodyEnv, model: MockResponsesServer, tmp_path: Path
) -> None:
    cody_env.use_mock_provider(model.base_url)
    env: dict[str, Any] = {**cody_env.env, "CODY_DAEMON_SOCKET": ""}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hostile = claude_session(tmp_path / "session.jsonl", cwd=str(elsewhere))
    code, out, err = await run_client(env, cody_env.workspace, "history", "import", str(hostile))
    assert code == 0, err
    assert f"in {cody_env.workspace}." in out, out
    assert f"It ran in {elsewhere}" in out, "the user is told where it ran"
    assert f"--cwd {cody_env.workspace}" in out
