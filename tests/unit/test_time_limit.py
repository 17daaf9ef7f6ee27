"""The engine's per-call time limit (engine/time_limit.py), on real coroutines."""

from __future__ import annotations

import asyncio

import pytest
from cody_daemon.engine import time_limit
from cody_daemon.engine.time_limit import run_with_time_limit
from cody_daemon.tools.base import ToolError


async def test_a_call_within_its_limit_returns_its_result() -> None:
    async def quick() -> str:
        return "done"

    assert await run_with_time_limit(quick(), 5, tool="t", setting="s") == "done"


async def test_a_call_past_its_limit_is_cancelled_and_fails_clearly() -> None:
    cleaned = asyncio.Event()

    async def slow() -> str:
        try:
            await asyncio.sleep(60)
        finally:
            cleaned.set()
        return "late"

    with pytest.raises(ToolError) as failure:
        await run_with_time_limit(
            slow(), 0.1, tool="grepFiles", setting="[tools.grepFiles] timeout_s"
        )
    assert failure.value.message == (
        "grepFiles timed out after 0.1 s and was stopped; if it needs longer, raise "
        "[tools.grepFiles] timeout_s"
    )
    assert failure.value.raw_output == {"timedOut": True, "timeoutS": 0.1}
    assert cleaned.is_set(), "the call's own cleanup ran before the failure was reported"


async def test_a_call_that_ignores_cancellation_is_abandoned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(time_limit, "STOP_GRACE_S", 0.1)
    release = asyncio.Event()

    async def stubborn() -> str:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # swallows every cancellation
        return "finally"

    with pytest.raises(ToolError, match="timed out after 0.1 s"):
        await run_with_time_limit(stubborn(), 0.1, tool="t", setting="s")
    release.set()
    await asyncio.sleep(0)


async def test_cancelling_the_turn_cancels_the_call_and_waits_for_its_cleanup() -> None:
    started, cleaned = asyncio.Event(), asyncio.Event()

    async def tool() -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.05)  # e.g. killing and reaping a process
            cleaned.set()
        return "never"

    turn = asyncio.create_task(run_with_time_limit(tool(), 30, tool="t", setting="s"))
    await started.wait()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert cleaned.is_set()
