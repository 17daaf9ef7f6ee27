"""Every request body the daemon sends, checked against what the real CLIs send.

tests/fixtures/providers/*_requests_from_*.jsonl are captures of the Codex CLI 0.169 (Responses
API) and Claude Code 2.1.197 (Messages API) running the same task ("run echo hello": a first
request, then the follow-up carrying the tool call and its result), trimmed. The daemon runs
the same shape of task against the built-in provider at a mock base URL; for every field both
send, the values that configure the call must be equal and everything else must have the same
shape (keys of every item, block and tool). Fields only one side sends (Codex's `text` and
`client_metadata`, Claude Code's `metadata` and `context_management`, Cody's `instructions`)
are not compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support import mock_anthropic, mock_responses
from tests.support.daemon import CodyEnv, Daemon

FIXTURES = Path(__file__).parents[1] / "fixtures" / "providers"


def captured(name: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["body"] for line in lines if line.strip()]


async def run_task(env: CodyEnv, api: Any, module: Any, provider: str, model: str) -> None:
    (env.workspace / "hello.txt").write_text("hello\n")
    daemon = await Daemon.start(env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(provider=provider, model=model)
        api.enqueue(
            module.reasoning("The user wants the file read.", encrypted="opaque-1"),
            module.text("I'll read it."),
            module.tool_call("readFile", {"filePath": "hello.txt"}, call_id="toolu_1"),
        )
        api.enqueue(module.text("It says hello."))
        assert (await daemon.prompt(sid, "read hello.txt"))["stopReason"] == "end_turn"
    finally:
        await daemon.close()
    assert api.refused == []


def same_keys(ours: dict[str, Any], theirs: dict[str, Any], optional: set[str]) -> None:
    """`ours` has the keys `theirs` has, apart from keys one side may omit."""
    assert set(ours) - optional == set(theirs) - optional, (sorted(ours), sorted(theirs))


async def test_responses_requests_match_the_codex_cli(cody_env: CodyEnv) -> None:
    codex = captured("responses_requests_from_codex.jsonl")
    async with mock_responses.MockResponsesServer() as api:
        cody_env.env["OPENAI_API_KEY"] = "sk-test-not-secret"
        cody_env.env["OPENAI_BASE_URL"] = api.base_url
        await run_task(cody_env, api, mock_responses, "openai", "gpt-5.5")
    sent = [r.body for r in api.requests]
    assert len(sent) == len(codex) == 2
    for ours, theirs in zip(sent, codex, strict=True):
        shared = set(ours) & set(theirs)
        assert shared >= {"model", "input", "tools", "reasoning", "include", "store", "stream"}
        assert set(ours) - shared <= {"instructions"}  # Codex sends its prompt in `input`
        for key in ("model", "stream", "tool_choice", "parallel_tool_calls", "store", "include"):
            assert ours[key] == theirs[key], key
        assert ours["reasoning"] == theirs["reasoning"] == {"effort": "medium"}
        assert isinstance(ours["prompt_cache_key"], str)
        kinds = {(i["type"], i.get("role")): i for i in theirs["input"]}
        for item in ours["input"]:
            if item["type"] == "reasoning":
                continue  # Codex's capture has none; the shape follows the API reference
            # Codex's capture has no assistant message: its items have the user message's keys.
            twin = kinds.get((item["type"], item.get("role"))) or kinds[("message", "user")]
            same_keys(item, twin, optional={"id", "status"})
            for mine, theirs_part in zip(
                item.get("content", []), twin.get("content", []), strict=False
            ):
                assert mine.keys() == theirs_part.keys()
        for tool in ours["tools"]:
            assert tool.keys() == theirs["tools"][0].keys()
    follow_up = [i["type"] for i in sent[1]["input"]]
    assert "function_call" in follow_up and "function_call_output" in follow_up


async def test_messages_requests_match_claude_code(cody_env: CodyEnv) -> None:
    claude = captured("messages_requests_from_claude_code.jsonl")
    async with mock_anthropic.MockAnthropicServer() as api:
        cody_env.env["ANTHROPIC_API_KEY"] = "sk-ant-test-not-secret"
        cody_env.env["ANTHROPIC_BASE_URL"] = api.base_url
        await run_task(cody_env, api, mock_anthropic, "anthropic", "claude-opus-4-8")
    sent = [r.body for r in api.requests]
    assert len(sent) == len(claude) == 2
    for ours, theirs in zip(sent, claude, strict=True):
        shared = set(ours) & set(theirs)
        assert shared == set(ours), set(ours) - shared  # Cody sends nothing Claude Code lacks
        for key in ("model", "stream", "output_config"):
            assert ours[key] == theirs[key], key
        assert ours["thinking"]["type"] == theirs["thinking"]["type"] == "adaptive"
        assert isinstance(ours["max_tokens"], int) and ours["max_tokens"] > 0
        for block in ours["system"]:
            assert set(block) <= {"type", "text", "cache_control"}
        assert ours["system"][-1]["cache_control"] == theirs["system"][-1]["cache_control"]
        roles = [m["role"] for m in ours["messages"]]
        assert roles == [m["role"] for m in theirs["messages"] if m["role"] != "system"]
        blocks = {
            b["type"]: b for m in theirs["messages"] if m["role"] != "system" for b in m["content"]
        }
        for message in ours["messages"]:
            for block in message["content"]:
                same_keys(block, blocks[block["type"]], optional={"cache_control"})
        # Claude Code's mid-conversation `system` messages (a beta) are not compared.
        their_last = [m for m in theirs["messages"] if m["role"] != "system"][-1]
        last = ours["messages"][-1]["content"][-1]
        assert last["cache_control"] == their_last["content"][-1]["cache_control"]
        for tool in ours["tools"]:
            assert tool.keys() == theirs["tools"][0].keys()
    assistant = sent[1]["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["thinking", "text", "tool_use"]  # as Claude Code
    assert api.requests[0].headers["anthropic-version"] == "2023-06-01"
