"""Every script in examples/ runs against the real daemon and prints what it promises."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.support.daemon import CodyEnv

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def run_example(env: CodyEnv, name: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / name),
        str(env.workspace),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env.env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_quickstart(cody_env: CodyEnv) -> None:
    (cody_env.workspace / "hello.txt").write_text("hi\n")
    out = await run_example(cody_env, "quickstart.py")
    assert "hello.txt" in out and "[stop: end_turn]" in out


async def test_stream_and_approve(cody_env: CodyEnv) -> None:
    out = await run_example(cody_env, "stream_and_approve.py")
    assert "[approval] echo hello from a script -> Allow" in out
    assert "hello from a script" in out
    assert "[approval] Write ../notes.txt -> Deny" in out
    assert "User denied approval: this script only runs read-only commands" in out
    assert not (cody_env.workspace.parent / "notes.txt").exists()


async def test_sync_script(cody_env: CodyEnv) -> None:
    out = await run_example(cody_env, "sync_script.py")
    assert "stop: end_turn" in out and "saved sessions: 1" in out
