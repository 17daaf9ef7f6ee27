"""The JSON-RPC layer through the real daemon: framings, the error table, cancels, exit.

Each pygls pitfall (docs/architecture.md, "pygls pitfalls") has a regression test here,
named after what broke.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

from tests.support.bad_frames import BAD_FRAME_CASES
from tests.support.daemon import DAEMON_COMMAND, CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text


async def _raw_roundtrip(daemon: Daemon, frame: bytes) -> dict:
    """Send raw bytes and return the next message the daemon sends."""
    before = len(daemon.received)
    daemon.conn.send_raw(frame)
    await daemon.wait_for(lambda: len(daemon.received) > before)
    return daemon.received[before]


def lsp(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_malformed_json_gets_parse_error_and_the_connection_keeps_working(
    offline_daemon: Daemon,
) -> None:
    reply = await _raw_roundtrip(offline_daemon, lsp(b'{"jsonrpc": "2.0", "id": 7, "method": '))
    assert reply == {"jsonrpc": "2.0", "id": None, "error": reply["error"]}
    assert reply["error"]["code"] == -32700
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []


async def test_the_daemon_resyncs_after_every_kind_of_bad_frame(offline_daemon: Daemon) -> None:
    """Issue 8.8: one wrong Content-Length left the daemon answering parse errors forever.

    The cases (tests/support/bad_frames.py): Content-Length too small; too large, with the
    next frame arriving later; too large by a few bytes (ending inside the next header);
    negative; not a number; empty; missing; duplicated with different values; over the
    limit; 11 stray bytes without a newline; a stray line; a header block without its blank
    line; a zero length; a body that is not JSON. After each, the next well-formed frame
    must be answered.
    """
    conn = offline_daemon.conn
    for index, case in enumerate(BAD_FRAME_CASES):
        probe_id = f"probe-{index}"
        good = lsp(b'{"jsonrpc":"2.0","id":"%s","method":"session/list"}' % probe_id.encode())
        writes = list(case.writes)
        if case.glued:
            writes[-1] += good
        else:
            writes.append(good)
        for chunk in writes:
            conn.send_raw(chunk)
            await asyncio.sleep(0.02)
        try:
            await offline_daemon.wait_for(
                lambda probe=probe_id: any(m.get("id") == probe for m in offline_daemon.received), 5
            )
        except AssertionError:
            raise AssertionError(f"{case.name}: the next well-formed frame got no answer") from None
        [reply] = [m for m in offline_daemon.received if m.get("id") == probe_id]
        assert reply["result"] == {"sessions": []}, case.name
    assert offline_daemon.process.process.returncode is None
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []


async def test_batch_is_answered_once_with_invalid_request(offline_daemon: Daemon) -> None:
    batch = json.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "session/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "session/list"},
        ]
    ).encode()
    reply = await _raw_roundtrip(offline_daemon, lsp(batch))
    assert reply["id"] is None and reply["error"]["code"] == -32600
    await asyncio.sleep(0.2)
    assert offline_daemon.received[-1] == reply, "answered once"
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []


async def test_non_request_objects_get_invalid_request(offline_daemon: Daemon) -> None:
    for body in (
        b'"just a string"',
        b'{"id": 3, "method": "session/list"}',
        b'{"jsonrpc": "2.0", "id": 4}',
    ):
        reply = await _raw_roundtrip(offline_daemon, lsp(body))
        assert reply["error"]["code"] == -32600, body
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []


async def test_a_clients_error_response_with_id_null_is_logged_not_answered(
    offline_daemon: Daemon,
) -> None:
    """Issue 24.14: Toad answered a frame it could not parse with an error response whose id
    is null, and the daemon answered that *response* with -32600 ("no method, result or
    error"). JSON-RPC never answers a response: it is logged and nothing is sent."""
    responses = (
        b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}',
        b'{"jsonrpc": "2.0", "id": null, "result": {}}',
        b'{"jsonrpc": "2.0", "id": {"no": 1}, "error": {"code": -32600, "message": "x"}}',
    )
    for body in responses:
        offline_daemon.conn.send_raw(lsp(body))
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []
    assert not [m for m in offline_daemon.received if "error" in m], offline_daemon.received
    await offline_daemon.wait_for(
        lambda: (
            sum("ignoring a response from the client" in line for line in offline_daemon.stderr)
            == len(responses)
        )
    )
    assert any("-32700" in line and "Parse error" in line for line in offline_daemon.stderr)


async def test_valid_json_cody_cannot_take_is_answered_with_its_id(offline_daemon: Daemon) -> None:
    """Found by the fuzz suite: `1e400` or a lone surrogate made orjson fail, and the client
    got a -32700 with id null, so it waited forever for its own answer."""
    for index, value in enumerate((b"1e400", b'"\\ud800"', b"-1e999")):
        body = b'{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{"x":%s}}' % (
            index,
            value,
        )
        reply = await _raw_roundtrip(offline_daemon, lsp(body))
        assert reply["id"] == index and reply["error"]["code"] == -32600, value
    deep = b"[" * 5000 + b"]" * 5000
    reply = await _raw_roundtrip(offline_daemon, lsp(deep))
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []


async def test_unknown_method_is_method_not_found(offline_daemon: Daemon) -> None:
    await expect_error(offline_daemon.request("session/teleport", {}), -32601)
    offline_daemon.conn.notify("some/unknown_notification", {"x": 1})
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []


async def test_pygls_error_answers_keep_their_wire_shape(offline_daemon: Daemon) -> None:
    """pygls writes these answers itself, with the daemon's converter and the lsprotocol
    stand-in's classes (rpc/lazy_lsprotocol.py): the shape lsprotocol gives them, i.e. no
    `data: null`, the id kept, `result: null` kept."""
    reply = await _raw_roundtrip(
        offline_daemon, lsp(b'{"jsonrpc": "2.0", "id": "u-1", "method": "session/teleport"}')
    )
    assert set(reply) == {"jsonrpc", "id", "error"} and reply["id"] == "u-1"
    assert reply["jsonrpc"] == "2.0"
    assert set(reply["error"]) == {"code", "message"} and reply["error"]["code"] == -32601
    assert "session/teleport" in reply["error"]["message"]
    reply = await _raw_roundtrip(
        offline_daemon,
        lsp(b'{"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {"cwd": "x"}}'),
    )
    assert set(reply) == {"jsonrpc", "id", "error"} and reply["id"] == 9
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["errors"]
    reply = await _raw_roundtrip(
        offline_daemon, lsp(b'{"jsonrpc": "2.0", "id": 10, "method": "shutdown"}')
    )
    assert reply == {"jsonrpc": "2.0", "id": 10, "result": None}


async def test_invalid_params_name_the_field(offline_daemon: Daemon) -> None:
    error = await expect_error(
        offline_daemon.request("session/new", {"cwd": "relative/path", "mcpServers": []}), -32602
    )
    assert error.data["errors"][0]["key"] == "cwd"
    error = await expect_error(
        offline_daemon.request("session/new", ["not", "an", "object"]), -32602
    )
    error = await expect_error(
        offline_daemon.request(
            "session/new",
            {
                "cwd": str(offline_daemon.env.workspace),
                "_meta": {"cody": {"approvalPolicy": "sometimes"}},
            },
        ),
        -32602,
    )
    [issue] = error.data["errors"]
    assert issue["key"] == "_meta.cody.approvalPolicy"
    assert issue["value"] == "sometimes"
    assert issue["valid"] == ["untrusted", "on-request", "on-failure", "never"]
    assert "traceback" not in json.dumps(error.data).lower()


async def test_request_without_params_gets_an_answer_not_a_hang(offline_daemon: Daemon) -> None:
    """pygls dropped requests without `params`; the client hung."""
    reply = await _raw_roundtrip(
        offline_daemon, lsp(b'{"jsonrpc": "2.0", "id": 41, "method": "session/list"}')
    )
    assert reply["id"] == 41 and reply["result"] == {"sessions": []}
    reply = await _raw_roundtrip(
        offline_daemon, lsp(b'{"jsonrpc": "2.0", "id": 42, "method": "session/new"}')
    )
    assert reply["id"] == 42 and reply["error"]["code"] == -32602


async def test_params_with_odd_keys_reach_the_handler_intact(offline_daemon: Daemon) -> None:
    """The default pygls converter turned params into namedtuples (`class` -> `_1`)."""
    result = await offline_daemon.request(
        "session/new",
        {
            "cwd": str(offline_daemon.env.workspace),
            "mcpServers": [],
            "class": 1,
            "type_name": "x",
            "foo-bar": True,
        },
    )
    assert result["sessionId"]


async def test_request_before_initialize_is_invalid_request(cody_env: CodyEnv) -> None:
    daemon = await Daemon.start(cody_env)
    try:
        await expect_error(daemon.request("session/list", {}), -32600)
        await daemon.initialize()
        assert (await daemon.request("session/list", {}))["sessions"] == []
    finally:
        await daemon.close()


async def test_unknown_session_is_not_found(offline_daemon: Daemon) -> None:
    error = await expect_error(
        offline_daemon.request("session/set_mode", {"sessionId": "01a2-nope", "modeId": "auto"}),
        -32002,
    )
    assert "01a2-nope" in error.message
    offline_daemon.conn.notify("session/cancel", {"sessionId": "01a2-nope"})
    assert (await offline_daemon.request("session/list", {}))["sessions"] == []


async def test_ndjson_framing_is_detected_and_used_for_replies(cody_env: CodyEnv) -> None:
    daemon = await Daemon.start(cody_env, framing="ndjson")
    try:
        daemon.conn.send_raw(b"\r\n\n")
        await daemon.initialize()
        sid = await daemon.new_session()
        daemon.conn.send_raw(
            b'{"jsonrpc":"2.0","id":"crlf","method":"session/list","params":{}}\r\n'
        )
        await daemon.wait_for(lambda: any(m.get("id") == "crlf" for m in daemon.received))
        result = await daemon.prompt(sid, "list files")
        assert result["stopReason"] == "end_turn"
        assert daemon.agent_text(sid)
    finally:
        await daemon.close()


async def test_lsp_cancel_request_with_dict_params_cancels_the_prompt(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """`$/cancelRequest` was silently lost with dict params.

    A cancelled prompt answers `{stopReason: "cancelled"}` (LSP allows a result or -32800;
    the result keeps the turn's usage), promptly, like `session/cancel`.
    """
    model.enqueue(text("slow " * 50, chunks=50), delay_s=0.05)
    sid = await daemon.new_session()
    task = asyncio.create_task(
        daemon.conn.request(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
            msg_id="prompt-1",
        )
    )
    await daemon.wait_for(lambda: bool(daemon.agent_text(sid)))
    started = time.monotonic()
    daemon.conn.notify("$/cancelRequest", {"id": "prompt-1"})
    result = await task
    assert result["stopReason"] == "cancelled", "the cancel was not lost"
    assert time.monotonic() - started < 2.5, "liveness: the bar is 1 s"
    model.enqueue(text("next"))
    assert (await daemon.prompt(sid, "again"))["stopReason"] == "end_turn"


async def test_acp_cancel_request_form_is_accepted(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env, framing="ndjson")
    try:
        await daemon.initialize()
        model.enqueue(text("slow " * 50, chunks=50), delay_s=0.05)
        sid = await daemon.new_session()
        task = asyncio.create_task(
            daemon.conn.request(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
                msg_id=99,
            )
        )
        await daemon.wait_for(lambda: bool(daemon.agent_text(sid)))
        daemon.conn.notify("$/cancel_request", {"requestId": 99})
        assert (await task)["stopReason"] == "cancelled"
    finally:
        await daemon.close()


async def test_withdrawn_approval_uses_the_acp_cancel_form_under_ndjson(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    from tests.support.mock_responses import tool_call

    cody_env.use_mock_provider(model.base_url, extra="approval_timeout_s = 0.3")
    daemon = await Daemon.start(cody_env, framing="ndjson")
    try:
        await daemon.initialize()
        model.enqueue(
            tool_call(
                "exec", {"command": "true", "escalate": True, "justification": "asks"}, call_id="c1"
            )
        )
        model.enqueue(text("ok"))
        sid = await daemon.new_session()
        daemon.answer("hang")
        await daemon.prompt(sid, "x")
        request_id = daemon.permission_requests[0]["_meta"]["cody"]["requestId"]
        cancels = [m for m in daemon.received if m.get("method", "").startswith("$/cancel")]
        assert cancels == [
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}
        ]
    finally:
        await daemon.close()


async def test_a_late_answer_to_a_withdrawn_approval_is_harmless(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """A withdrawn server->client request stayed pending; a late answer broke."""
    from tests.support.mock_responses import tool_call

    cody_env.use_mock_provider(model.base_url, extra="approval_timeout_s = 0.3")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(
            tool_call(
                "exec", {"command": "true", "escalate": True, "justification": "asks"}, call_id="c1"
            )
        )
        model.enqueue(text("ok"))
        sid = await daemon.new_session()
        gate = asyncio.Event()
        daemon.permission_gate = gate
        prompt = asyncio.create_task(daemon.prompt(sid, "x"))
        await daemon.wait_for(lambda: bool(daemon.permission_requests))
        await asyncio.sleep(0.5)
        assert (await prompt)["stopReason"] == "end_turn"
        request_id = daemon.permission_requests[0]["_meta"]["cody"]["requestId"]
        daemon.conn.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
            }
        )
        model.enqueue(text("still fine"))
        assert (await daemon.prompt(sid, "y"))["stopReason"] == "end_turn"
        assert not any("InvalidStateError" in line for line in daemon.process.stderr_lines)
    finally:
        daemon.permission_gate = None
        await daemon.close()


@pytest.mark.parametrize("framing", ["lsp", "ndjson"])
async def test_a_response_with_the_id_of_a_running_client_request_is_ignored(
    cody_env: CodyEnv, model: MockResponsesServer, framing: str
) -> None:
    """Issue 8.3: pygls filed incoming and outgoing ids in one table; a response with the id
    of the client's running prompt made it call `set_result` on the prompt's Task:
    RuntimeError, exit 1, every turn in every session lost."""
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env, framing=framing)  # type: ignore[arg-type]
    try:
        await daemon.initialize()
        model.enqueue(text("slow " * 40, chunks=40), delay_s=0.03)
        sid = await daemon.new_session()
        prompt = asyncio.create_task(
            daemon.conn.request(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
                msg_id=3,
            )
        )
        await daemon.wait_for(lambda: bool(daemon.agent_text(sid)))
        daemon.conn.send({"jsonrpc": "2.0", "id": 3, "result": None})
        daemon.conn.send({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "x"}})
        daemon.conn.send({"jsonrpc": "2.0", "id": "never-sent", "result": {}})
        result = await asyncio.wait_for(prompt, 30)
        assert result["stopReason"] == "end_turn", "the stray responses did not touch the prompt"
        assert daemon.agent_text(sid) == "slow " * 40
        assert daemon.process.process.returncode is None
        assert (await daemon.request("session/list", {}))["sessions"]
    finally:
        await daemon.close()


async def test_a_client_request_reusing_a_pending_approval_id_does_not_take_its_answer(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """Issue 8.3: a client request with the id of a pending approval replaced the approval's
    future; the approval's answer then crashed the daemon (RuntimeError on a Task)."""
    from tests.support.mock_responses import tool_call

    model.enqueue(
        tool_call(
            "exec", {"command": "echo ran", "escalate": True, "justification": "asks"}, call_id="c1"
        )
    )
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    gate = asyncio.Event()
    daemon.permission_gate = gate
    prompt = asyncio.create_task(daemon.prompt(sid, "x"))
    await daemon.wait_for(lambda: bool(daemon.permission_requests))
    approval_id = daemon.permission_requests[0]["_meta"]["cody"]["requestId"]
    listed = await daemon.conn.request("session/list", {}, msg_id=approval_id)
    assert listed["sessions"], "the client's request with that id is answered as its own"
    gate.set()
    assert (await prompt)["stopReason"] == "end_turn"
    [done] = [u for u in daemon.tool_updates(sid, "c1") if u.get("status") == "completed"]
    assert "ran" in json.dumps(done)
    assert daemon.process.process.returncode is None
    daemon.permission_gate = None


async def test_shutdown_then_exit_ends_the_process_with_code_0(offline_daemon: Daemon) -> None:
    assert await offline_daemon.request("shutdown") is None
    await expect_error(offline_daemon.request("session/list", {}), -32600)
    offline_daemon.conn.notify("exit")
    assert await asyncio.wait_for(offline_daemon.process.process.wait(), 5) == 0


async def test_stdin_eof_ends_the_process_cleanly_mid_turn(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(text("long " * 100, chunks=100), delay_s=0.05)
    sid = await daemon.new_session()
    asyncio.create_task(daemon.prompt(sid, "long"))  # noqa: RUF006 - ends with the process
    await daemon.wait_for(lambda: bool(daemon.agent_text(sid)))
    daemon.process.process.stdin.close()
    assert await asyncio.wait_for(daemon.process.process.wait(), 5) == 0
    [path] = sorted((daemon.env.cody_home / "sessions").glob("*/*/*/*.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[-1]["payload"]["kind"] == "turn_end"
    assert lines[-1]["payload"]["stopReason"] == "cancelled"


async def test_stray_prints_never_reach_the_protocol_stream(tmp_path) -> None:
    """Stdout pollution broke framing for vscode-jsonrpc."""
    script = (
        "import os, sys\n"
        "from cody_daemon.rpc.transport import guard_stdio\n"
        "channel = guard_stdio()\n"
        "print('stray print')\n"
        "os.write(1, b'stray fd write\\n')\n"
        "os.system('echo child output')\n"
        "os.write(channel.write_fd, b'FRAME')\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(b"")
    assert out == b"FRAME"
    assert b"stray print" in err and b"stray fd write" in err and b"child output" in err


async def test_logs_do_not_contain_prompts_or_keys(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """pygls logs every message body at INFO."""
    cody_env.use_mock_provider(model.base_url)
    from cody_client.process import DaemonProcess

    process = await DaemonProcess.spawn([*DAEMON_COMMAND, "-vv"], env=cody_env.env)
    daemon = Daemon(process, cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(text("SECRET-ANSWER-TEXT"))
        await daemon.prompt(sid, "SECRET-PROMPT-TEXT")
        await daemon.request("session/list", {})
    finally:
        await daemon.close()
    log = "\n".join(process.stderr_lines)
    for secret in ("SECRET-PROMPT-TEXT", "SECRET-ANSWER-TEXT", "test-key-not-secret"):
        assert secret not in log


CHATTY_DAEMON = """
import os, runpy, sys
from cody_daemon.rpc import server

blob = b"chatty log line " * 4096 + b"\\n"  # 64 KiB: one pipe's worth per write
os.write(2, blob * 32)  # 2 MiB before serving: an undrained pipe blocks right here
dispatch = server._Dispatcher.dispatch

def chatty_dispatch(self, body):
    os.write(2, blob * 4)  # 256 KiB on the event loop's thread for every message
    dispatch(self, body)

server._Dispatcher.dispatch = chatty_dispatch
sys.argv = ["cody-daemon", *sys.argv[1:]]
runpy.run_module("cody_daemon", run_name="__main__")
"""


@pytest.mark.parametrize("framing", ["lsp", "ndjson"])
async def test_a_chatty_daemon_does_not_block_on_stderr(cody_env: CodyEnv, framing: str) -> None:
    """An undrained stderr pipe blocks the server once 64 KiB fill.

    The daemon here writes 7 MiB to stderr, synchronously (2 MiB before it serves, 256 KiB
    on the event loop for every message), 100 times what a pipe holds: it keeps answering,
    and the client library has read all of it (if its stderr reader stops, this fails).
    """
    from cody_client.process import DaemonProcess

    command = [sys.executable, "-c", CHATTY_DAEMON]
    process = await DaemonProcess.spawn(command, env=cody_env.env, framing=framing)  # type: ignore[arg-type]
    daemon = Daemon(process, cody_env)
    try:
        await daemon.initialize()
        for _ in range(20):
            await daemon.request("session/list", {})
        await daemon.wait_for(lambda: sum(map(len, process.stderr_lines)) > 6 * 1024 * 1024)
    finally:
        await daemon.close()


async def test_initialize_accepts_any_protocol_version_and_answers_1(cody_env: CodyEnv) -> None:
    daemon = await Daemon.start(cody_env)
    try:
        for version in (2, "2025-06-18"):
            result = await daemon.request("initialize", {"protocolVersion": version})
            assert result["protocolVersion"] == 1
    finally:
        await daemon.close()


async def test_other_requests_are_answered_while_a_prompt_waits_for_approval(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """A blocking handler stalled everything, including cancels."""
    from tests.support.mock_responses import tool_call

    model.enqueue(
        tool_call(
            "exec", {"command": "true", "escalate": True, "justification": "asks"}, call_id="c1"
        )
    )
    model.enqueue(text("ok"))
    sid = await daemon.new_session()
    gate = asyncio.Event()
    daemon.permission_gate = gate
    prompt = asyncio.create_task(daemon.prompt(sid, "x"))
    await daemon.wait_for(lambda: bool(daemon.permission_requests))

    other = await daemon.new_session()
    assert (await daemon.request("session/list", {}))["sessions"]
    offline_prompt = await daemon.request(
        "session/set_config_option",
        {"sessionId": other, "configId": "provider", "value": "offline"},
    )
    assert offline_prompt["configOptions"]
    assert (await daemon.prompt(other, "list files"))["stopReason"] == "end_turn"
    assert not prompt.done()

    gate.set()
    assert (await prompt)["stopReason"] == "end_turn"
    daemon.permission_gate = None


async def test_a_slow_reader_gets_every_delta_in_order(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """With a slow client, writes piled up or blocked the server."""
    words = [f"w{index} " for index in range(3000)]
    model.enqueue(text("".join(words), chunks=3000))
    sid = await daemon.new_session()
    reader = daemon.process.process.stdout
    assert reader is not None
    reader_transport = daemon.process.process._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
    reader_transport.pause_reading()
    prompt = asyncio.create_task(daemon.prompt(sid, "flood"))
    await asyncio.sleep(0.5)
    reader_transport.resume_reading()
    assert (await prompt)["stopReason"] == "end_turn"
    assert daemon.agent_text(sid) == "".join(words)


async def test_a_client_that_stops_reading_pauses_the_turns_then_is_dropped_with_all_saved(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Issue 8.11: with asyncio pipes, output for a client that stopped reading was buffered
    without limit while every turn ran on. Now turns wait at their next update once the
    unread output passes the bound, and a client that stays stalled for `--stall-timeout` is
    dropped: the daemon says why, cancels and saves every turn, and exits with code 1."""
    from cody_client.process import DaemonProcess

    cody_env.use_mock_provider(model.base_url)
    process = await DaemonProcess.spawn(
        [*DAEMON_COMMAND, "--stall-timeout", "1.5"], env=cody_env.env
    )
    daemon = Daemon(process, cody_env)
    # Each answer (~1.6 MB) is larger than the bound plus a pipe: no turn can finish.
    full = "".join(f"w{i} " for i in range(220_000))
    try:
        await daemon.initialize()
        sids = [await daemon.new_session() for _ in range(2)]
        for _ in sids:
            model.enqueue(text(full, chunks=20_000))
        transport = process.process._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
        transport.pause_reading()
        prompts = [asyncio.create_task(daemon.prompt(sid, "flood")) for sid in sids]
        # (`Process.wait()` would also wait for the paused stdout pipe to be read to EOF.)
        await daemon.wait_for(lambda: process.process.returncode is not None, 30)
        assert process.process.returncode == 1
        transport.resume_reading()
        for outcome in await asyncio.gather(*prompts, return_exceptions=True):
            assert isinstance(outcome, Exception), "no answer from a client that was dropped"
        await daemon.wait_for(
            lambda: any("has not read its output" in line for line in process.stderr_lines)
        )
    finally:
        await daemon.process.close()
    paths = sorted((cody_env.cody_home / "sessions").glob("*/*/*/*.jsonl"))
    assert len(paths) == 2
    for path in paths:
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert lines[-1]["payload"] == {**lines[-1]["payload"], "kind": "turn_end"}
        assert lines[-1]["payload"]["stopReason"] == "cancelled"
        saved = "".join(
            part["text"]
            for line in lines
            if line["type"] == "response_item" and line["payload"].get("role") == "assistant"
            for part in line["payload"]["content"]
        )
        assert full.startswith(saved), "what was streamed is saved, in order"
        assert len(saved) < len(full), "the turn waited for the client instead of running on"


async def test_non_ascii_text_keeps_byte_exact_content_length(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """pygls' Content-Length counts characters, right only for ASCII."""
    reply = "Grüße, 世界! 🚀 ünïcödé ✓"
    model.enqueue(text(reply, chunks=4))
    sid = await daemon.new_session()
    await daemon.prompt(sid, "héllo wörld 你好")
    assert daemon.agent_text(sid) == reply
    assert model.requests[0].body["input"][-1]["content"][0]["text"] == "héllo wörld 你好"


async def test_prompt_errors_carry_their_message_as_data_details(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    """Issue 24.14: Toad shows only an error's `data.details` (where the ACP SDKs put an
    error's text), so a failed prompt showed nothing useful. Every error the daemon maps
    carries its message there too, next to the code's own `data` fields."""
    sid = await daemon.new_session()
    model.enqueue_error(400, message="mock: this model is not served here")
    provider = await expect_error(daemon.prompt(sid, "hello"), -32010)
    missing = await expect_error(
        daemon.request(
            "session/prompt",
            {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]},
        ),
        -32002,
    )
    invalid = await expect_error(
        daemon.request("session/prompt", {"sessionId": sid, "prompt": "not a list"}), -32602
    )
    not_object = await expect_error(daemon.request("session/prompt", ["a", "list"]), -32602)

    assert provider.data["details"] == provider.message and provider.data["kind"] == "provider"
    assert "this model is not served here" in provider.data["details"]
    assert missing.data == {"details": missing.message}
    assert invalid.data["details"] == invalid.message and invalid.data["errors"]
    assert not_object.data == {"details": not_object.message}
