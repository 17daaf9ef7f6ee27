"""Turns through the engine in process (tests/support/engine.py): a scripted model, the real
tools, store and approvals, no daemon. The same behaviours through the real daemon's wiring
are in tests/e2e/test_turns.py and test_approvals.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cody_daemon.engine.manager import SessionManager
from cody_daemon.errors import NotFound

from tests.support.engine import EngineHarness, tool_outputs
from tests.support.mock_responses import text, tool_call


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[EngineHarness]:
    async with EngineHarness(tmp_path, config='approval_policy = "never"') as harness:
        yield harness


async def test_unknown_tool_and_failing_tool_become_errors_for_the_model(
    engine: EngineHarness,
) -> None:
    """Ported from tests/e2e/test_turns.py (same script, same assertions)."""
    model = engine.model
    model.enqueue(tool_call("teleport", {"where": "mars"}, call_id="u1"))
    model.enqueue(tool_call("readFile", {"filePath": "does/not/exist.txt"}, call_id="f1"))
    model.enqueue(tool_call("exec", "{not json", call_id="j1"))
    model.enqueue(tool_call("exec", {"commandz": "ls"}, call_id="a1"))
    model.enqueue(text("recovered"))
    sid = await engine.new_session()

    result = await engine.prompt(sid, "try odd things")

    assert result.stop_reason == "end_turn"
    outputs = tool_outputs(model.requests[-1])
    assert "unknown tool 'teleport'" in json.loads(outputs["u1"])["error"]
    assert "exec" in json.loads(outputs["u1"])["error"], "the error lists the available tools"
    assert "error" in json.loads(outputs["f1"])
    assert "not valid JSON" in json.loads(outputs["j1"])["error"]
    assert "invalid arguments for exec" in json.loads(outputs["a1"])["error"]
    for call_id in ("u1", "f1", "j1", "a1"):
        assert engine.final_status(sid, call_id) == "failed"
    assert engine.agent_text(sid) == "recovered"
    model.assert_complete()


async def test_max_tool_iterations_stops_the_turn_cleanly(tmp_path: Path) -> None:
    """Ported from tests/e2e/test_turns.py (same script, same assertions)."""
    async with EngineHarness(tmp_path, config="max_tool_iterations = 3") as engine:
        model = engine.model
        for index in range(3):
            model.enqueue(tool_call("listDir", {"dirPath": "."}, call_id=f"l{index}"))
        sid = await engine.new_session()
        result = await engine.prompt(sid, "loop forever")
        assert result.stop_reason == "max_turn_requests"
        assert len(model.requests) == 3
        assert model.pending == 0


async def test_a_rejected_write_does_not_happen_and_the_turn_goes_on(tmp_path: Path) -> None:
    async with EngineHarness(tmp_path, config='approval_policy = "untrusted"') as engine:
        engine.model.enqueue(
            tool_call("writeFile", {"filePath": "note.txt", "content": "hi"}, call_id="w1")
        )
        engine.model.enqueue(text("understood"))
        engine.link.answer("reject_once")
        sid = await engine.new_session()

        result = await engine.prompt(sid, "write a note")

        assert result.stop_reason == "end_turn"
        assert [request.call_id for _, request in engine.link.approvals] == ["w1"]
        assert json.loads(tool_outputs(engine.model.requests[-1])["w1"]) == {
            "error": "User denied approval"
        }
        assert not (engine.workspace / "note.txt").exists()
        assert engine.agent_text(sid) == "understood"
        engine.model.assert_complete()


async def test_assert_complete_reports_an_answer_nobody_asked_for(engine: EngineHarness) -> None:
    engine.model.enqueue(text("hello"))
    engine.model.enqueue(text("never asked for"))
    sid = await engine.new_session()
    await engine.prompt(sid, "hi")
    with pytest.raises(AssertionError, match="1 scripted answer"):
        engine.model.assert_complete()
    engine.model.unused_ok = True  # (the harness would report it too when it closes)


async def test_slash_fork_writes_a_copy_it_does_not_keep_open(tmp_path: Path) -> None:
    """The engine side of the /fork lock regression (through two daemons in
    tests/e2e/test_slash_commands.py): the fork is not live, and another manager on the same
    store (as a second daemon) opens it; its file lock conflicts within one process too."""
    async with EngineHarness(tmp_path) as engine:
        engine.model.enqueue(text("first answer"))
        sid = await engine.new_session()
        await engine.prompt(sid, "hello")
        outcome = await engine.prompt(sid, "/fork")
        fork_id = engine.agent_text(sid).split("into session ")[1].split(".")[0]

        assert outcome.stop_reason == "end_turn"
        with pytest.raises(NotFound):
            engine.manager.get(fork_id)
        other = SessionManager(engine.deps)
        forked = await other.open_session(fork_id, None, replay=False)
        assert [item.payload()["role"] for item in forked.history] == ["user", "assistant"]
        await other.close(fork_id)
