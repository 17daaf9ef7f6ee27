"""writeStdin goes through the approval policy like exec (issue 26 with issue 23's policy):
input to a process in the sandbox is contained by it, input to a process the user let out of
the sandbox asks, and an "always" answer covers that one process only. Through the engine
(tests/support/engine.py): the real SessionManager, tools, approvals and processes."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cody_daemon.policy.sandbox import bwrap_path

from tests.support.engine import EngineHarness, tool_outputs
from tests.support.mock_responses import text, tool_call


def require_bwrap() -> None:
    bwrap_path.cache_clear()
    if bwrap_path() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI but is not usable")
        pytest.skip("bubblewrap (bwrap) is not usable on this machine")


@pytest.fixture
async def engine(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[EngineHarness]:
    config = getattr(request, "param", "")
    async with EngineHarness(tmp_path, config=config) as harness:
        yield harness


def repl(call_id: str, **extra: object) -> object:
    return tool_call(
        "exec", {"command": ["python3", "-i", "-q"], "yieldMs": 300, **extra}, call_id=call_id
    )


def write(call_id: str, process_id: int, chars: str) -> object:
    return tool_call(
        "writeStdin",
        {"processId": process_id, "chars": chars, "waitMs": 10_000},
        call_id=call_id,
    )


async def test_input_to_a_sandboxed_process_runs_unasked_under_on_request(
    engine: EngineHarness,
) -> None:
    require_bwrap()
    sid = await engine.new_session()
    engine.model.enqueue(repl("r"))
    engine.model.enqueue(write("w", 1, "print(6*7)\n"))
    engine.model.enqueue(text("42"))
    await engine.prompt(sid, "compute")
    assert "42" in tool_outputs(engine.model.requests[-1])["w"]
    assert engine.link.approvals == [], "the sandbox contains the process and its input"


@pytest.mark.parametrize("engine", ['approval_policy = "untrusted"'], indirect=True)
async def test_untrusted_asks_for_every_input(engine: EngineHarness) -> None:
    require_bwrap()
    sid = await engine.new_session()
    engine.model.enqueue(repl("r"))
    engine.model.enqueue(write("w", 1, "print(6*7)\n"))
    engine.model.enqueue(text("asked"))
    engine.link.answer("allow_once", "reject_once")
    await engine.prompt(sid, "compute")
    titles = [request.title for _, request in engine.link.approvals]
    assert titles[1] == "Write to process 1: 'print(6*7)\\n'"
    assert "User denied approval" in tool_outputs(engine.model.requests[-1])["w"]


async def test_input_to_a_process_outside_the_sandbox_asks_and_always_covers_it_alone(
    engine: EngineHarness,
) -> None:
    require_bwrap()
    sid = await engine.new_session()
    outside = {"escalate": True, "justification": "it needs the network"}
    engine.model.enqueue(repl("r1", **outside), repl("r2", **outside))
    engine.model.enqueue(write("w1", 1, "print(1+1)\n"))
    engine.model.enqueue(write("w2", 1, "print(2+2)\n"))
    engine.model.enqueue(write("w3", 2, "print(3+3)\n"))
    engine.model.enqueue(text("done"))
    # two escalations, then "always" for process 1's input, then process 2's input asks again
    engine.link.answer("allow_once", "allow_once", "allow_session", "reject_once")
    await engine.prompt(sid, "compute outside")
    outputs = tool_outputs(engine.model.requests[-1])
    assert "2" in outputs["w1"] and "4" in outputs["w2"]
    assert "User denied approval" in outputs["w3"]
    asked = [request for _, request in engine.link.approvals]
    assert [r.title for r in asked[2:]] == [
        "Write to process 1: 'print(1+1)\\n'",
        "Write to process 2: 'print(3+3)\\n'",
    ]
    preview = asked[2].content[0].content.text  # type: ignore[union-attr]
    assert "WARNING: this process runs WITHOUT a sandbox" in preview
