"""rpc/warm_up.py: steps run only while the client is quiet, and a failing step ends it."""

from __future__ import annotations

import asyncio
import logging
import os
import time

import pytest
from cody_daemon.rpc.transport import StdioChannel, open_channel
from cody_daemon.rpc.warm_up import IDLE_S, WarmUp

from tests.support.clock import ManualClock

LOGGER = "cody_daemon.rpc.warm_up"


def steps_run(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage().split(": ", 1)[1].split(" in ")[0]
        for record in caplog.records
        if record.getMessage().startswith("warm-up: ")
    ]


def test_a_talking_client_postpones_every_step(caplog: pytest.LogCaptureFixture) -> None:
    """On a manual clock: the steps run exactly when time says so, whatever the load (with
    real 1 ms sleeps a loaded machine overslept one and a step ran: 3-13 failures in 40)."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    clock = ManualClock()
    warming = WarmUp(clock, ("json", "base64"))
    warming.start()
    for _ in range(30):  # a message every millisecond: never quiet for IDLE_S
        warming.heard()
        clock.advance(IDLE_S / 3)
    assert steps_run(caplog) == []
    clock.advance(IDLE_S * 20)
    assert steps_run(caplog) == ["json", "base64"]
    assert warming.done


def test_a_step_waits_for_idle_s_of_quiet_after_the_last_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    clock = ManualClock()
    warming = WarmUp(clock, ("json",))
    warming.start()
    clock.advance(IDLE_S * 0.9)
    warming.heard()
    clock.advance(IDLE_S * 0.9)
    assert steps_run(caplog) == []
    clock.advance(IDLE_S * 0.2)
    assert steps_run(caplog) == ["json"]


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


async def test_input_arriving_during_a_step_is_heard_before_the_next_step() -> None:
    """Bytes that reach the daemon's stdin while a step runs pause the warm-up before any
    further step starts (the I/O callback runs before the due step: transport.InputReader)."""
    loop = asyncio.get_running_loop()
    client_end, daemon_end = os.pipe()
    out_read, out_write = os.pipe()
    reader, sink = await open_channel(StdioChannel(read_fd=client_end, write_fd=out_write))
    events: list[str] = []

    def run(step: str) -> None:
        events.append(step)
        if step == "a":
            os.write(daemon_end, b"Content-Length: 2\r\n\r\n{}")  # the client speaks now
        time.sleep(0.02)

    warming = WarmUp(loop, ("a", "b", "c"), run=run)
    reader.on_input = lambda: (events.append("heard"), warming.heard())
    warming.start()
    for _ in range(500):  # until it is done (no fixed sleep: a loaded machine is slower)
        if warming.done:
            break
        await asyncio.sleep(IDLE_S * 10)
    assert events[:2] == ["a", "heard"]
    assert warming.done, events  # and the rest ran once the client was quiet again
    for fd in (daemon_end, out_read):
        os.close(fd)
    await sink.close()
