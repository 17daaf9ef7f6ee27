"""`cody-client web`: starts a daemon serving the page (and the per-user socket) when none
does, prints the address with the token in its fragment, and a second run reuses the
running daemon; Ctrl-C stops it and its record goes away."""

from __future__ import annotations

import asyncio
import re
import signal
import sys

import pytest
from websockets.asyncio.client import connect

from tests.support.daemon import CodyEnv
from tests.support.warm_daemon import short_runtime_dir, warm_env

pytestmark = pytest.mark.e2e

CLIENT = [sys.executable, "-m", "cody_client"]
ADDRESS = re.compile(r"Cody in the browser: (http://127\.0\.0\.1:(\d+)/)#token=([A-Za-z0-9_-]{43})")


async def test_cody_client_web_serves_the_page_and_a_second_run_reuses_it(
    cody_env: CodyEnv,
) -> None:
    env = warm_env(cody_env, short_runtime_dir())
    first = await asyncio.create_subprocess_exec(
        *CLIENT,
        "web",
        "--no-open",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert first.stdout is not None
    line = (await asyncio.wait_for(first.stdout.readline(), 30)).decode()
    found = ADDRESS.search(line)
    assert found, line
    base, port, token = found.groups()
    assert token == (cody_env.cody_home / "web" / "token").read_text().strip()
    async with connect(f"ws://127.0.0.1:{port}/rpc?token={token}") as ws:
        await ws.send(
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
        )
        assert '"agentInfo"' in await asyncio.wait_for(ws.recv(), 10)

    second = await asyncio.create_subprocess_exec(
        *CLIENT,
        "web",
        "--no-open",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(second.communicate(), 30)
    assert second.returncode == 0
    again = ADDRESS.search(out.decode())
    assert again and again.group(1) == base and again.group(3) == token

    first.send_signal(signal.SIGINT)
    await asyncio.wait_for(first.wait(), 30)
    assert not (cody_env.cody_home / "web" / "listening.json").exists()
