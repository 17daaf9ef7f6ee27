"""Sessions made by the real Codex CLI and Claude Code (pinned in tests/agents, run offline
against the loopback mocks, see tests/support/agent_sessions.py), read and imported through
the real daemon: a tool call, a denied call, reasoning, a resumed session and a compaction
parse with nothing lost, calls paired with results and usage attached; an imported Codex
session and an imported Claude Code session continue in Cody, each on the other's API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support import mock_anthropic
from tests.support.agent_sessions import (
    CLAUDE_PROMPTS,
    CODEX_PROMPTS,
    ClaudeSessions,
    CodexSessions,
    build_claude,
    build_codex,
)
from tests.support.daemon import CodyEnv, Daemon
from tests.support.history_checks import check_conversation
from tests.support.mock_responses import MockResponsesServer, text
from tests.support.model_inputs import assistant_texts, tool_outputs, user_texts

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]


@dataclass
class Built:
    env: CodyEnv
    codex: CodexSessions
    claude: ClaudeSessions


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    env = CodyEnv.create(tmp_path_factory.mktemp("agents"))
    out = env.root / "transcripts"
    agents_home = env.root / "agents-home"
    codex = build_codex(env.root / "codex-home", agents_home, env.workspace, out)
    claude = build_claude(env.root / "claude-config", agents_home, env.workspace, out)
    return Built(env, codex, claude)


@pytest.fixture
async def agents_daemon(
    built: Built,
) -> AsyncIterator[tuple[Daemon, MockResponsesServer, mock_anthropic.MockAnthropicServer]]:
    async with (
        MockResponsesServer() as responses,
        mock_anthropic.MockAnthropicServer() as anthropic,
    ):
        built.env.env["MOCK_API_KEY"] = "test-key-not-secret"
        built.env.write_config(
            'model_provider = "resp"\napproval_policy = "never"\n'
            + "".join(
                f'[model_providers.{name}]\nbase_url = "{url}"\nwire_api = "{wire}"\n'
                'env_key = "MOCK_API_KEY"\ndefault_model = "mock-model"\nrequest_max_retries = 0\n'
                for name, url, wire in (
                    ("resp", responses.base_url, "responses"),
                    ("anth", anthropic.base_url, "anthropic"),
                )
            )
        )
        daemon = await Daemon.start(built.env)
        await daemon.initialize()
        try:
            yield daemon, responses, anthropic
        finally:
            await daemon.close()


async def read_all(daemon: Daemon, **ref: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await daemon.request(
            "_cody/history/read", {**ref, "limit": 5, **({"cursor": cursor} if cursor else {})}
        )
        assert page["skippedLines"] == 0
        messages.extend(page["messages"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return messages


def blocks(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [b for m in messages for b in m["content"] if b["type"] == kind]


def typed_prompts(messages: list[dict[str, Any]]) -> list[str]:
    """What the user typed: user text that is neither injected nor a compaction summary."""
    return [
        block["text"]
        for m in messages
        if m["role"] == "user" and not (m.get("isMeta") or m.get("compaction"))
        for block in m["content"]
        if block["type"] == "text"
    ]


def message_with(messages: list[dict[str, Any]], kind: str, **match: Any) -> dict[str, Any]:
    return next(
        m
        for m in messages
        for b in m["content"]
        if b["type"] == kind and all(b.get(k) == v for k, v in match.items())
    )


async def test_real_codex_sessions_parse_with_nothing_lost(
    built: Built, agents_daemon: Any
) -> None:
    daemon = agents_daemon[0]
    codex = built.codex
    main = await read_all(daemon, agent="codex", sessionId=codex.main_id)
    check_conversation(main, codex.main_rollout, "codex-rollout")
    assert typed_prompts(main) == list(CODEX_PROMPTS), (
        "both runs (the second one resumed) are in one session"
    )
    assert blocks(main, "thinking")[0]["thinking"] == "I should run echo"
    uses = {b["id"]: b for b in blocks(main, "tool_use")}
    assert (
        uses["call_echo"]["name"] == "Bash"
        and uses["call_echo"]["input"]["command"] == "echo hello"
    )
    assert uses["call_plan"]["name"] == "TodoWrite"
    assert uses["call_plan"]["input"]["todos"][0]["content"] == "run echo"
    echo = next(b for b in blocks(main, "tool_result") if b["tool_use_id"] == "call_echo")
    assert "hello" in echo["content"] and echo["is_error"] is False
    usage = {
        "call_echo": message_with(main, "tool_use", id="call_echo")["usage"],
        "Done: hello": message_with(main, "text", text="Done: hello")["usage"],
        "Again done": message_with(main, "text", text="Again done")["usage"],
    }
    assert usage["call_echo"] == {
        "input_tokens": 100,
        "cached_input_tokens": 0,
        "output_tokens": 20,
        "reasoning_tokens": 5,
    }
    assert (
        usage["Done: hello"]["input_tokens"] == 3000
        and usage["Done: hello"]["cached_input_tokens"] == 50
    )
    assert usage["Again done"]["input_tokens"] == 120
    compaction = [m for m in main if m.get("compaction")]
    assert [m["role"] for m in compaction] == ["assistant", "system"]
    assert "Summary: the user ran echo hello." in compaction[1]["content"][0]["text"]

    declined = await read_all(daemon, sessionId=codex.declined_id)
    check_conversation(declined, codex.declined_rollout, "codex-rollout")
    refusal = blocks(declined, "tool_result")
    assert (
        len(refusal) == 1
        and refusal[0]["is_error"] is True
        and "rejected by user" in refusal[0]["content"]
    )

    for transcript in codex.exec_outputs:
        messages = await read_all(daemon, path=str(transcript))
        check_conversation(messages, transcript, "codex-exec-json")
        assert messages[-1]["usage"]["output_tokens"] > 0


async def test_real_claude_code_sessions_parse_with_nothing_lost(
    built: Built, agents_daemon: Any
) -> None:
    daemon = agents_daemon[0]
    claude = built.claude
    session = await read_all(daemon, agent="claude", sessionId=claude.session_id)
    check_conversation(session, claude.session_file, "claude-session")
    assert typed_prompts(session) == list(CLAUDE_PROMPTS[:2]), (
        "the resumed runs continue the same session"
    )
    first = message_with(session, "tool_use", id="toolu_echo")
    assert [b["type"] for b in first["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert first["usage"] == {
        "input_tokens": 100,
        "cached_input_tokens": 0,
        "output_tokens": 20,
        "reasoning_tokens": 0,
    }
    assert first["model"] == "claude-sonnet-4-5"
    denied = next(b for b in blocks(session, "tool_result") if b["tool_use_id"] == "toolu_write")
    assert denied["is_error"] is True
    assert not (built.env.workspace / "a.txt").exists()
    compaction = [m for m in session if m.get("compaction")]
    assert {m["role"] for m in compaction} == {"user", "system"}
    assert any(
        "a write was denied" in b["text"]
        for m in compaction
        for b in m["content"]
        if b["type"] == "text"
    )

    for number, transcript in enumerate(claude.stream_outputs, start=1):
        messages = await read_all(daemon, path=str(transcript))
        check_conversation(messages, transcript, "claude-stream-json")
        answers = [m for m in messages if m["role"] == "assistant"]
        assert all(m["usage"]["output_tokens"] > 1 for m in answers), (
            f"run {number}: final usage from the stream"
        )

    listed = await daemon.request("_cody/history/list", {"cwd": str(built.env.workspace)})
    by_id = {s["sessionId"]: s for s in listed["sessions"]}
    assert set(by_id) >= {built.codex.main_id, built.codex.declined_id, claude.session_id}
    assert by_id[claude.session_id]["title"] == "run echo hello"
    assert by_id[built.codex.declined_id]["title"] == "touch x.txt"


def anthropic_texts(body: dict[str, Any], role: str) -> list[str]:
    return [
        b["text"]
        for m in body["messages"]
        if m["role"] == role
        for b in m["content"]
        if b["type"] == "text"
    ]


async def test_an_imported_codex_session_continues_on_the_anthropic_api(
    built: Built, agents_daemon: Any
) -> None:
    daemon, _responses, anthropic = agents_daemon
    result = await daemon.request(
        "_cody/history/import",
        {
            "agent": "codex",
            "sessionId": built.codex.main_id,
            "cwd": str(built.env.workspace),
            "_meta": {"cody": {"provider": "anth"}},
        },
    )
    assert result["imported"]["cwd"] == str(built.env.workspace)
    assert result["imported"]["sourceCwd"] == str(built.env.workspace), "where Codex ran"
    assert result["_meta"]["cody"]["provider"] == "anth"
    anthropic.enqueue(mock_anthropic.text("You ran echo hello, twice asked."))
    await daemon.prompt(result["sessionId"], "what happened?")
    body = anthropic.requests[-1].body
    users = anthropic_texts(body, "user")
    # Cody's environment-and-permissions item comes after the imported history, before the
    # first prompt in Cody (the Messages API takes it as user text)
    assert users[2].startswith("<environment>") and "<permissions>" in users[2]
    assert users[:2] + users[3:] == ["run echo hello", "say again", "what happened?"]
    assert anthropic_texts(body, "assistant") == ["Done: hello", "Again done"]
    results = {
        b["tool_use_id"]: b
        for m in body["messages"]
        for b in m["content"]
        if b["type"] == "tool_result"
    }
    assert set(results) == {"call_plan", "call_echo"}
    assert "hello" in results["call_echo"]["content"]
    calls = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert [c["name"] for c in calls] == ["TodoWrite", "Bash"]
    assert not any(
        b["type"] in ("thinking", "redacted_thinking")
        for m in body["messages"]
        for b in m["content"]
    ), "Codex's encrypted reasoning is not sent to another provider"
    assert "Summary: the user ran echo hello." not in json.dumps(body), (
        "the compaction summary is not imported"
    )


async def test_an_imported_claude_code_session_continues_on_the_responses_api(
    built: Built, agents_daemon: Any
) -> None:
    daemon, responses, _anthropic = agents_daemon
    result = await daemon.request(
        "_cody/history/import",
        {
            "agent": "claude",
            "path": str(built.claude.session_file),
            "cwd": str(built.env.workspace),
        },
    )
    assert result["imported"]["toolCalls"] == 3
    sid = result["sessionId"]
    responses.enqueue(text("The echo ran; the write was denied."))
    await daemon.prompt(sid, "summarize")
    request = responses.requests[-1]
    assert user_texts(request) == ["run echo hello", "write a.txt", "summarize"]
    assert assistant_texts(request) == ["I'll run it.", "Done: hello", "The write was denied."]
    outputs = tool_outputs(request)
    assert outputs["toolu_echo"] == "hello"
    assert "permission" in outputs["toolu_write"]
    assert set(outputs) == {"toolu_plan", "toolu_echo", "toolu_write"}
    await daemon.request("session/close", {"sessionId": sid})
    await daemon.request(
        "session/load", {"sessionId": sid, "cwd": str(built.env.workspace), "mcpServers": []}
    )
    replayed = [u for u in daemon.session_updates(sid) if u["sessionUpdate"] == "tool_call"]
    failed = {u["toolCallId"] for u in replayed if u["status"] == "failed"}
    assert {u["toolCallId"] for u in replayed} >= {
        "toolu_echo",
        "toolu_write",
    } and "toolu_write" in failed
