"""rpc/warm_up.py: steps run only while the client is quiet, and a failing step ends it."""

from __future__ import annotations

import asyncio
import logging

import pytest
from cody_daemon.rpc.warm_up import IDLE_S, WarmUp

LOGGER = "cody_daemon.rpc.warm_up"


def steps_run(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage().split(": ", 1)[1].split(" in ")[0]
        for record in caplog.records
        if record.getMessage().startswith("warm-up: ")
    ]


async def test_a_talking_client_postpones_every_step(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    warming = WarmUp(asyncio.get_running_loop(), ("json", "base64"))
    warming.start()
    for _ in range(30):  # a message every millisecond: never quiet for IDLE_S
        warming.heard()
        await asyncio.sleep(IDLE_S / 3)
    assert steps_run(caplog) == []
    await asyncio.sleep(IDLE_S * 20)
    assert steps_run(caplog) == ["json", "base64"]
    assert warming.done


async def test_a_failing_step_ends_the_warm_up(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    warming = WarmUp(asyncio.get_running_loop(), ("cody_no_such_module", "json"))
    warming.start()
    await asyncio.sleep(IDLE_S * 20)
    assert warming.done
    assert steps_run(caplog) == []
    assert any("stopped at cody_no_such_module" in r.getMessage() for r in caplog.records)


async def test_stop_cancels_what_is_left(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    warming = WarmUp(asyncio.get_running_loop(), ("json",))
    warming.start()
    warming.stop()
    await asyncio.sleep(IDLE_S * 20)
    assert steps_run(caplog) == []
