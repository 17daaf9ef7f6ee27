"""Live command output (issue 13.9): increments, throttled, bounded; a display-only terminal
for a client that opts in as Zed does (`clientCapabilities._meta.terminal_output`), appended
text chunks for a client that opts into them (`_meta.cody.appendOutput`), and the output so
far for any other client (ACP's `content` replaces, issue 24.14); the command always runs in
Cody's sandbox (no `terminal/create`).

The terminal `_meta` keys are Zed's (crates/agent_servers/src/acp.rs reads `terminal_info` on
the `tool_call`, `terminal_output {terminal_id, data}` and `terminal_exit {terminal_id,
exit_code, signal}` on updates), as codex-acp writes them (src/thread.rs).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.editor import ZED_CAPABILITIES
from tests.support.mock_responses import MockResponsesServer, text, tool_call

LINES = "for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 0.05; done"
EXPECTED = "".join(f"line {i}\n" for i in range(1, 9))
BIG = "head -c 3000000 /dev/zero | tr '\\0' x"


APPENDING = {"_meta": {"cody": {"appendOutput": True}}}


async def start(
    cody_env: CodyEnv, model: MockResponsesServer, capabilities: dict[str, Any] | None
) -> Daemon:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    await daemon.initialize(capabilities)
    return daemon


@pytest.fixture
async def zed(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[Daemon]:
    daemon = await start(cody_env, model, ZED_CAPABILITIES)
    yield daemon
    await daemon.close()
    assert not [m for m in daemon.received if str(m.get("method", "")).startswith("terminal/")]


@pytest.fixture
async def plain(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[Daemon]:
    daemon = await start(cody_env, model, None)
    yield daemon
    await daemon.close()


@pytest.fixture
async def appending(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[Daemon]:
    daemon = await start(cody_env, model, APPENDING)
    yield daemon
    await daemon.close()


def terminal_data(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["_meta"]["terminal_output"]["data"]
        for u in updates
        if "terminal_output" in u.get("_meta", {})
    ]


def appended(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["content"][0]["content"]["text"]
        for u in updates
        if u.get("_meta", {}).get("cody", {}).get("appendOutput")
    ]


async def test_a_zed_like_client_gets_a_display_terminal_fed_with_increments(
    zed: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(
        tool_call("exec", {"command": LINES}, call_id="c1"),
        tool_call("exec", {"command": "echo bad; exit 3"}, call_id="c2"),
    )
    model.enqueue(text("ran"))
    sid = await zed.new_session(approvalPolicy="never")

    await zed.prompt(sid, "run")

    updates = zed.tool_updates(sid, "c1")
    start = updates[0]
    assert start["sessionUpdate"] == "tool_call"
    assert start["content"] == [{"type": "terminal", "terminalId": "c1"}]
    assert start["_meta"]["terminal_info"] == {
        "terminal_id": "c1",
        "cwd": str(zed.env.workspace),
    }
    data = terminal_data(updates)
    assert "".join(data) == EXPECTED, "every byte once, in order: increments only"
    assert len(data) >= 2, "the output arrived while the command ran, not only at the end"
    final = updates[-1]
    assert final["status"] == "completed"
    assert final["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": 0, "signal": None}
    assert final["content"] == [{"type": "terminal", "terminalId": "c1"}]
    assert EXPECTED in final["rawOutput"]["output"], "the full output is in the final update"
    failed = zed.tool_updates(sid, "c2")[-1]
    assert failed["status"] == "failed"
    assert failed["_meta"]["terminal_exit"]["exit_code"] == 3


async def test_a_client_that_opts_in_gets_appended_text_chunks_and_the_final_output(
    appending: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": LINES}, call_id="c1"))
    model.enqueue(text("ran"))
    sid = await appending.new_session(approvalPolicy="never")

    await appending.prompt(sid, "run")

    updates = appending.tool_updates(sid, "c1")
    assert not any(c.get("type") == "terminal" for u in updates for c in u.get("content") or [])
    chunks = appended(updates)
    assert "".join(chunks) == EXPECTED and len(chunks) >= 2
    assert updates[-1]["status"] == "completed"
    assert updates[-1]["content"][0]["content"]["text"] == EXPECTED


async def test_a_spec_following_client_always_shows_the_whole_output_so_far(
    plain: Daemon, model: MockResponsesServer
) -> None:
    """Issue 24.14: Toad (ACP: a `tool_call_update`'s `content` replaces the call's) showed
    only `line 4` of 8 lines while the command ran, because each update held only the new
    piece. A client that did not opt into appending gets the output so far in each update."""
    model.enqueue(tool_call("exec", {"command": LINES}, call_id="c1"))
    model.enqueue(text("ran"))
    sid = await plain.new_session(approvalPolicy="never")

    await plain.prompt(sid, "run")

    updates = plain.tool_updates(sid, "c1")
    assert not appended(updates), "no increments for a client that did not ask for them"
    live = [
        u["content"][0]["content"]["text"]
        for u in updates
        if "status" not in u and u.get("content")
    ]
    assert len(live) >= 2, "the output arrived while the command ran"
    shown = ""
    for snapshot in live:  # what the client shows: each update replaces the last
        assert snapshot.startswith("line 1\n") and EXPECTED.startswith(snapshot), snapshot
        assert len(snapshot) > len(shown), "it only grows"
        shown = snapshot
    assert updates[-1]["status"] == "completed"
    assert updates[-1]["content"][0]["content"]["text"] == EXPECTED


async def test_a_huge_output_is_bounded_live_and_complete_at_the_end(
    zed: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": BIG}, call_id="big"))
    model.enqueue(text("done"))
    sid = await zed.new_session(approvalPolicy="never")

    await zed.prompt(sid, "flood")

    updates = zed.tool_updates(sid, "big")
    live = "".join(terminal_data(updates))
    assert 1024 * 1024 <= len(live) < 1024 * 1024 + 128 * 1024, "the stream stops at 1 MiB"
    assert "live output stops after" in live
    assert len(updates) < 60, "throttled: a few updates, not one per read"
    final = updates[-1]
    assert final["content"][0] == {"type": "terminal", "terminalId": "big"}
    tail = final["content"][1]["content"]["text"]
    assert "bytes omitted" in tail and tail.endswith("x" * 1000), "head + tail shown at the end"
    assert final["rawOutput"]["truncated"] is True


async def test_the_output_so_far_is_capped_to_its_latest_part(
    plain: Daemon, model: MockResponsesServer
) -> None:
    """Sending the whole output so far in each update would grow with the square of the
    output: each update holds at most its last 16 KiB, saying how much came before."""
    model.enqueue(tool_call("exec", {"command": BIG}, call_id="big"))
    model.enqueue(text("done"))
    sid = await plain.new_session(approvalPolicy="never")

    await plain.prompt(sid, "flood")

    updates = plain.tool_updates(sid, "big")
    live = [
        u["content"][0]["content"]["text"]
        for u in updates
        if "status" not in u and u.get("content")
    ]
    assert live and all(len(snapshot) <= 16 * 1024 + 80 for snapshot in live)
    assert live[-1].startswith("[... ") and "earlier characters not shown ...]\n" in live[-1]
    assert sum(map(len, live)) < 4 * 1024 * 1024, "bounded traffic for 3 MB of output"
    assert updates[-1]["rawOutput"]["truncated"] is True
