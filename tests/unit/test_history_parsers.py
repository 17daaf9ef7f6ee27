"""The history parsers on real Codex / Claude Code / Cody files: nothing lost, calls paired,
usage attached, order kept, and what each source's quirks need (merged split messages,
partial stream output, compaction, injected context, tool names)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.history.api import read_messages, resolve
from cody_daemon.history.discovery import HistoryIndex, HistoryRoots

from tests.support.history_checks import check_conversation, raw_lines, tool_ids

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "history"

FILES = {
    "codex/rollout_exec.jsonl": "codex-rollout",
    "codex/rollout_exec_resumed.jsonl": "codex-rollout",
    "codex/exec_json.jsonl": "codex-exec-json",
    "codex/exec_resume_json.jsonl": "codex-exec-json",
    "claude/session.jsonl": "claude-session",
    "claude/stream_json.jsonl": "claude-stream-json",
    "live/codex_rollout_compacted.jsonl": "codex-rollout",
    "live/codex_rollout_declined.jsonl": "codex-rollout",
    "live/codex_exec_1.jsonl": "codex-exec-json",
    "live/codex_exec_2.jsonl": "codex-exec-json",
    "live/claude_session_compacted.jsonl": "claude-session",
    "live/claude_stream_1.jsonl": "claude-stream-json",
    "live/claude_stream_2.jsonl": "claude-stream-json",
    "live/claude_stream_3.jsonl": "claude-stream-json",
}


def index(tmp: Path | None = None) -> HistoryIndex:
    root = tmp or Path("/nonexistent-history-root")
    return HistoryIndex(HistoryRoots(root / "codex", root / "claude", root / "cody"))


def read_all(
    path: Path, *, limit: int | None = None, original: bool = True
) -> tuple[list[dict[str, Any]], int]:
    """Every message of `path`, page by page; and the skipped-line total."""
    idx = index()
    entry = resolve(idx, None, None, str(path))
    messages: list[dict[str, Any]] = []
    skipped = 0
    cursor: str | None = None
    while True:
        page = read_messages(idx, entry, cursor, limit, include_original=original)
        messages.extend(page["messages"])
        skipped += page["skippedLines"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return messages, skipped


def kinds(message: dict[str, Any]) -> list[str]:
    return [block["type"] for block in message["content"]]


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_fixture_parses_with_nothing_lost_and_every_call_answered(name: str) -> None:
    path = FIXTURES / name
    messages, skipped = read_all(path)
    assert skipped == 0
    assert {m["source"]["format"] for m in messages} == {FILES[name]}
    check_conversation(messages, path, FILES[name])


@pytest.mark.parametrize("name", sorted(FILES))
def test_pages_of_three_give_exactly_the_whole_read(name: str) -> None:
    whole, _ = read_all(FIXTURES / name)
    paged, _ = read_all(FIXTURES / name, limit=3)
    assert paged == whole


def test_codex_rollout_maps_items_tools_and_usage() -> None:
    messages, _ = read_all(FIXTURES / "live/codex_rollout_compacted.jsonl")
    real = [m for m in messages if not m.get("isMeta")]
    assert [(m["role"], kinds(m)) for m in real] == [
        ("user", ["text"]),
        ("assistant", ["thinking"]),
        ("assistant", ["tool_use"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
        ("assistant", ["text"]),  # the compaction summary the model wrote
        ("system", ["text"]),  # the `compacted` line
        ("user", ["text"]),
        ("assistant", ["text"]),
    ]
    assert real[1]["content"][0]["thinking"] == "I should run echo"
    plan, shell = real[2]["content"][0], real[3]["content"][0]
    assert plan["name"] == "TodoWrite"
    assert plan["input"]["todos"] == [
        {"content": "run echo", "status": "in_progress", "activeForm": "run echo"}
    ]
    assert shell == {
        "type": "tool_use",
        "id": "call_echo",
        "name": "Bash",
        "input": {"command": "echo hello"},
    }
    assert (
        "hello" in real[5]["content"][0]["content"] and real[5]["content"][0]["is_error"] is False
    )
    # usage: once per model response, on its last message
    assert "usage" not in real[1] and "usage" not in real[2]
    assert real[3]["usage"] == {
        "input_tokens": 100,
        "cached_input_tokens": 0,
        "output_tokens": 20,
        "reasoning_tokens": 5,
    }
    assert real[6]["usage"]["cached_input_tokens"] == 50
    assert all(m["model"] == "gpt-5.5" for m in real if m["role"] == "assistant")
    assert real[7].get("compaction") and real[8].get("compaction")
    assert "Summary: the user ran echo hello." in real[8]["content"][0]["text"]
    injected = [m for m in messages if m.get("isMeta")]
    assert {m["role"] for m in injected} == {"system", "user"}
    assert injected[1]["content"][0]["text"].startswith("<environment_context>")


def test_codex_declined_call_is_an_error_result() -> None:
    messages, _ = read_all(FIXTURES / "live/codex_rollout_declined.jsonl")
    results = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
    assert len(results) == 1 and results[0]["is_error"] is True
    assert "rejected by user" in results[0]["content"]


def test_claude_split_assistant_lines_become_one_message_with_usage_once() -> None:
    path = FIXTURES / "live/claude_session_compacted.jsonl"
    messages, _ = read_all(path)
    first = next(m for m in messages if m["role"] == "assistant")
    assert kinds(first) == ["thinking", "text", "tool_use", "tool_use"]
    assert [b["name"] for b in first["content"] if b["type"] == "tool_use"] == ["TodoWrite", "Bash"]
    assert first["usage"] == {
        "input_tokens": 100,
        "cached_input_tokens": 0,
        "output_tokens": 20,
        "reasoning_tokens": 0,
    }
    lines = [
        line for line in raw_lines(path) if (line.get("message") or {}).get("id") == first["id"]
    ]
    assert len(lines) == 4 and first["_original"] == lines  # one line per content block


def test_claude_denied_write_and_compaction_are_flagged() -> None:
    messages, _ = read_all(FIXTURES / "live/claude_session_compacted.jsonl")
    denied = [
        b
        for m in messages
        for b in m["content"]
        if b["type"] == "tool_result" and b["tool_use_id"] == "toolu_write"
    ]
    assert denied[0]["is_error"] is True and "permission" in denied[0]["content"]
    compaction = [m for m in messages if m.get("compaction")]
    assert [m["role"] for m in compaction] == ["user", "system"]
    assert "The user ran echo hello; a write was denied." in compaction[0]["content"][0]["text"]
    echoes = [m for m in messages if m.get("isMeta")]
    assert any("<command-name>/compact" in m["content"][0]["text"] for m in echoes)


def test_claude_stream_json_takes_the_final_usage_from_the_partial_stream() -> None:
    messages, _ = read_all(FIXTURES / "live/claude_stream_1.jsonl")
    answers = [m for m in messages if m["role"] == "assistant"]
    # the `assistant` lines say output_tokens 1 (mid-stream); message_delta has the final 20
    assert [m["usage"]["output_tokens"] for m in answers] == [20, 20]


def test_claude_stream_cut_before_its_assistant_line_keeps_the_streamed_text(
    tmp_path: Path,
) -> None:
    lines = (FIXTURES / "live/claude_stream_2.jsonl").read_text(encoding="utf-8").splitlines()
    last_delta = max(i for i, line in enumerate(lines) if '"text_delta"' in line)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[: last_delta + 1]) + "\n", encoding="utf-8")
    messages, skipped = read_all(cut)
    assert skipped == 0
    assert messages[-1]["role"] == "assistant"
    assert messages[-1]["content"] == [{"type": "text", "text": "The write was denied."}]


def test_codex_exec_json_pairs_commands_with_their_output_and_ids_stay_unique() -> None:
    first, _ = read_all(FIXTURES / "codex/exec_json.jsonl")
    resumed, _ = read_all(FIXTURES / "codex/exec_resume_json.jsonl")
    use = next(b for m in first for b in m["content"] if b["type"] == "tool_use")
    assert use["name"] == "Bash" and use["input"] == {"command": "/bin/bash -lc 'echo hello'"}
    assert first[-1]["usage"]["input_tokens"] == 200
    uses, _ = tool_ids(first)
    assert list(uses) == ["t1:item_0"]
    assert kinds(resumed[0]) == ["tool_use"] and resumed[1]["content"][0]["content"] == "again\n"


def test_messages_come_out_in_timestamp_order_stable_for_equal_times(tmp_path: Path) -> None:
    def line(ts: str, text: str, role: str = "user") -> str:
        kind = "input_text" if role == "user" else "output_text"
        item = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        return json.dumps({"timestamp": ts, "type": "response_item", "payload": item})

    meta = json.dumps(
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {"id": "s1", "cwd": "/w"},
        }
    )
    rows = [
        meta,
        line("2026-01-01T00:00:02.000Z", "second", "assistant"),
        line("2026-01-01T00:00:01Z", "first"),
        line("2026-01-01T00:00:02Z", "third (same time as second)", "assistant"),
        line("2026-01-01T00:00:03.5+00:00", "fourth"),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    messages, _ = read_all(path)
    assert [m["content"][0]["text"] for m in messages] == [
        "first",
        "second",
        "third (same time as second)",
        "fourth",
    ]


def test_future_fields_unknown_types_and_torn_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    source = (FIXTURES / "codex/rollout_exec.jsonl").read_text(encoding="utf-8").splitlines()
    upgraded = []
    for text in source:
        line = json.loads(text)
        line["future_field"] = {"x": 1}
        if isinstance(line.get("payload"), dict):
            line["payload"]["another_future_field"] = [1, 2]
        upgraded.append(json.dumps(line))
    upgraded.insert(
        3,
        json.dumps(
            {"timestamp": "2026-11-22T04:01:05.300Z", "type": "brand_new_record", "payload": {}}
        ),
    )
    upgraded.insert(
        4,
        json.dumps(
            {
                "timestamp": "2026-11-22T04:01:05.300Z",
                "type": "response_item",
                "payload": {"type": "hologram"},
            }
        ),
    )
    upgraded.insert(5, "{not json")
    path = tmp_path / "rollout.jsonl"
    path.write_text(
        "\n".join(upgraded) + '\n{"timestamp": "2026-11-22T04:01:09Z", "type": "resp',
        encoding="utf-8",
    )
    messages, skipped = read_all(path)
    plain, _ = read_all(FIXTURES / "codex/rollout_exec.jsonl", original=False)
    assert skipped == 4  # unknown record, unknown item, broken JSON, torn last line
    assert [(m["role"], m["content"]) for m in messages] == [
        (m["role"], m["content"]) for m in plain
    ]


def test_legacy_codex_rollout_without_envelopes_is_read(tmp_path: Path) -> None:
    rows = [
        {"id": "legacy-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"command": ["bash", "-lc", "ls -a"]}),
            "call_id": "c1",
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": json.dumps({"output": "x", "metadata": {"exit_code": 2}}),
        },
    ]
    path = tmp_path / "rollout-2025-05-01T10-00-00-legacy-1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    messages, skipped = read_all(path)
    assert skipped == 0
    assert messages[1]["content"][0] == {
        "type": "tool_use",
        "id": "c1",
        "name": "Bash",
        "input": {"command": "ls -a"},
    }
    assert messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "x",
        "is_error": True,
    }
    assert messages[0]["source"]["sessionId"] == "legacy-1"


def test_cody_session_file_reads_with_the_stores_rules(tmp_path: Path) -> None:
    def row(kind: str, payload: dict[str, Any], ts: str = "2026-01-01T00:00:01.000Z") -> str:
        return json.dumps({"timestamp": ts, "type": kind, "payload": payload})

    rows = [
        row(
            "session_meta",
            {
                "id": "cody-1",
                "cwd": "/w",
                "created": "2026-01-01T00:00:00Z",
                "cliVersion": "0",
                "originator": "cody-daemon",
                "settings": {},
            },
        ),
        row("turn_context", {"turnId": "t1", "provider": "mock", "model": "mock-model"}),
        row(
            "response_item",
            {
                "type": "message",
                "id": "u1",
                "role": "user",
                "content": [{"type": "input_text", "text": "list"}],
            },
        ),
        row(
            "response_item",
            {
                "type": "reasoning",
                "id": "r1",
                "summary": [{"type": "summary_text", "text": "let me "}],
            },
        ),
        row(
            "response_item",
            {
                "type": "reasoning",
                "id": "r1",
                "summary": [{"type": "summary_text", "text": "look"}],
            },
        ),
        row(
            "response_item",
            {
                "type": "message",
                "id": "a1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Look"}],
            },
        ),
        row(
            "response_item",
            {
                "type": "message",
                "id": "a1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ing."}],
            },
        ),
        row(
            "response_item",
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "exec",
                "arguments": '{"command": ["ls", "-la"]}',
            },
        ),
        row(
            "event",
            {
                "kind": "usage",
                "last": {
                    "input_tokens": 50,
                    "output_tokens": 5,
                    "thought_tokens": 2,
                    "cached_read_tokens": 10,
                },
            },
        ),
        row(
            "response_item",
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "readFile",
                "arguments": '{"file_path": "a"}',
            },
        ),
    ]
    path = tmp_path / "rollout-2026-01-01T00-00-00-cody-1.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    messages, skipped = read_all(path)
    assert skipped == 0
    assert [(m["role"], kinds(m)) for m in messages] == [
        ("user", ["text"]),
        ("assistant", ["thinking"]),
        ("assistant", ["text"]),
        ("assistant", ["tool_use"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("user", ["tool_result"]),
    ]
    assert messages[1]["content"][0]["thinking"] == "let me look"
    assert messages[2]["content"][0]["text"] == "Looking."
    assert messages[3]["content"][0]["name"] == "Bash" and messages[3]["content"][0]["input"] == {
        "command": "ls -la"
    }
    assert messages[3]["usage"] == {
        "input_tokens": 50,
        "cached_input_tokens": 10,
        "output_tokens": 5,
        "reasoning_tokens": 2,
    }
    assert messages[4]["content"][0]["name"] == "Read"
    # calls the file never answered get the store's interrupted result, as session/load does
    assert {b["tool_use_id"] for m in messages[5:] for b in m["content"]} == {"c1", "c2"}
    assert all(m["content"][0]["is_error"] for m in messages[5:])


def write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_codex_item_kinds_of_other_versions_and_ui_duplicates(tmp_path: Path) -> None:
    """Shapes from other Codex versions: UI echoes (`user_message`, `agent_message`,
    `agent_reasoning`) are not doubled; custom tools, local shell, web search, reasoning
    content and images map to the unified blocks."""

    def row(kind: str, payload: dict[str, Any], second: int) -> dict[str, Any]:
        return {
            "timestamp": f"2025-09-01T10:00:{second:02d}.000Z",
            "type": kind,
            "payload": payload,
        }

    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    rows = [
        row("session_meta", {"id": "s-old", "cwd": "/w", "timestamp": "2025-09-01T10:00:00Z"}, 0),
        row("turn_context", {"model": "gpt-5-codex", "cwd": "/w"}, 1),
        row("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]}, 2),
        row("event_msg", {"type": "user_message", "message": "look", "images": []}, 2),
        row("response_item", {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "raw thoughts"}], "encrypted_content": None}, 3),
        row("event_msg", {"type": "agent_reasoning", "text": "raw thoughts"}, 3),
        row("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "p1", "name": "apply_patch", "input": patch}, 4),
        row("response_item", {"type": "custom_tool_call_output", "call_id": "p1", "output": "Success. Updated the following files:\nA a.txt\n"}, 5),
        row("response_item", {"type": "local_shell_call", "call_id": "l1", "status": "completed", "action": {"type": "exec", "command": ["bash", "-lc", "cat a.txt"], "working_directory": "/w"}}, 6),
        row("response_item", {"type": "function_call_output", "call_id": "l1", "output": {"content": "hi", "success": True}}, 7),
        row("response_item", {"type": "web_search_call", "id": "ws1", "status": "completed", "action": {"type": "search", "query": "codex rollout"}}, 8),
        row("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Patched."}]}, 9),
        row("event_msg", {"type": "agent_message", "message": "Patched."}, 9),
        row("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 9, "cached_input_tokens": 1, "output_tokens": 2, "reasoning_output_tokens": 1}}}, 9),
        row("event_msg", {"type": "token_count", "info": None, "rate_limits": {}}, 9),
    ]  # fmt: skip
    path = write_lines(tmp_path / "rollout-old.jsonl", rows)
    messages, skipped = read_all(path)
    assert skipped == 0
    check_conversation(messages, path, "codex-rollout")
    assert [(m["role"], kinds(m)) for m in messages] == [
        ("user", ["text", "image"]),
        ("assistant", ["thinking"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    assert messages[0]["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "iVBORw0KGgo=",
    }
    assert messages[1]["content"][0]["thinking"] == "raw thoughts"
    assert messages[2]["content"][0] == {
        "type": "tool_use",
        "id": "p1",
        "name": "Edit",
        "input": {"patch": patch},
    }
    assert messages[4]["content"][0]["input"] == {"command": "cat a.txt", "cwd": "/w"}
    assert messages[5]["content"][0]["content"] == "hi"
    assert messages[6]["content"][0] == {
        "type": "tool_use",
        "id": "ws1",
        "name": "WebSearch",
        "input": {"query": "codex rollout"},
    }
    assert messages[8]["usage"] == {
        "input_tokens": 9,
        "cached_input_tokens": 1,
        "output_tokens": 2,
        "reasoning_tokens": 1,
    }
    assert messages[8]["model"] == "gpt-5-codex"


def test_claude_sidechains_summaries_images_and_server_tools(tmp_path: Path) -> None:
    base = {"sessionId": "c-1", "cwd": "/w", "version": "1.0.0"}

    def row(**fields: Any) -> dict[str, Any]:
        return {**base, **fields}

    rows = [
        {"type": "summary", "summary": "Fixing the parser", "leafUuid": "u9"},
        row(type="user", uuid="u1", timestamp="2025-06-01T00:00:01Z", message={"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}}]}),
        row(type="assistant", uuid="a1", timestamp="2025-06-01T00:00:02Z", message={"id": "m1", "role": "assistant", "model": "claude-x", "content": [{"type": "server_tool_use", "id": "srv1", "name": "web_search", "input": {"query": "cats"}}, {"type": "web_search_tool_result", "tool_use_id": "srv1", "content": [{"type": "web_search_result", "url": "u"}]}, {"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "look"}}], "usage": {"input_tokens": 5, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 2, "output_tokens": 3}}),
        row(type="user", uuid="s1", isSidechain=True, timestamp="2025-06-01T00:00:03Z", message={"role": "user", "content": "sub-agent prompt"}),
        row(type="assistant", uuid="s2", isSidechain=True, timestamp="2025-06-01T00:00:04Z", message={"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "sub-agent answer"}]}),
        row(type="user", uuid="u2", timestamp="2025-06-01T00:00:05Z", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "it is a cat"}]}]}),
        row(type="system", uuid="y1", timestamp="2025-06-01T00:00:06Z", content="Claude usage limit reached", level="warning"),
        row(type="file-history-snapshot", messageId="m1", snapshot={}),
        row(type="assistant", uuid="a3", timestamp="2025-06-01T00:00:07Z", message={"id": "m3", "role": "assistant", "content": [{"type": "redacted_thinking", "data": "opaque"}, {"type": "text", "text": "A cat."}]}),
    ]  # fmt: skip
    path = write_lines(tmp_path / "c-1.jsonl", rows)
    messages, skipped = read_all(path)
    assert skipped == 0
    check_conversation(messages, path, "claude-session")
    sidechain = [m for m in messages if m.get("isSidechain")]
    assert [m["role"] for m in sidechain] == ["user", "assistant"]
    assert messages[0]["content"][1]["source"]["media_type"] == "image/jpeg"
    assert messages[1]["usage"] == {
        "input_tokens": 17,
        "cached_input_tokens": 10,
        "output_tokens": 3,
        "reasoning_tokens": 0,
    }
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use", "tool_result", "tool_use"]
    assert messages[-2]["role"] == "system" and messages[-2]["isMeta"] is True
    assert kinds(messages[-1]) == ["thinking", "text"]
    idx = index()
    listed = idx.summarize(resolve(idx, None, None, str(path)))
    assert listed is not None and listed["title"] == "Fixing the parser", (
        "Claude Code's own summary wins"
    )


def test_the_shared_fixtures_carry_their_usage() -> None:
    codex, _ = read_all(FIXTURES / "codex/rollout_exec.jsonl")
    model_messages = [m for m in codex if m["role"] == "assistant"]
    assert [m["usage"]["output_tokens"] for m in model_messages] == [20, 20]
    claude, _ = read_all(FIXTURES / "claude/session.jsonl")
    answers = [m for m in claude if m["role"] == "assistant"]
    assert [m["usage"]["input_tokens"] for m in answers] == [19445, 19581]
    assert [b["type"] for b in answers[0]["content"]] == ["thinking", "text", "tool_use"]
    stream, _ = read_all(FIXTURES / "claude/stream_json.jsonl")
    assert all("usage" in m for m in stream if m["role"] == "assistant")
