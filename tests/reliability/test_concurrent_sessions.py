"""50 sessions streaming at once through one daemon: no update lost or misrouted (issue 8).

Each session's answer is a distinct text whose every word names its answer; the mock model
serves them in whatever order the requests arrive. Every session must receive exactly one
complete answer, in order, with no word of another; every answer goes to exactly one
session; and each session file holds what its client was shown. p95 latency under this
load is measured by `bench/run.py concurrent` (bench/README.md).
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text

SESSIONS = 50
WORDS = 300


def answer(index: int) -> str:
    return "".join(f"a{index}w{word} " for word in range(WORDS))


@pytest.mark.timeout(180)
async def test_50_sessions_streaming_at_once_lose_and_misroute_nothing(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sids = [await daemon.new_session() for _ in range(SESSIONS)]
        answers = {answer(index) for index in range(SESSIONS)}
        for value in answers:
            model.enqueue(text(value, chunks=WORDS), delay_s=0.002)
        results = await asyncio.wait_for(
            asyncio.gather(*(daemon.prompt(sid, "stream") for sid in sids)), 150
        )
        assert all(r["stopReason"] == "end_turn" for r in results)

        received = {sid: daemon.agent_text(sid) for sid in sids}
        assert set(received.values()) == answers, "each answer reached exactly one session"
        for sid, got in received.items():
            owners = set(re.findall(r"a(\d+)w", got))
            assert len(owners) == 1, f"{sid} got words of answers {sorted(owners)}"
        updates = [u for u in daemon.updates if "sessionId" in u]
        assert {u["sessionId"] for u in updates} <= set(sids)

        for sid in sids:
            [path] = (cody_env.cody_home / "sessions").glob(f"*/*/*/rollout-*-{sid}.jsonl")
            saved = "".join(
                part["text"]
                for line in map(json.loads, path.read_text().splitlines())
                if line["type"] == "response_item" and line["payload"].get("role") == "assistant"
                for part in line["payload"]["content"]
            )
            assert saved == received[sid]
    finally:
        await daemon.close()
