"""The turn loop through the real daemon: many calls, cancellation, busy sessions.

Errors for the model and the tool-iteration limit are engine behaviour: in process, in
tests/unit/test_engine_turns.py."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from tests.support.daemon import Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import assistant_texts, tool_outputs


def _pids_with_marker(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


async def test_twelve_tool_calls_in_one_turn_complete(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    for index in range(12):
        model.enqueue(
            tool_call("exec", {"command": ["echo", f"call-{index}"]}, call_id=f"c{index}")
        )
    model.enqueue(text("all twelve done"))
    sid = await daemon.new_session(approvalPolicy="never")

    result = await daemon.prompt(sid, "run twelve commands")

    assert result["stopReason"] == "end_turn"
    outputs = tool_outputs(model.requests[-1])
    assert [f"call-{i}" in outputs[f"c{i}"] for i in range(12)] == [True] * 12
    finals = [u for u in daemon.tool_updates(sid) if u.get("status") == "completed"]
    assert len(finals) == 12


async def test_parallel_calls_in_one_response_all_run(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(
        tool_call("exec", {"command": ["echo", "a"]}, call_id="p1"),
        tool_call("exec", {"command": ["echo", "b"]}, call_id="p2"),
    )
    model.enqueue(text("both"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "two at once")

    outputs = tool_outputs(model.requests[-1])
    assert "a" in outputs["p1"] and "b" in outputs["p2"]


async def test_cancel_during_a_model_stream_answers_cancelled_quickly_and_keeps_partial_text(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(text("partial answer " * 40, chunks=40), delay_s=0.1)
    sid = await daemon.new_session()
    prompt = asyncio.create_task(daemon.prompt(sid, "talk slowly"))
    await daemon.wait_for(lambda: "partial" in daemon.agent_text(sid))

    started = time.monotonic()
    daemon.conn.notify("session/cancel", {"sessionId": sid})
    result = await prompt
    elapsed = time.monotonic() - started

    assert result["stopReason"] == "cancelled"
    assert elapsed < 2.5, f"cancel took {elapsed:.2f}s (the bar is 1 s; this is a liveness check)"
    assert await model.wait_disconnected(0), "the model stream was closed"
    model.enqueue(text("fresh"))
    await daemon.prompt(sid, "again")
    kept = assistant_texts(model.requests[-1])
    assert kept and kept[0].startswith("partial answer"), "partial text is kept in history"


async def test_cancel_during_a_running_command_kills_it_and_leaves_no_child(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    marker = f"cody-sleep-marker-{os.getpid()}"
    model.enqueue(
        tool_call("exec", {"command": f"sleep 30 & sleep 31; echo {marker}"}, call_id="s1")
    )
    sid = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")
    prompt = asyncio.create_task(daemon.prompt(sid, "sleep"))
    await daemon.wait_for(
        lambda: any(u.get("status") == "in_progress" for u in daemon.tool_updates(sid, "s1"))
    )
    await daemon.wait_for(lambda: bool(_pids_with_marker(marker)))

    started = time.monotonic()
    daemon.conn.notify("session/cancel", {"sessionId": sid})
    result = await prompt
    elapsed = time.monotonic() - started

    assert result["stopReason"] == "cancelled"
    assert elapsed < 2.5, f"cancel took {elapsed:.2f}s (the bar is 1 s; this is a liveness check)"
    await daemon.wait_for(lambda: not _pids_with_marker(marker), timeout=2)
    final = daemon.tool_updates(sid, "s1")[-1]
    assert final["status"] == "failed"


async def test_cancel_while_an_approval_is_pending_withdraws_it(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(
        tool_call(
            "exec",
            {"command": "touch never.txt", "escalate": True, "justification": "asks"},
            call_id="c1",
        )
    )
    sid = await daemon.new_session()
    daemon.answer("hang")
    prompt = asyncio.create_task(daemon.prompt(sid, "touch"))
    await daemon.wait_for(lambda: bool(daemon.permission_requests))

    daemon.conn.notify("session/cancel", {"sessionId": sid})
    result = await asyncio.wait_for(prompt, 2)

    assert result["stopReason"] == "cancelled"
    request_id = daemon.permission_requests[0]["_meta"]["cody"]["requestId"]
    await daemon.wait_for(
        lambda: any(
            m.get("method") == "$/cancelRequest" and m["params"]["id"] == request_id
            for m in daemon.received
        )
    )
    assert not (daemon.env.workspace / "never.txt").exists()
    assert daemon.tool_updates(sid, "c1")[-1]["status"] == "failed"


async def test_a_second_prompt_on_a_busy_session_is_refused(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(text("slow " * 20, chunks=20), delay_s=0.05)
    sid = await daemon.new_session()
    first = asyncio.create_task(daemon.prompt(sid, "first"))
    await daemon.wait_for(lambda: bool(daemon.agent_text(sid)))

    await expect_error(daemon.prompt(sid, "second"), -32011)

    assert (await first)["stopReason"] == "end_turn"
    assert len(model.requests) == 1, "the refused prompt never reached the model"


async def test_prompts_in_two_sessions_run_at_the_same_time(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    # Each stream lasts ~2 s: long enough that a loaded machine still starts the second turn
    # while the first streams (at 0.5 s the first could end before the second began).
    model.enqueue(text("one " * 10, chunks=10), delay_s=0.2)
    model.enqueue(text("two " * 10, chunks=10), delay_s=0.2)
    a = await daemon.new_session()
    b = await daemon.new_session()
    first = asyncio.create_task(daemon.prompt(a, "a"))
    second = asyncio.create_task(daemon.prompt(b, "b"))

    await daemon.wait_for(lambda: len(model.requests) == 2)
    assert not first.done() and not second.done(), "both turns were streaming at once"

    results = await asyncio.gather(first, second)
    assert [r["stopReason"] for r in results] == ["end_turn", "end_turn"]
    assert daemon.agent_text(a) == "one " * 10
    assert daemon.agent_text(b) == "two " * 10


async def test_a_provider_failure_is_a_provider_error_and_the_session_goes_on(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue_error(401)
    sid = await daemon.new_session()

    error = await expect_error(daemon.prompt(sid, "hello"), -32010)

    assert error.data["kind"] == "auth"
    assert "MOCK_API_KEY" in error.message
    assert "test-key-not-secret" not in json.dumps(error.data) + error.message
    model.enqueue(text("recovered"))
    assert (await daemon.prompt(sid, "again"))["stopReason"] == "end_turn"


async def test_missing_credentials_fail_the_prompt_with_auth_required(
    offline_daemon: Daemon,
) -> None:
    sid = await offline_daemon.new_session(provider="openai")
    error = await expect_error(offline_daemon.prompt(sid, "hi"), -32000)
    assert error.data["provider"] == "openai"
    assert "OPENAI_API_KEY" in error.message
