"""A full disk under CODY_HOME, on a real small tmpfs, through the daemon (issue 8.9).

Before: the first failed write answered `-32603 Internal error (OSError)`, left a tool call
`in_progress`, and after space returned the session file had a torn line in the middle.
Now: the turn ends with an error that says the disk is full and names the session file,
every open tool call is closed on the client, and the file stays line-aligned, so the
session loads and goes on once there is room again.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.small_fs import fill_until_full, small_tmpfs


def assert_every_line_is_json(path: Path) -> list[dict]:
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"", "the file ends with a complete line"
    parsed = []
    for number, raw in enumerate(lines[:-1], 1):
        if raw.strip():
            parsed.append(json.loads(raw))  # a torn line would fail here
        else:
            assert number > 1
    return parsed


def closed_calls(daemon: Daemon, sid: str) -> dict[str, str]:
    last: dict[str, str] = {}
    for update in daemon.tool_updates(sid):
        if "status" in update:
            last[update["toolCallId"]] = update["status"]
    return last


async def test_a_full_disk_ends_the_turn_with_a_clear_error_and_loses_nothing_else(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    with small_tmpfs(cody_env.cody_home, 1024 * 1024) as home:
        cody_env.use_mock_provider(model.base_url, extra='approval_policy = "never"')
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session()
            model.enqueue(text("first answer"))
            await daemon.prompt(sid, "first")
            [path] = (home / "sessions").glob("*/*/*/*.jsonl")

            # 1. A tool result that does not fit.
            filler = fill_until_full(home, leave_free=8192)
            model.enqueue(
                tool_call("exec", {"command": "head -c 40000 /dev/zero | tr '\\0' a"}, call_id="t1")
            )
            error = await expect_error(daemon.prompt(sid, "run it"), -32603)
            assert "disk is full" in error.message and str(path) in error.message
            assert error.data == {
                "kind": "storage",
                "reason": "disk_full",
                "path": str(path),
                "details": error.message,
            }
            assert closed_calls(daemon, sid) == {"t1": "completed"}, "no call left in_progress"

            # 2. Room again: the session goes on in the same daemon.
            filler.unlink()
            model.enqueue(text("second answer"))
            assert (await daemon.prompt(sid, "again"))["stopReason"] == "end_turn"

            # 3. Streamed text that does not fit, with a tool call open when it fails.
            filler = fill_until_full(home, leave_free=8192)
            model.enqueue(tool_call("exec", {"command": "echo small"}, call_id="t2"))
            model.enqueue(text("word " * 8000, chunks=400))
            error = await expect_error(daemon.prompt(sid, "stream"), -32603)
            assert "disk is full" in error.message
            assert closed_calls(daemon, sid)["t2"] == "completed"
            filler.unlink()
            model.enqueue(text("third answer"))
            assert (await daemon.prompt(sid, "after"))["stopReason"] == "end_turn"

            # 4. A new session on a full disk fails alone and leaves no headless file.
            filler = fill_until_full(home)
            before = sorted((home / "sessions").glob("*/*/*/*.jsonl"))
            await expect_error(daemon.new_session(), -32603)
            assert sorted((home / "sessions").glob("*/*/*/*.jsonl")) == before
            filler.unlink()
        finally:
            await daemon.close()

        lines = assert_every_line_is_json(path)
        ends = [
            line["payload"]["stopReason"]
            for line in lines
            if line["payload"].get("kind") == "turn_end"
        ]
        assert ends[0] == "end_turn" and ends[-1] == "end_turn"

        second = await Daemon.start(cody_env)
        try:
            await second.initialize()
            await second.request(
                "session/load", {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []}
            )
            replayed = second.agent_text(sid)
            for answer in ("first answer", "second answer", "third answer"):
                assert answer in replayed
            model.enqueue(text("fourth answer"))
            assert (await second.prompt(sid, "more"))["stopReason"] == "end_turn"
        finally:
            await second.close()
