"""A turn sends nothing after it returned (then the prompt is answered), even when a tool
ignores its cancellation and keeps writing output and plans.

The engine is driven in process: a scripted model and a recording client link
(tests/support/engine.py), and a tool that misbehaves on purpose (the daemon's own tools stop when cancelled; MCP servers and future
tools may not). The end-to-end ordering checks are in tests/e2e/test_turn_end_order.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cody_daemon.engine import time_limit
from cody_daemon.engine.events import ToolCallProgress
from cody_daemon.engine.session import Session
from cody_daemon.engine.settings import SessionSettings
from cody_daemon.engine.turn import TurnEnv, TurnRunner
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.store.session_file import SessionFile
from cody_daemon.tools.base import Tool, ToolContext, ToolFacts, ToolResult
from cody_daemon.tools.registry import ToolRegistry
from pydantic import BaseModel

from tests.support.engine import RecordingLink, ScriptedModel
from tests.support.mock_responses import text, tool_call


class _NoArgs(BaseModel):
    pass


class StubbornTool(Tool[_NoArgs]):
    """Writes output and a plan every 10 ms and swallows cancellation until `stop` is set."""

    name = "stubborn"
    description = "ignores cancellation"
    kind = "other"
    facts = ToolFacts(changes="plan")  # it publishes a plan, and asks nothing
    live_output = True  # its output streams while it runs
    args_model = _NoArgs

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.started = asyncio.Event()

    async def run(self, args: _NoArgs, ctx: ToolContext) -> ToolResult:
        assert ctx.on_output is not None and ctx.on_plan is not None
        self.started.set()
        while not self.stop.is_set():
            try:
                ctx.on_output("tick\n")
                ctx.on_plan([("still here", "in_progress")])
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                continue
        return ToolResult(output="stopped")


async def test_a_tool_that_ignores_cancellation_sends_nothing_after_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time_limit, "STOP_GRACE_S", 0.2)  # abandon the stubborn tool quickly
    tool = StubbornTool()
    link = RecordingLink()
    model = ScriptedModel()
    model.enqueue(tool_call("stubborn", {}, call_id="s1"))
    model.enqueue(text("done"))
    settings = SessionSettings(
        provider="scripted",
        model="m",
        approval_policy="never",
        sandbox_mode="danger-full-access",
    )
    session = Session(
        id="s",
        cwd=tmp_path,
        created="2026-01-01T00:00:00Z",
        settings=settings,
        file=SessionFile.create(tmp_path / "s.jsonl"),
    )
    env = TurnEnv(
        provider=model,
        context_window=100_000,
        tools=ToolRegistry([tool]),
        allowed=None,
        link=link,
        sandbox=SandboxPolicy.create("danger-full-access", tmp_path),
    )
    turn = asyncio.create_task(TurnRunner(session, env).run("go"))
    try:
        await asyncio.wait_for(tool.started.wait(), 5)
        await asyncio.sleep(0.05)
        turn.cancel()
        outcome = await asyncio.wait_for(turn, 5)
        sent_at_answer = len(link.of("s"))
        await asyncio.sleep(0.2)  # the abandoned tool keeps writing meanwhile

        events = link.of("s")
        assert outcome.stop_reason == "cancelled"
        assert len(events) == sent_at_answer, events[sent_at_answer:]
        finals = [e for e in events if isinstance(e, ToolCallProgress) and e.status == "failed"]
        assert [e.call_id for e in finals] == ["s1"]
        after_final = events[events.index(finals[0]) + 1 :]
        assert not any(isinstance(e, ToolCallProgress) for e in after_final), (
            "no output for a call after its final update"
        )
    finally:
        tool.stop.set()
        await asyncio.sleep(0.05)
        session.file.close()
