"""Sessions survive: kill -9 mid-turn, restart, list, load (replay), resume, close, delete."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import assistant_texts, tool_outputs, user_texts


def session_files(env: CodyEnv) -> list[Path]:
    return sorted((env.cody_home / "sessions").glob("*/*/*/rollout-*.jsonl"))


async def test_kill_9_mid_turn_then_restart_lists_loads_and_continues(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session()
    model.enqueue(tool_call("exec", {"command": "echo turn-one-output"}, call_id="c1"))
    model.enqueue(text("Turn one answer."))
    first.answer("allow_once")
    await first.prompt(sid, "first question")
    model.enqueue(tool_call("exec", {"command": "sleep 30"}, call_id="c2"))
    first.answer("allow_once")
    model.enqueue(text("never sent"))
    model.unused_ok = True  # the daemon is killed before this answer
    turn = asyncio.create_task(first.prompt(sid, "second question"))
    await first.wait_for(
        lambda: any(u.get("status") == "in_progress" for u in first.tool_updates(sid, "c2"))
    )

    first.process.process.send_signal(signal.SIGKILL)
    await first.process.process.wait()
    turn.cancel()
    await first.process.connection.aclose()

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        listed = await second.request("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        assert listed["sessions"][0]["title"] == "first question"
        assert listed["sessions"][0]["cwd"] == str(cody_env.workspace)

        await second.request(
            "session/load", {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []}
        )
        replay = second.session_updates(sid)
        kinds = [u["sessionUpdate"] for u in replay]
        assert kinds.count("user_message_chunk") == 2
        replayed_calls = {u["toolCallId"]: u for u in replay if u["sessionUpdate"] == "tool_call"}
        assert replayed_calls["c1"]["status"] == "completed"
        assert "turn-one-output" in replayed_calls["c1"]["content"][0]["content"]["text"]
        assert replayed_calls["c2"]["status"] == "failed", "the killed call is closed on load"
        assert second.agent_text(sid) == "Turn one answer."

        model.enqueue(text("after restart"))
        result = await second.prompt(sid, "third question")
        assert result["stopReason"] == "end_turn"
        sent = model.requests[-1]
        assert user_texts(sent) == ["first question", "second question", "third question"]
        assert assistant_texts(sent) == ["Turn one answer."]
        outputs = tool_outputs(sent)
        assert "turn-one-output" in outputs["c1"]
        assert json.loads(outputs["c2"]) == {"error": "interrupted"}
    finally:
        await second.close()


async def test_resume_continues_without_replay(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session(approvalPolicy="never")
    model.enqueue(text("remember me"))
    await first.prompt(sid, "hello")
    await first.close()

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        result = await second.request(
            "session/resume", {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []}
        )
        assert second.session_updates(sid) == []
        current = {o["id"]: o["currentValue"] for o in result["configOptions"]}
        assert current["approval_policy"] == "never", "session settings survive a restart"
        model.enqueue(text("again"))
        await second.prompt(sid, "still there?")
        assert assistant_texts(model.requests[-1]) == ["remember me"]
    finally:
        await second.close()


async def test_close_unloads_and_delete_removes(daemon: Daemon, model: MockResponsesServer) -> None:
    sid = await daemon.new_session()
    model.enqueue(text("hi"))
    await daemon.prompt(sid, "hello")
    [path] = session_files(daemon.env)

    assert await daemon.request("session/close", {"sessionId": sid}) == {}
    await expect_error(daemon.prompt(sid, "closed?"), -32002)
    assert path.exists(), "close keeps the file"

    await daemon.request(
        "session/resume", {"sessionId": sid, "cwd": str(daemon.env.workspace), "mcpServers": []}
    )
    assert await daemon.request("session/delete", {"sessionId": sid}) == {}
    assert not path.exists()
    assert (await daemon.request("session/list", {}))["sessions"] == []
    await expect_error(
        daemon.request(
            "session/load", {"sessionId": sid, "cwd": str(daemon.env.workspace), "mcpServers": []}
        ),
        -32002,
    )


async def test_unknown_and_missing_sessions_are_clear_errors(daemon: Daemon) -> None:
    missing = "01a20000-0000-7000-8000-000000000000"
    for method in ("session/load", "session/resume"):
        error = await expect_error(
            daemon.request(method, {"sessionId": missing, "cwd": str(daemon.env.workspace)}),
            -32002,
        )
        assert missing in error.message
    await expect_error(
        daemon.request(
            "session/prompt", {"sessionId": missing, "prompt": [{"type": "text", "text": "x"}]}
        ),
        -32002,
    )


async def test_a_second_daemon_cannot_open_a_live_session(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    first = await Daemon.start(cody_env)
    second = await Daemon.start(cody_env)
    try:
        await first.initialize()
        await second.initialize()
        sid = await first.new_session()
        model.enqueue(text("hi"))
        await first.prompt(sid, "hello")  # a prompted session keeps its file when closed
        error = await expect_error(
            second.request("session/resume", {"sessionId": sid, "cwd": str(cody_env.workspace)}),
            -32011,
        )
        assert "another Cody daemon" in error.message
        await first.request("session/close", {"sessionId": sid})
        await second.request("session/resume", {"sessionId": sid, "cwd": str(cody_env.workspace)})
    finally:
        await first.close()
        await second.close()


async def test_a_torn_last_line_is_skipped_and_the_session_resumes(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session()
    model.enqueue(text("kept answer"))
    await first.prompt(sid, "kept question")
    await first.close()
    [path] = session_files(cody_env)
    with path.open("ab") as handle:
        handle.write(b'{"timestamp": "2026-11-22T00:00:00.000Z", "type": "response_item", "payl')

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        await second.request("session/load", {"sessionId": sid, "cwd": str(cody_env.workspace)})
        assert second.agent_text(sid) == "kept answer"
        model.enqueue(text("next"))
        await second.prompt(sid, "next question")
        assert user_texts(model.requests[-1]) == ["kept question", "next question"]
    finally:
        await second.close()
    lines = path.read_bytes().splitlines()
    for line in lines[:-1]:
        if b'"payl' not in line or line.endswith(b"}"):
            json.loads(line)


async def test_an_unreadable_session_file_is_an_error_not_a_fresh_start(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session()
    model.enqueue(text("hi"))
    await first.prompt(sid, "hello")
    await first.close()
    [path] = session_files(cody_env)
    path.write_bytes(b"this is not a session file\n")

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        error = await expect_error(
            second.request("session/load", {"sessionId": sid, "cwd": str(cody_env.workspace)}),
            -32002,
        )
        assert "unreadable" in error.message
        assert path.read_bytes() == b"this is not a session file\n", "nothing was overwritten"
    finally:
        await second.close()


async def test_session_files_hold_the_documented_line_types(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    sid = await daemon.new_session(approvalPolicy="untrusted")
    model.enqueue(tool_call("exec", {"command": "touch x"}, call_id="c1"))
    model.enqueue(text("done"))
    daemon.answer("allow_always")
    await daemon.prompt(sid, "do it")
    [path] = session_files(daemon.env)
    assert path.name.endswith(f"-{sid}.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(set(line) == {"timestamp", "type", "payload"} for line in lines)
    assert lines[0]["type"] == "session_meta" and lines[0]["payload"]["id"] == sid
    types = {line["type"] for line in lines}
    assert types == {"session_meta", "turn_context", "response_item", "event"}
    items = {ln["payload"]["type"] for ln in lines if ln["type"] == "response_item"}
    assert {"message", "function_call", "function_call_output"} <= items
    approvals = [
        ln["payload"]
        for ln in lines
        if ln["type"] == "event" and ln["payload"]["kind"] == "approval"
    ]
    assert approvals == [
        {
            "kind": "approval",
            "turnId": approvals[0]["turnId"],
            "callId": "c1",
            "tool": "exec",
            "decision": "allow_session",
            "reason": "user",
            "grantKey": ["exec", "touch", "x"],
            "by": "user",
            "detail": "allowed for this session",
        }
    ]
    [output] = [
        ln["payload"]
        for ln in lines
        if ln["type"] == "response_item" and ln["payload"]["type"] == "function_call_output"
    ]
    assert output["display"]["decision"] == {
        "by": "user",
        "detail": "allowed for this session",
        "outcome": "allow",
    }, "the decision is kept for the replay"
    assert "test-key-not-secret" not in path.read_text()


async def test_sigterm_mid_turn_persists_and_exits_0(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(text("long " * 100, chunks=100), delay_s=0.05)
    sid = await daemon.new_session()
    asyncio.create_task(daemon.prompt(sid, "long"))  # noqa: RUF006 - ends with the process
    await daemon.wait_for(lambda: bool(daemon.agent_text(sid)))
    daemon.process.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(daemon.process.process.wait(), 5) == 0
    [path] = session_files(daemon.env)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[-1]["payload"] == {
        "kind": "turn_end",
        "turnId": lines[-1]["payload"]["turnId"],
        "stopReason": "cancelled",
    }
    streamed = "".join(
        ln["payload"]["content"][0]["text"]
        for ln in lines
        if ln["type"] == "response_item" and ln["payload"].get("role") == "assistant"
    )
    assert streamed.startswith("long "), "the partial answer was saved"


async def test_session_grants_survive_a_restart(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    first = await Daemon.start(cody_env)
    await first.initialize()
    sid = await first.new_session(approvalPolicy="untrusted")
    model.enqueue(tool_call("exec", {"command": "touch granted"}, call_id="c1"))
    model.enqueue(tool_call("exec", {"command": "touch refused"}, call_id="c2"))
    model.enqueue(text("done"))
    first.answer("allow_always", "reject_always")
    await first.prompt(sid, "one")
    await first.close()

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        await second.request("session/resume", {"sessionId": sid, "cwd": str(cody_env.workspace)})
        model.enqueue(tool_call("exec", {"command": ["touch", "granted"]}, call_id="c3"))
        model.enqueue(tool_call("exec", {"command": "touch refused"}, call_id="c4"))
        model.enqueue(text("done again"))
        await second.prompt(sid, "two")
        assert second.permission_requests == [], "both answers were remembered for the session"
        outputs = tool_outputs(model.requests[-1])
        assert "Exit code: 0" in outputs["c3"]
        assert json.loads(outputs["c4"]) == {"error": "User denied approval"}
    finally:
        await second.close()


async def test_list_shows_only_prompted_sessions_and_an_empty_one_leaves_no_file(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """codex-acp lists only sessions with a turn; an editor's own new, untitled session was
    listed first. An empty chat is not saved: closing it, deleting it or stopping the daemon
    removes its file; `session/load` of it works while it is live."""
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        prompted = await daemon.new_session()
        model.enqueue(text("hi"))
        await daemon.prompt(prompted, "hello")
        empty = await daemon.new_session()
        closed_empty = await daemon.new_session()
        deleted_empty = await daemon.new_session()
        await daemon.request(
            "session/set_mode", {"sessionId": empty, "modeId": "read-only"}
        )  # a settings change is not a turn
        assert len(session_files(cody_env)) == 4, "live sessions hold their (locked) files"

        listed = await daemon.request("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [prompted]

        loaded = await daemon.request(
            "session/load", {"sessionId": empty, "cwd": str(cody_env.workspace), "mcpServers": []}
        )
        assert loaded["modes"]["currentModeId"] == "read-only", "an empty live session loads"
        assert daemon.session_updates(empty) == [
            u for u in daemon.session_updates(empty) if u["sessionUpdate"] != "user_message_chunk"
        ]

        await daemon.request("session/close", {"sessionId": closed_empty})
        assert await daemon.request("session/delete", {"sessionId": deleted_empty}) == {}
        assert len(session_files(cody_env)) == 2
        await expect_error(
            daemon.request(
                "session/load",
                {"sessionId": closed_empty, "cwd": str(cody_env.workspace), "mcpServers": []},
            ),
            -32002,
        )
        assert await daemon.request("shutdown") is None
    finally:
        code = await daemon.close()
    assert code == 0
    files = session_files(cody_env)
    assert [p.name.endswith(f"-{prompted}.jsonl") for p in files] == [True], (
        "stopping the daemon removed the empty session still live"
    )


async def test_a_leftover_empty_session_file_is_not_listed(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """A file a crashed daemon left for a never-prompted session stays out of the list, even
    behind many settings lines, while a prompted session whose first turn comes late is in."""
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        late = await daemon.new_session()
        for _ in range(20):
            await daemon.request("session/set_mode", {"sessionId": late, "modeId": "auto"})
        model.enqueue(text("hi"))
        await daemon.prompt(late, "finally a question")
        empty = await daemon.new_session()
        for _ in range(20):
            await daemon.request("session/set_mode", {"sessionId": empty, "modeId": "auto"})
        daemon.process.process.send_signal(signal.SIGKILL)  # no clean close: the file stays
        await daemon.process.process.wait()
        await daemon.process.connection.aclose()
    finally:
        daemon.invalid.clear()
    assert len(session_files(cody_env)) == 2

    second = await Daemon.start(cody_env)
    try:
        await second.initialize()
        listed = await second.request("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [late]
    finally:
        await second.close()


async def test_kill_9_mid_stream_loses_nothing_the_client_was_shown(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Issue 8.11: the file got streamed text at most every 100 ms while the client got it
    every 20 ms, so a kill -9 lost text the user had already seen. Now each segment is
    written before it is sent."""
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    sid = await daemon.new_session()
    words = "".join(f"w{i} " for i in range(3000))
    model.enqueue(text(words, chunks=3000), delay_s=0.002)
    shown = ""

    def kill_once_enough_is_shown(params: dict) -> None:
        nonlocal shown
        if not shown and len(daemon.agent_text(sid)) > 2000:
            daemon.process.process.send_signal(signal.SIGKILL)  # right as it is shown
            shown = daemon.agent_text(sid)

    daemon.conn.on_notification("session/update", kill_once_enough_is_shown)
    turn = asyncio.create_task(daemon.prompt(sid, "stream"))
    await asyncio.wait_for(daemon.process.process.wait(), 30)
    turn.cancel()
    await daemon.process.connection.aclose()

    [path] = session_files(cody_env)
    saved = "".join(
        part["text"]
        for line in map(json.loads, path.read_text().splitlines())
        if line["type"] == "response_item" and line["payload"].get("role") == "assistant"
        for part in line["payload"]["content"]
    )
    assert words.startswith(shown)
    assert saved.startswith(shown), f"shown {len(shown)} chars, saved only {len(saved)}"
