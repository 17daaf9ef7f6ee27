"""The engine's live-output throttle: increments only, a timer for the rest, bounded."""

from __future__ import annotations

import asyncio

import pytest
from cody_daemon.engine.toolcalls import LiveOutput


async def test_each_send_carries_only_new_text_and_nothing_is_resent() -> None:
    sent: list[str] = []
    live = LiveOutput(sent.append, interval_s=10.0)
    pieces = [f"line {i}\n" for i in range(1000)]
    for piece in pieces:
        live.add(piece)
    live.close()
    assert "".join(sent) == "".join(pieces), "every character exactly once, in order"
    assert len(sent) == 2, "the first piece at once, the rest held for the interval"
    live.add("after close")
    assert "".join(sent) == "".join(pieces)


async def test_a_quiet_command_s_last_line_arrives_without_waiting_for_the_end() -> None:
    sent: list[str] = []
    live = LiveOutput(sent.append, interval_s=0.05)
    live.add("compiling\n")
    live.add("waiting for the linker\n")  # held: within the interval
    assert sent == ["compiling\n"]
    await asyncio.sleep(0.2)
    assert sent == ["compiling\n", "waiting for the linker\n"], "the timer sent the rest"
    live.close()


async def test_output_is_bounded_in_all_and_per_update() -> None:
    sent: list[str] = []
    live = LiveOutput(sent.append, interval_s=10.0, limit_chars=10_000, max_pending_chars=1000)
    for _ in range(100):
        live.add("x" * 500)
    live.close()
    assert live.cut
    total = "".join(sent)
    assert total.count("x") == 10_000
    assert "live output stops after 10000 characters" in total
    assert max(len(piece) for piece in sent) < 1000 + 500 + 100


@pytest.mark.parametrize("count", [100, 2000])
async def test_traffic_is_linear_in_the_output(count: int) -> None:
    """The old live output re-sent the tail on every update; increments never do."""
    sent: list[str] = []
    live = LiveOutput(sent.append, interval_s=0.0)
    line = "0123456789" * 8 + "\n"
    for _ in range(count):
        live.add(line)
    live.close()
    assert sum(len(piece) for piece in sent) == count * len(line)


async def test_a_line_written_in_two_pieces_is_sent_in_one() -> None:
    """So redaction sees a whole secret even when the pipe split it (engine/secrets.py)."""
    sent: list[str] = []
    live = LiveOutput(sent.append, interval_s=0.05)
    live.add("token=sk-live-0123")
    live.add("456789abcdef\nnext")
    assert sent == ["token=sk-live-0123456789abcdef\n"]
    await asyncio.sleep(0.15)
    assert sent[-1] == "next", "the unfinished line follows with the timer"
    live.close()
