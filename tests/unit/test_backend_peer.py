"""The one line-JSON peer both backends speak through (backends/peer.py), against a real child
process: answers reach their request whatever order they come in, everything else is queued
in order, and when the CLI babbles or exits every waiter fails with the classified error, the
inbox after what was queued before it. (tests/e2e/test_backend_failures.py does the same
through the daemon with both backends.)"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.backends.peer import CliEnded, JsonLinePeer, Message

pytestmark = pytest.mark.timeout(30)

CLI = r"""
import json, sys
first = json.loads(sys.stdin.readline())
second = json.loads(sys.stdin.readline())
def say(message):
    print(json.dumps(message), flush=True)
say({"method": "note", "n": 1})
say({"id": second["id"], "result": "second"})   # answers out of order
say({"id": 999, "result": "nobody asked"})      # an answer nobody waits for is dropped
say({"method": "note", "n": 2})
say({"id": first["id"], "result": "first"})
sys.stdin.readline()
print("Welcome to the agent!", flush=True)      # not the protocol
sys.stdin.readline()
"""


def _answer_id(message: Message) -> Any:
    return message["id"] if "method" not in message and "id" in message else None


async def _peer(tmp_path: Path, script: str) -> JsonLinePeer:
    peer = JsonLinePeer(
        "codex",
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        answer_id=_answer_id,
    )
    await peer.start()
    return peer


async def _ask(peer: JsonLinePeer) -> Message:
    request_id = peer.next_id()
    message = {"id": request_id, "method": "ask"}
    return await peer.request(request_id, message, timeout_s=10, what="ask")


async def test_answers_find_their_request_and_the_rest_keeps_its_order(tmp_path: Path) -> None:
    peer = await _peer(tmp_path, CLI)
    try:
        first = asyncio.create_task(_ask(peer))
        await asyncio.sleep(0)
        second = asyncio.create_task(_ask(peer))
        assert (await first)["result"] == "first"
        assert (await second)["result"] == "second"
        assert (await peer.next_message())["n"] == 1
        assert (await peer.next_message())["n"] == 2

        waiting = asyncio.create_task(_ask(peer))  # the CLI babbles instead of answering
        with pytest.raises(CliEnded) as ended:
            await waiting
        assert ended.value.error.kind == "provider"
        assert "not its protocol" in ended.value.error.message
        assert "Welcome to the agent!" in ended.value.error.message
        with pytest.raises(CliEnded):  # the inbox says so too, and so does a new request
            await peer.next_message()
        with pytest.raises(CliEnded):
            await _ask(peer)
        assert not peer.alive
    finally:
        await peer.close()


async def test_a_cli_that_exits_fails_every_waiter_with_its_stderr(tmp_path: Path) -> None:
    script = (
        "import sys\nsys.stdin.readline()\n"
        "print('Error: Invalid API key', file=sys.stderr)\nsys.exit(3)\n"
    )
    peer = await _peer(tmp_path, script)
    try:
        with pytest.raises(CliEnded) as ended:
            await _ask(peer)
        assert ended.value.error.kind == "auth", "classified from what the CLI said"
        assert "exited with code 3" in ended.value.error.message
    finally:
        await peer.close()


async def test_a_cli_that_cannot_start_is_a_classified_error(tmp_path: Path) -> None:
    from cody_daemon.errors import ProviderError

    peer = JsonLinePeer(
        "claude",
        [str(tmp_path / "missing")],
        cwd=tmp_path,
        env={},
        answer_id=_answer_id,
    )
    with pytest.raises(ProviderError, match="cannot start"):
        await peer.start()
