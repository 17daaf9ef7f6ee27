"""Unified history through the real daemon and `cody-client`: list, read, a Cody session's
history, import and continue, bad input. Sessions of the other agents come from the real-CLI
fixtures in tests/fixtures/history (tests/e2e/test_history_agents.py makes fresh ones)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cody_protocol.history import HistoryImportResult, HistoryListResult, HistoryReadResult

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.history_checks import check_conversation
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import assistant_texts, tool_outputs, user_texts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "history"
CODEX_ID = "01a2016a-2cc7-7713-957a-8f7d89039f89"
CLAUDE_ID = "62ba3d6f-69b4-4fb2-b809-98dd28854f87"
CLIENT = [sys.executable, "-m", "cody_client"]


def place_fixtures(env: CodyEnv) -> dict[str, Path]:
    """The Codex and Claude Code fixture sessions where the agents keep them."""
    codex_day = env.root / "codex-home" / "sessions" / "2026" / "11" / "22"
    codex_day.mkdir(parents=True, exist_ok=True)
    codex = codex_day / f"rollout-2026-11-22T04-01-05-{CODEX_ID}.jsonl"
    shutil.copy(FIXTURES / "codex/rollout_exec_resumed.jsonl", codex)
    project = env.root / "claude-config" / "projects" / "-home-dev-project"
    project.mkdir(parents=True, exist_ok=True)
    claude = project / f"{CLAUDE_ID}.jsonl"
    shutil.copy(FIXTURES / "claude/session.jsonl", claude)
    return {"codex": codex, "claude": claude}


async def read_everything(daemon: Daemon, **ref: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {**ref, "limit": 4, **({"cursor": cursor} if cursor else {})}
        page = await daemon.request("_cody/history/read", params)
        HistoryReadResult.model_validate(page)
        messages.extend(page["messages"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return messages


async def test_history_methods_are_listed_and_list_every_agents_sessions(daemon: Daemon) -> None:
    place_fixtures(daemon.env)
    init = await daemon.initialize()
    extensions = init["_meta"]["cody"]["extensions"]
    for method in (
        "_cody/history/list",
        "_cody/history/read",
        "_cody/session/history",
        "_cody/history/import",
    ):
        assert method in extensions
    result = await daemon.request("_cody/history/list", {})
    HistoryListResult.model_validate(result)
    listed = {(s["agent"], s["sessionId"]): s for s in result["sessions"]}
    assert set(listed) == {("codex", CODEX_ID), ("claude", CLAUDE_ID)}
    assert listed[("codex", CODEX_ID)]["title"] == "run echo hello"
    assert listed[("claude", CLAUDE_ID)]["cwd"] == "/home/dev/project"
    only_claude = await daemon.request("_cody/history/list", {"agent": "claude"})
    assert [s["sessionId"] for s in only_claude["sessions"]] == [CLAUDE_ID]
    elsewhere = await daemon.request("_cody/history/list", {"cwd": str(daemon.env.workspace)})
    assert elsewhere["sessions"] == []


async def test_sessions_read_page_by_page_with_nothing_lost(daemon: Daemon) -> None:
    paths = place_fixtures(daemon.env)
    codex = await read_everything(daemon, sessionId=CODEX_ID)
    check_conversation(codex, paths["codex"], "codex-rollout")
    claude = await read_everything(daemon, agent="claude", sessionId=CLAUDE_ID)
    check_conversation(claude, paths["claude"], "claude-session")
    stream = await read_everything(daemon, path=str(FIXTURES / "claude/stream_json.jsonl"))
    check_conversation(stream, FIXTURES / "claude/stream_json.jsonl", "claude-stream-json")
    first = await daemon.request(
        "_cody/history/read", {"sessionId": CODEX_ID, "includeOriginal": False}
    )
    assert "_original" not in first["messages"][0]
    assert first["session"]["messageCount"] == len(codex)


async def test_a_cody_sessions_history_is_unified_too(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": ["echo", "hi"]}, call_id="call_1"))
    model.enqueue(text("It printed hi."))
    sid = await daemon.new_session(approval_policy="never")
    await daemon.prompt(sid, "say hi")
    result = await daemon.request("_cody/session/history", {"sessionId": sid})
    HistoryReadResult.model_validate(result)
    messages = result["messages"]
    assert [(m["role"], m["content"][0]["type"]) for m in messages] == [
        ("user", "text"),
        ("assistant", "tool_use"),
        ("user", "tool_result"),
        ("assistant", "text"),
    ]
    use = messages[1]["content"][0]
    assert use["name"] == "Bash" and use["input"]["command"] == "echo hi"
    assert messages[2]["content"][0]["tool_use_id"] == "call_1"
    assert "hi" in messages[2]["content"][0]["content"]
    assert messages[3]["content"][0]["text"] == "It printed hi."
    assert messages[1]["model"] == "mock-model"
    assert all(m["source"]["agent"] == "cody" for m in messages)
    listed = await daemon.request("_cody/history/list", {"agent": "cody"})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    assert listed["sessions"][0]["title"] == "say hi"


async def test_an_imported_codex_session_is_replayed_and_continued(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    place_fixtures(daemon.env)
    result = await daemon.request(
        "_cody/history/import",
        {"source": "codex", "sessionId": CODEX_ID, "cwd": str(daemon.env.workspace)},
    )
    HistoryImportResult.model_validate(result)
    imported = result["imported"]
    assert imported["toolCalls"] == 2 and imported["skippedMessages"] == 2
    sid = result["sessionId"]
    await daemon.request("session/close", {"sessionId": sid})
    await daemon.request(
        "session/load", {"sessionId": sid, "cwd": str(daemon.env.workspace), "mcpServers": []}
    )
    replayed = daemon.session_updates(sid)
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["run echo hello", "run echo again"]
    calls = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
    # Each imported call shows its command and kind, not a bare `Bash` (issue 24.12).
    assert [(c["title"], c["kind"]) for c in calls] == [
        ("echo hello", "execute"),
        ("echo again", "execute"),
    ]
    assert all(c["status"] == "completed" for c in calls)
    model.enqueue(text("You ran echo twice."))
    await daemon.prompt(sid, "what did you run?")
    request = model.requests[-1]
    assert user_texts(request) == ["run echo hello", "run echo again", "what did you run?"]
    assert any("Output:\nhello" in t for t in assistant_texts(request))
    assert set(tool_outputs(request)) == {"call_mock_1", "call_mock_3"}
    assert "Output:\nagain" in tool_outputs(request)["call_mock_3"]


async def test_bad_input_gets_clear_errors_and_the_daemon_goes_on(
    daemon: Daemon, tmp_path: Path
) -> None:
    paths = place_fixtures(daemon.env)
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(os.urandom(200_000).replace(b"\n", b" "))
    error = await expect_error(daemon.request("_cody/history/read", {"path": str(binary)}), -32602)
    assert "not a session file Cody can read" in error.message
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    error = await expect_error(
        daemon.request("_cody/history/read", {"path": str(fifo)}, timeout=10), -32602
    )
    assert "not a regular file" in error.message
    await expect_error(
        daemon.request("_cody/history/read", {"sessionId": "../../etc/passwd"}), -32602
    )
    error = await expect_error(
        daemon.request("_cody/history/read", {"sessionId": "no-such-session"}), -32002
    )
    assert "_cody/history/list" in error.message
    await expect_error(
        daemon.request("_cody/history/read", {"sessionId": CODEX_ID, "cursor": "forged"}), -32602
    )
    await expect_error(daemon.request("_cody/history/read", {"path": "relative.jsonl"}), -32602)
    page = await daemon.request("_cody/history/read", {"sessionId": CODEX_ID, "limit": 2})
    paths["codex"].unlink()
    error = await expect_error(
        daemon.request(
            "_cody/history/read", {"path": str(paths["codex"]), "cursor": page["nextCursor"]}
        ),
        -32002,
    )
    assert "does not exist" in error.message
    missing_cwd = {"sessionId": CLAUDE_ID}  # never taken from the file: the client gives it
    error = await expect_error(daemon.request("_cody/history/import", missing_cwd), -32602)
    assert "cwd" in error.message
    nowhere = {"sessionId": CLAUDE_ID, "cwd": "/no/such/dir"}
    error = await expect_error(daemon.request("_cody/history/import", nowhere), -32602)
    assert "/no/such/dir" in error.message
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes((FIXTURES / "claude/session.jsonl").read_bytes()[:-200])
    result = await daemon.request("_cody/history/read", {"path": str(torn)})
    assert result["skippedLines"] == 1 and len(result["messages"]) == 3
    assert (await daemon.request("session/list", {}))["sessions"] == []


def write_big_rollout(path: Path, megabytes: int) -> int:
    """A Codex rollout of about `megabytes` MB: many turns of a call, its output and an answer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "big-session", "cwd": "/w"},
    }
    turn = 0
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(meta) + "\n")
        while handle.tell() < megabytes * 1024 * 1024:
            stamp = f"2026-01-01T{turn // 3_600_000 % 24:02d}:{turn // 60000 % 60:02d}:{turn // 1000 % 60:02d}.{turn % 1000:03d}Z"
            items = [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"prompt {turn}"}],
                },
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": '{"command": ["ls"]}',
                    "call_id": f"c{turn}",
                },
                {"type": "function_call_output", "call_id": f"c{turn}", "output": "x" * 2000},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": f"answer {turn}"}],
                },
            ]
            handle.write(
                json.dumps({"timestamp": stamp, "type": "turn_context", "payload": {"model": "m"}})
                + "\n"
            )
            for item in items:
                handle.write(
                    json.dumps({"timestamp": stamp, "type": "response_item", "payload": item})
                    + "\n"
                )
            turn += 1
    return turn * 4


@pytest.mark.timeout(120)
async def test_a_big_rollout_lists_fast_and_pages_while_the_daemon_stays_responsive(
    daemon: Daemon,
) -> None:
    """Liveness only (generous bounds); the speed is measured in bench/history.py."""
    path = (
        daemon.env.root
        / "codex-home"
        / "sessions"
        / "2026"
        / "01"
        / "01"
        / "rollout-2026-01-01T00-00-00-big-session.jsonl"
    )
    total = write_big_rollout(path, 40)
    started = time.monotonic()
    listed = await daemon.request("_cody/history/list", {"agent": "codex"})
    assert time.monotonic() - started < 10
    info = listed["sessions"][0]
    assert info["sessionId"] == "big-session" and info["messageCountExact"] is False
    assert abs(info["messageCount"] - total) < total * 0.05
    read = asyncio.ensure_future(
        daemon.request(
            "_cody/history/read",
            {"sessionId": "big-session", "limit": 1000, "includeOriginal": False},
        )
    )
    await daemon.request("session/list", {})  # answered while the page is read in a worker
    page = await read
    assert len(page["messages"]) == 1000 and page["nextCursor"]
    second = await daemon.request(
        "_cody/history/read",
        {"sessionId": "big-session", "limit": 1000, "cursor": page["nextCursor"]},
    )
    assert second["messages"][0]["content"][0]["text"] == "prompt 250"


async def run_client(env: CodyEnv, *args: str, timeout: float = 60) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env.env,
        cwd=env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_cody_client_history_list_show_import_then_resume(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "never"')
    place_fixtures(cody_env)
    code, out, err = await run_client(cody_env, "history", "list")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2, out  # newest first: Claude Code's session ran after Codex's
    assert lines[0].startswith("claude  " + CLAUDE_ID) and lines[0].endswith("run echo hello")
    assert (
        lines[1].startswith("codex   " + CODEX_ID) and "   10 msgs  /home/dev/project" in lines[1]
    )
    code, out, err = await run_client(cody_env, "history", "list", "--agent", "claude", "--json")
    assert code == 0, err
    assert [json.loads(line)["sessionId"] for line in out.splitlines()] == [CLAUDE_ID]

    code, out, err = await run_client(cody_env, "history", "show", CLAUDE_ID)
    assert code == 0, err
    assert "› run echo hello" in out
    assert "▸ Bash echo hello\n  ✓ hello" in out
    assert "Tool finished (OK). Output was: hello" in out
    code, out, err = await run_client(cody_env, "history", "show", CLAUDE_ID, "--json")
    assert code == 0, err
    shown = [json.loads(line) for line in out.splitlines()]
    check_conversation(shown, FIXTURES / "claude/session.jsonl", "claude-session")
    assert all("_original" in m for m in shown)

    code, out, err = await run_client(cody_env, "history", "show", "nope-not-a-session")
    assert code == 2 and "No session id starts with 'nope-not-a-session'." in err

    code, out, err = await run_client(
        cody_env, "history", "import", CLAUDE_ID, "--cwd", str(cody_env.workspace)
    )
    assert code == 0, err
    new_id = out.split("into Cody session ")[1].split()[0]
    assert f"cody-client --resume {new_id}" in out
    model.enqueue(text("You asked me to run echo hello."))
    code, out, err = await run_client(cody_env, "exec", "--resume", new_id, "what did I ask?")
    assert code == 0, err
    assert "You asked me to run echo hello." in out
    request = model.requests[-1]
    assert user_texts(request) == ["run echo hello", "what did I ask?"]
    assert tool_outputs(request) == {"toolu_238c9388076b4141a2dcd17b": "hello"}
    assert "Tool finished (OK). Output was: hello" in assistant_texts(request)
