"""Every update of a turn reaches the client before the `session/prompt` answer, and none
after it, on every way a turn ends (through the real daemon, frames recorded in wire order).

avante.nvim considers a turn over when the prompt is answered: a `tool_call_update` arriving
after that (seen after a cancel with a permission prompt open) was drawn into the wrong place
or dropped. The ACP prompt-turn page says the agent reports the remaining updates and then
answers (https://agentclientprotocol.com/protocol/v1/prompt-turn#cancellation).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from cody_client.connection import RemoteError

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call

QUIET_S = 0.4
"""How long to watch for late frames after the answer (absence needs some waiting)."""

_ids = itertools.count(1)


async def start_prompt(daemon: Daemon, sid: str, prompt: str) -> tuple[str, asyncio.Task[Any]]:
    msg_id = f"prompt-{next(_ids)}"
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]}
    task = asyncio.create_task(daemon.conn.request("session/prompt", params, msg_id=msg_id))
    return msg_id, task


async def answer_of(task: asyncio.Task[Any]) -> Any:
    try:
        return await asyncio.wait_for(task, 30)
    except RemoteError as error:
        return error


async def assert_turn_closed_before_answer(daemon: Daemon, sid: str, msg_id: str) -> None:
    """The answer comes after every update of the turn; every tool call is closed before
    it; nothing for the session follows it."""
    await asyncio.sleep(QUIET_S)
    frames = list(daemon.received)
    answer_at = next(
        index
        for index, frame in enumerate(frames)
        if frame.get("id") == msg_id and "method" not in frame
    )
    before = [
        f["params"]["update"]
        for f in frames[:answer_at]
        if f.get("method") == "session/update" and f["params"]["sessionId"] == sid
    ]
    late = [
        f
        for f in frames[answer_at + 1 :]
        if f.get("method") == "session/update" and f["params"]["sessionId"] == sid
    ]
    assert late == [], f"updates after the session/prompt answer: {late}"
    status: dict[str, str] = {}
    for update in before:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and update.get("status"):
            status[update["toolCallId"]] = update["status"]
    assert status, "the turn opened a tool call"
    open_calls = {cid: s for cid, s in status.items() if s not in ("completed", "failed")}
    assert open_calls == {}, f"tool calls still open when the prompt was answered: {open_calls}"


async def test_cancel_with_a_permission_prompt_open(
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
    msg_id, task = await start_prompt(daemon, sid, "touch")
    await daemon.wait_for(lambda: bool(daemon.permission_requests))

    daemon.conn.notify("session/cancel", {"sessionId": sid})

    assert (await answer_of(task))["stopReason"] == "cancelled"
    await assert_turn_closed_before_answer(daemon, sid, msg_id)


async def test_cancel_repeated_while_the_turn_cleans_up(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """Editors send `session/cancel` again when the first seems slow: a second cancel that
    lands while the turn closes its calls must not turn the answer into an error or leave
    updates for after it."""
    model.enqueue(
        tool_call(
            "exec", {"command": "touch a", "escalate": True, "justification": "asks"}, call_id="c1"
        ),
        tool_call(
            "exec", {"command": "touch b", "escalate": True, "justification": "asks"}, call_id="c2"
        ),
    )
    sid = await daemon.new_session()
    daemon.answer("hang")
    msg_id, task = await start_prompt(daemon, sid, "touch")
    await daemon.wait_for(lambda: bool(daemon.permission_requests))

    for _ in range(5):
        daemon.conn.notify("session/cancel", {"sessionId": sid})
        await asyncio.sleep(0)

    answer = await answer_of(task)
    assert not isinstance(answer, RemoteError), answer
    assert answer["stopReason"] == "cancelled"
    await assert_turn_closed_before_answer(daemon, sid, msg_id)


async def test_cancel_while_a_command_streams_output(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    command = "for i in $(seq 1 400); do echo line-$i; sleep 0.01; done"
    model.enqueue(tool_call("exec", {"command": command}, call_id="s1"))
    sid = await daemon.new_session(approvalPolicy="never")
    msg_id, task = await start_prompt(daemon, sid, "stream")
    await daemon.wait_for(
        lambda: any("line-" in str(u.get("content")) for u in daemon.tool_updates(sid, "s1"))
    )

    daemon.conn.notify("session/cancel", {"sessionId": sid})

    assert (await answer_of(task))["stopReason"] == "cancelled"
    await assert_turn_closed_before_answer(daemon, sid, msg_id)


async def test_a_provider_error_after_a_tool_call(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("listDir", {"dirPath": "."}, call_id="l1"))
    model.enqueue_error(500, message="The server had an error")
    sid = await daemon.new_session()
    msg_id, task = await start_prompt(daemon, sid, "list")

    answer = await answer_of(task)

    assert isinstance(answer, RemoteError) and answer.code == -32010
    await assert_turn_closed_before_answer(daemon, sid, msg_id)


async def test_an_approval_that_times_out(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url, extra="approval_timeout_s = 0.3")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(
            tool_call(
                "exec",
                {"command": "touch late.txt", "escalate": True, "justification": "asks"},
                call_id="c1",
            )
        )
        model.enqueue(text("I was not allowed"))
        sid = await daemon.new_session()
        daemon.answer("hang")
        msg_id, task = await start_prompt(daemon, sid, "touch")

        assert (await answer_of(task))["stopReason"] == "end_turn"
        await assert_turn_closed_before_answer(daemon, sid, msg_id)
    finally:
        await daemon.close()


async def test_a_command_past_its_time_limit(daemon: Daemon, model: MockResponsesServer) -> None:
    command = "while true; do echo tick; sleep 0.02; done"
    model.enqueue(tool_call("exec", {"command": command, "timeoutMs": 400}, call_id="t1"))
    model.enqueue(text("it timed out"))
    sid = await daemon.new_session(approvalPolicy="never")
    msg_id, task = await start_prompt(daemon, sid, "loop")

    assert (await answer_of(task))["stopReason"] == "end_turn"
    await assert_turn_closed_before_answer(daemon, sid, msg_id)


async def test_the_client_cancels_the_prompt_request_itself(
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
    msg_id, task = await start_prompt(daemon, sid, "touch")
    await daemon.wait_for(lambda: bool(daemon.permission_requests))

    daemon.conn.notify("$/cancelRequest", {"id": msg_id})

    answer = await answer_of(task)
    if isinstance(answer, RemoteError):
        assert answer.code == -32800
    else:
        assert answer["stopReason"] == "cancelled"
    await assert_turn_closed_before_answer(daemon, sid, msg_id)
