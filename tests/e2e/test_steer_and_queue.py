"""Talking to a running turn through the real daemon: `_cody/session/steer` joins it at the
next safe point, `session/prompt` with `_meta.cody.queue` waits for it, `session/cancel`
drops the queue (issue 30)."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cody_client import CodyClient, SessionBusy

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, input_images, text, tool_call
from tests.support.model_inputs import input_items, user_texts

NO_ASKING = 'approval_policy = "never"\nsandbox_mode = "danger-full-access"'


def _waiting_command(gate: Path, marker: str) -> str:
    """A command that runs until `gate` exists (the test decides when the tool finishes)."""
    return f"while [ ! -e {gate} ]; do sleep 0.02; done; echo {marker}"


def _steer(sid: str, message: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": message}]}


def _queued(sid: str, message: str) -> dict[str, Any]:
    return {
        "sessionId": sid,
        "prompt": [{"type": "text", "text": message}],
        "_meta": {"cody": {"queue": True}},
    }


def _session_lines(daemon: Daemon) -> list[dict[str, Any]]:
    files = list((daemon.env.cody_home).rglob("*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


async def _in_progress(daemon: Daemon, sid: str, call_id: str) -> None:
    await daemon.wait_for(
        lambda: any(u.get("status") == "in_progress" for u in daemon.tool_updates(sid, call_id))
    )


async def test_a_steer_during_a_long_command_reaches_the_next_model_request_after_its_result(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    gate = daemon.env.tmpdir / "go"
    model.enqueue(tool_call("exec", {"command": _waiting_command(gate, "built-ok")}, call_id="c1"))
    model.enqueue(text("Switching to the docs as you asked."))
    sid = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")
    prompt = asyncio.create_task(daemon.prompt(sid, "build it"))
    await _in_progress(daemon, sid, "c1")

    answer = await daemon.request("_cody/session/steer", _steer(sid, "also update the docs"))
    assert answer["turnId"]
    assert len(model.requests) == 1, "the steer waits for the tool's result"
    gate.touch()
    result = await prompt

    assert result["stopReason"] == "end_turn"
    assert result["_meta"]["cody"]["turnId"] == answer["turnId"], "it joined the running turn"
    items = input_items(model.requests[1])
    kinds = [(item.get("type"), item.get("role")) for item in items[-3:]]
    assert kinds == [("function_call", None), ("function_call_output", None), ("message", "user")]
    assert "built-ok" in items[-2]["output"]
    assert user_texts(model.requests[1])[-1] == "also update the docs"
    echoed = daemon.session_updates(sid, "user_message_chunk")
    assert [u["content"]["text"] for u in echoed] == ["also update the docs"]
    assert echoed[0]["_meta"] == {"cody": {"steered": True}}
    recorded = [
        line["payload"]
        for line in _session_lines(daemon)
        if line.get("type") == "response_item" and line["payload"].get("steered")
    ]
    assert [item["content"][0]["text"] for item in recorded] == ["also update the docs"]


async def test_a_steer_while_the_model_streams_text_ends_that_stream_and_the_turn_goes_on(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(text("word " * 200, chunks=200), delay_s=0.05)
    model.enqueue(text("Stopped; doing it your way."))
    sid = await daemon.new_session()
    prompt = asyncio.create_task(daemon.prompt(sid, "explain at length"))
    await daemon.wait_for(lambda: "word word" in daemon.agent_text(sid))

    await daemon.request("_cody/session/steer", _steer(sid, "shorter please"))
    result = await asyncio.wait_for(prompt, 20)

    assert result["stopReason"] == "end_turn"
    assert await model.wait_disconnected(0), "the first stream was closed, not read to its end"
    second = input_items(model.requests[1])
    assert second[-2]["role"] == "assistant" and second[-2]["content"][0]["text"].startswith("word")
    assert user_texts(model.requests[1])[-1] == "shorter please"
    assert daemon.agent_text(sid).endswith("Stopped; doing it your way.")


async def test_a_steer_with_no_running_turn_is_32011_and_the_message_is_sent_as_a_prompt(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session()
    error = await expect_error(
        daemon.request("_cody/session/steer", _steer(sid, "anyone there?")), -32011
    )
    assert "session/prompt" in error.message
    model.enqueue(text("yes"))
    assert (await daemon.prompt(sid, "anyone there?"))["stopReason"] == "end_turn"
    await expect_error(daemon.request("_cody/session/steer", _steer(sid, "late")), -32011)
    assert len(model.requests) == 1


async def test_a_queued_prompt_runs_after_the_running_turn_and_an_unqueued_one_is_busy(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    gate = daemon.env.tmpdir / "go"
    model.enqueue(tool_call("exec", {"command": _waiting_command(gate, "first-done")}, call_id="a"))
    model.enqueue(text("first turn over"))
    model.enqueue(text("second turn over"))
    sid = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")
    first = asyncio.create_task(daemon.prompt(sid, "first"))
    await _in_progress(daemon, sid, "a")

    second = asyncio.create_task(daemon.request("session/prompt", _queued(sid, "second")))
    await expect_error(daemon.prompt(sid, "third"), -32011)
    await asyncio.sleep(0.2)
    assert not second.done() and len(model.requests) == 1, "the queued prompt waits"
    gate.touch()
    first_result = await first
    second_result = await asyncio.wait_for(second, 20)

    assert first_result["stopReason"] == "end_turn"
    assert second_result["stopReason"] == "end_turn"
    assert first_result["_meta"]["cody"]["turnId"] != second_result["_meta"]["cody"]["turnId"]
    assert user_texts(model.requests[2])[-1] == "second", "it ran as a turn of its own, last"
    assert "first turn over" in json.dumps(input_items(model.requests[2]))
    # On the wire the first answer comes before anything of the second turn.
    first_turn = first_result["_meta"]["cody"]["turnId"]
    answered = next(
        index
        for index, message in enumerate(daemon.received)
        if isinstance(message.get("result"), dict)
        and message["result"].get("_meta", {}).get("cody", {}).get("turnId") == first_turn
    )
    second_text = next(
        index
        for index, message in enumerate(daemon.received)
        if message.get("method") == "session/update"
        and "second turn over" in json.dumps(message["params"])
    )
    assert answered < second_text


async def test_cancel_ends_the_running_turn_and_answers_every_queued_prompt_cancelled(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    gate = daemon.env.tmpdir / "never"
    model.enqueue(tool_call("exec", {"command": _waiting_command(gate, "x")}, call_id="a"))
    sid = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")
    running = asyncio.create_task(daemon.prompt(sid, "long"))
    await _in_progress(daemon, sid, "a")
    queued = [
        asyncio.create_task(daemon.request("session/prompt", _queued(sid, f"later {n}")))
        for n in range(2)
    ]
    await asyncio.sleep(0.2)

    daemon.conn.notify("session/cancel", {"sessionId": sid})

    assert (await running)["stopReason"] == "cancelled"
    for task in queued:
        assert (await asyncio.wait_for(task, 10))["stopReason"] == "cancelled"
    assert len(model.requests) == 1, "no queued prompt reached the model"
    model.enqueue(text("fresh start"))
    assert (await daemon.prompt(sid, "again"))["stopReason"] == "end_turn"
    assert "later 0" not in json.dumps(input_items(model.requests[-1]))


PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


async def test_a_steered_image_reaches_the_model_with_the_message(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    gate = daemon.env.tmpdir / "go"
    model.enqueue(tool_call("exec", {"command": _waiting_command(gate, "ok")}, call_id="c1"))
    model.enqueue(text("I see the screenshot."))
    sid = await daemon.new_session(approvalPolicy="never", sandboxMode="danger-full-access")
    prompt = asyncio.create_task(daemon.prompt(sid, "fix the layout"))
    await _in_progress(daemon, sid, "c1")
    blocks = [
        {"type": "text", "text": "like this"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
    ]
    await daemon.request("_cody/session/steer", {"sessionId": sid, "prompt": blocks})
    gate.touch()
    assert (await prompt)["stopReason"] == "end_turn"
    assert input_images(model.requests[1]) == [f"data:image/png;base64,{PNG}"]
    echoed = daemon.session_updates(sid, "user_message_chunk")
    assert [u["content"]["type"] for u in echoed] == ["text", "image"]
    assert all(u["_meta"] == {"cody": {"steered": True}} for u in echoed)


async def test_the_library_steers_a_running_turn_and_queues_behind_it(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra=NO_ASKING)
    gate = cody_env.tmpdir / "go"
    model.enqueue(tool_call("exec", {"command": _waiting_command(gate, "done")}, call_id="c1"))
    model.enqueue(text("Noted the steer."))
    model.enqueue(text("Queued one done."))
    async with CodyClient.spawn(env=cody_env.env) as client:
        session = await client.new_session(str(cody_env.workspace))
        with pytest.raises(SessionBusy):
            await session.steer("too early")
        seen: list[str] = []
        first = session.prompt("work", on_update=lambda u: seen.append(u.session_update))
        first.start()
        queued_updates: list[Any] = []
        queued = session.prompt("after", queue=True, on_update=queued_updates.append)
        queued.start()
        while "tool_call_update" not in seen:
            await asyncio.sleep(0.01)
        turn_id = await session.steer("and the docs")
        gate.touch()
        assert (await first).stop_reason == "end_turn"
        assert (await queued).stop_reason == "end_turn"
    assert first.result.meta is not None and first.result.meta.cody.turn_id == turn_id
    texts = [u.content.text for u in queued_updates if u.session_update == "agent_message_chunk"]
    assert "".join(texts) == "Queued one done.", "the queued run got its own turn's updates only"
    assert user_texts(model.requests[1])[-1] == "and the docs"
    assert user_texts(model.requests[2])[-1] == "after"
