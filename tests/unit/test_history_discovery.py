"""Discovery and listing of Codex, Claude Code and Cody sessions; paging of long files;
the tool vocabulary and its documentation; the import plan."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from cody_daemon.core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    MessageItem,
    ReasoningItem,
)
from cody_daemon.history.api import list_sessions, read_all, read_messages, resolve
from cody_daemon.history.discovery import (
    EXACT_COUNT_BYTES,
    HistoryIndex,
    HistoryRoots,
    claude_project_dir,
)
from cody_daemon.history.importer import plan_import
from cody_daemon.history.model import Msg, SourceInfo, text_block, tool_result_block, tool_use_block
from cody_daemon.history.vocabulary import TOOL_TABLE, map_tool
from cody_daemon.store.reader import INTERRUPTED_OUTPUT
from cody_protocol.history import HistoryListResult, HistoryReadResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "history"
REPO = Path(__file__).resolve().parents[2]
CODEX_ID = "01a2016a-2cc7-7713-957a-8f7d89039f89"
CLAUDE_ID = "62ba3d6f-69b4-4fb2-b809-98dd28854f87"


def populated(tmp: Path) -> HistoryIndex:
    """A CODEX_HOME, a CLAUDE_CONFIG_DIR and a Cody store holding the fixture sessions."""
    roots = HistoryRoots(tmp / "codex", tmp / "claude", tmp / "cody" / "sessions")
    day = roots.codex_home / "sessions" / "2026" / "11" / "22"
    day.mkdir(parents=True)
    shutil.copy(
        FIXTURES / "codex/rollout_exec_resumed.jsonl",
        day / f"rollout-2026-11-22T04-01-05-{CODEX_ID}.jsonl",
    )
    archived = roots.codex_home / "archived_sessions"
    archived.mkdir()
    declined = FIXTURES / "live/codex_rollout_declined.jsonl"
    declined_id = json.loads(declined.read_text().splitlines()[0])["payload"]["id"]
    shutil.copy(declined, archived / f"rollout-2026-11-24T05-02-13-{declined_id}.jsonl")
    project = roots.claude_dir / "projects" / claude_project_dir("/home/dev/project")
    project.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude/session.jsonl", project / f"{CLAUDE_ID}.jsonl")
    (project / CLAUDE_ID / "subagents").mkdir(parents=True)  # deeper files are not sessions
    (project / CLAUDE_ID / "subagents" / "agent-1.jsonl").write_text("{}\n")
    (roots.cody_sessions / "2026").mkdir(parents=True)
    (day / "rollout-2026-11-22T05-00-00-empty.jsonl").write_text("")  # no session in it
    return HistoryIndex(roots)


def test_list_finds_every_agents_sessions_with_their_details(tmp_path: Path) -> None:
    index = populated(tmp_path)
    result = list_sessions(index, None, None, None)
    HistoryListResult.model_validate(result)
    by_id = {s["sessionId"]: s for s in result["sessions"]}
    assert len(by_id) == 3
    codex = by_id[CODEX_ID]
    assert codex["agent"] == "codex" and codex["format"] == "codex-rollout"
    assert codex["cwd"] == "/home/dev/project" and codex["title"] == "run echo hello"
    assert codex["startedAt"] == "2026-11-22T04:01:05.259Z"
    assert codex["updatedAt"] == "2026-11-22T04:01:07.257Z"
    assert codex["messageCount"] == 10 and codex["messageCountExact"] is True
    assert codex["sizeBytes"] == (FIXTURES / "codex/rollout_exec_resumed.jsonl").stat().st_size
    claude = by_id[CLAUDE_ID]
    assert claude["agent"] == "claude" and claude["title"] == "run echo hello"
    assert claude["messageCount"] == 4
    archived = [s for s in result["sessions"] if s.get("archived")]
    assert len(archived) == 1 and archived[0]["title"] == "touch x.txt"
    times = [s["updatedAt"] for s in result["sessions"]]
    assert times == sorted(times, reverse=True)


def test_list_filters_by_agent_and_cwd(tmp_path: Path) -> None:
    index = populated(tmp_path)
    assert {s["agent"] for s in list_sessions(index, "claude", None, None)["sessions"]} == {
        "claude"
    }
    in_project = list_sessions(index, None, "/home/dev/project", None)["sessions"]
    assert {s["sessionId"] for s in in_project} == {CODEX_ID, CLAUDE_ID}
    assert list_sessions(index, None, str(tmp_path), None)["sessions"] == []


def test_find_by_id_for_each_agent_and_for_any(tmp_path: Path) -> None:
    index = populated(tmp_path)
    assert index.find("codex", CODEX_ID).format == "codex-rollout"
    assert index.find(None, CLAUDE_ID).agent == "claude"
    page = read_messages(
        index, resolve(index, None, CLAUDE_ID, None), None, None, include_original=True
    )
    HistoryReadResult.model_validate(page)
    assert page["session"]["sessionId"] == CLAUDE_ID
    assert page["messages"][0]["source"]["sessionId"] == CLAUDE_ID


def big_rollout(path: Path, turns: int) -> int:
    """A Codex rollout of `turns` turns (4 messages each, timestamps increasing)."""
    with open(path, "w", encoding="utf-8") as handle:
        meta = {"id": "big-1", "cwd": "/w", "timestamp": "2026-01-01T00:00:00Z"}
        handle.write(
            json.dumps(
                {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": meta}
            )
            + "\n"
        )
        for turn in range(turns):
            second = f"2026-01-01T{turn // 3600 % 24:02d}:{turn // 60 % 60:02d}:{turn % 60:02d}"
            rows: list[dict[str, Any]] = [
                {"type": "turn_context", "payload": {"model": "m", "cwd": "/w"}},
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": f"prompt {turn} " + "p" * 300}],
                    },
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call",
                        "name": "shell",
                        "arguments": '{"command": ["ls"]}',
                        "call_id": f"c{turn}",
                    },
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call_output",
                        "call_id": f"c{turn}",
                        "output": "o" * 500,
                    },
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": f"answer {turn}"}],
                    },
                },
                {
                    "type": "event_msg",
                    "payload": {
                        "type": "token_count",
                        "info": {"last_token_usage": {"input_tokens": turn}},
                    },
                },
            ]
            for row in rows:
                handle.write(
                    json.dumps({"timestamp": f"{second}.{turn % 1000:03d}Z", **row}) + "\n"
                )
    return turns * 4


def test_a_long_file_pages_exactly_like_one_read_and_counts_become_exact(tmp_path: Path) -> None:
    roots = HistoryRoots(tmp_path / "codex", tmp_path, tmp_path)
    day = roots.codex_home / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    path = day / "rollout-2026-01-01T00-00-00-big-1.jsonl"
    total = big_rollout(path, 1500)
    assert path.stat().st_size > EXACT_COUNT_BYTES
    index = HistoryIndex(roots)
    listed = list_sessions(index, "codex", None, None)["sessions"][0]
    assert listed["messageCountExact"] is False
    assert abs(listed["messageCount"] - total) < total * 0.1  # estimated from head and tail
    entry = index.find("codex", "big-1")
    everything, _, _, _ = read_all(entry)
    paged: list[dict[str, Any]] = []
    cursor = None
    pages = 0
    while True:
        page = read_messages(index, entry, cursor, 97, include_original=False)
        paged.extend(page["messages"])
        pages += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert pages == -(-total // 97)
    assert len(paged) == total
    source = SourceInfo("codex", "codex-rollout", str(path), "big-1")
    assert paged == [m.to_wire(source, include_original=False) for m in everything]
    assert [
        m["content"][0].get("text")
        for m in paged
        if m["role"] == "assistant" and m["content"][0]["type"] == "text"
    ][:3] == [
        "answer 0",
        "answer 1",
        "answer 2",
    ]
    relisted = list_sessions(index, "codex", None, None)["sessions"][0]
    assert relisted["messageCount"] == total and relisted["messageCountExact"] is True


def test_the_tool_table_maps_names_and_inputs() -> None:
    assert map_tool("codex", "shell", {"command": ["bash", "-lc", "ls -la"], "workdir": "/w"}) == (
        "Bash",
        {"command": "ls -la", "cwd": "/w"},
    )
    assert (
        map_tool("codex", "shell", {"command": ["git", "commit", "-m", "a b"]})[1]["command"]
        == "git commit -m 'a b'"
    )
    assert map_tool("codex", "exec_command", {"cmd": "echo hi", "yield_time_ms": 10}) == (
        "Bash",
        {"command": "echo hi", "yield_time_ms": 10},
    )
    assert map_tool("codex", "apply_patch", {"input": "*** Begin Patch"}) == (
        "Edit",
        {"patch": "*** Begin Patch"},
    )
    assert map_tool("cody", "exec", {"command": ["ls"], "timeout_ms": 5}) == (
        "Bash",
        {"command": "ls", "timeout": 5},
    )
    assert map_tool("cody", "applyPatch", {"patch": "p"}) == ("Edit", {"patch": "p"})
    assert map_tool("cody", "updatePlan", {"plan": [{"step": "a", "status": "completed"}]}) == (
        "TodoWrite",
        {"todos": [{"content": "a", "status": "completed", "activeForm": "a"}]},
    )
    assert map_tool("cody", "listDir", {"dir_path": "src"}) == ("LS", {"path": "src"})
    assert map_tool("claude", "Bash", {"command": "ls"}) == ("Bash", {"command": "ls"})
    assert map_tool("codex", "mystery_tool", {"a": 1}) == ("mystery_tool", {"a": 1})


def test_the_documented_tool_table_is_the_code_table() -> None:
    doc = (REPO / "docs" / "history.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (codex|cody) \| `([^`]+)` \| `([^`]+)` \|", doc, flags=re.MULTILINE)
    assert rows == [(m.agent, m.name, m.unified) for m in TOOL_TABLE]


def test_import_plan_keeps_the_conversation_and_pairs_every_call() -> None:
    messages = [
        Msg("system", [text_block("developer rules")], 1, is_meta=True),
        Msg("user", [text_block("<environment_context>")], 2, is_meta=True),
        Msg("user", [text_block("run ls")], 3),
        Msg(
            "assistant",
            [
                {"type": "thinking", "thinking": "ok"},
                text_block("Running."),
                tool_use_block("c1", "Bash", {"command": "ls"}),
            ],
            4,
        ),
        Msg("assistant", [tool_use_block("c2", "Read", {"file_path": "a"})], 5),
        Msg(
            "user",
            [
                tool_result_block(
                    "c1",
                    [text_block("a.txt"), {"type": "image", "source": {"type": "url", "url": "u"}}],
                    is_error=False,
                )
            ],
            6,
        ),
        Msg("user", [tool_result_block("c2", "no such file", is_error=True)], 7),
        Msg("user", [tool_result_block("ghost", "?", is_error=False)], 8),
        Msg("assistant", [text_block("Done.")], 9),
        Msg("user", [text_block("summary of before")], 10, compaction=True),
        Msg("assistant", [text_block("sub-agent talk")], 11, is_sidechain=True),
        Msg("user", [text_block("again")], 12),
        Msg("assistant", [tool_use_block("c1", "Bash", {"command": "pwd"})], 13),
    ]
    plan = plan_import(messages)
    shapes = [(type(i).__name__, getattr(i, "role", None)) for i in plan.items]
    assert shapes == [
        ("MessageItem", "user"),
        ("ReasoningItem", None),
        ("MessageItem", "assistant"),
        ("FunctionCallItem", None),
        ("FunctionCallItem", None),
        ("FunctionCallOutputItem", None),
        ("FunctionCallOutputItem", None),
        ("MessageItem", "assistant"),
        ("MessageItem", "user"),
        ("FunctionCallItem", None),
        ("FunctionCallOutputItem", None),
    ]
    items = plan.items
    assert (
        isinstance(items[1], ReasoningItem)
        and items[1].provider is None
        and items[1].encrypted_content is None
    )
    assert isinstance(items[3], FunctionCallItem) and json.loads(items[3].arguments) == {
        "command": "ls"
    }
    assert (
        isinstance(items[5], FunctionCallOutputItem) and items[5].output == "a.txt\n[image omitted]"
    )
    assert isinstance(items[6], FunctionCallOutputItem) and items[6].status == "failed"
    repeated = items[9]
    assert isinstance(repeated, FunctionCallItem) and repeated.call_id != "c1"  # ids stay unique
    last = items[10]
    assert isinstance(last, FunctionCallOutputItem) and last.call_id == repeated.call_id
    assert last.output == INTERRUPTED_OUTPUT and last.status == "failed"
    assert isinstance(items[8], MessageItem) and items[8].text == "again"
    assert (plan.messages, plan.tool_calls, plan.skipped_messages, plan.dropped_results) == (
        13,
        3,
        4,
        1,
    )


def test_an_imported_inline_image_stays_an_image_of_the_user_message() -> None:
    pixel = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    linked = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    plan = plan_import([Msg("user", [text_block("look"), pixel, linked], 1)])
    (message,) = plan.items
    assert isinstance(message, MessageItem)
    assert [image.image_url for image in message.images] == ["data:image/png;base64,iVBO"]
    assert "look" in message.text and "only inline (base64) images are imported" in message.text
