"""Every wire API through the real daemon: same conversation, switching, errors, logins, usage.

The mock servers follow each API's official event sequence and error bodies (see the
references at the top of tests/support/mock_responses.py, mock_chat.py and mock_anthropic.py).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.providers.pricing import cost_usd, price_for
from cody_daemon.store.reader import read_session
from cody_protocol.prompt import TokenUsage

from tests.support import mock_anthropic, mock_chat, mock_responses
from tests.support.daemon import CodyEnv, Daemon, expect_error, start_with_mock_key
from tests.support.mock_oauth import MockTokenServer, fake_jwt

APIS = {
    "responses": mock_responses,
    "chat": mock_chat,
    "anthropic": mock_anthropic,
}
SERVERS = {
    "responses": mock_responses.MockResponsesServer,
    "chat": mock_chat.MockChatServer,
    "anthropic": mock_anthropic.MockAnthropicServer,
}


def provider_block(name: str, wire_api: str, base_url: str, retries: int = 0) -> str:
    return (
        f"[model_providers.{name}]\n"
        f'base_url = "{base_url}"\nwire_api = "{wire_api}"\nenv_key = "MOCK_API_KEY"\n'
        f'default_model = "mock-model"\nrequest_max_retries = {retries}\n'
        f"stream_max_retries = {retries}\nrequest_retry_window_ms = 400\n"
    )


@pytest.fixture(params=list(APIS))
async def api(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, Any]]:
    async with SERVERS[request.param]() as server:
        yield request.param, server


def script_conversation(module: Any, server: Any) -> None:
    server.enqueue(
        module.reasoning("Let me read both files.", encrypted="sig-1"),
        module.text("I'll check two files.", chunks=2),
        module.tool_call("readFile", {"filePath": "a.txt"}, call_id="call_a"),
        module.tool_call("readFile", {"filePath": "b.txt"}, call_id="call_b"),
        usage=module.Usage(input=100, output=20, cached=10, reasoning=5),
    )
    server.enqueue(
        module.text("Both files say hello.", chunks=3),
        usage=module.Usage(input=150, output=10),
    )


def normalized_updates(daemon: Daemon, sid: str) -> list[Any]:
    """The update stream as a user sees it: text runs joined, tool calls by id, usage."""
    out: list[Any] = []
    for update in daemon.session_updates(sid):
        kind = update["sessionUpdate"]
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            if out and out[-1][0] == kind:
                out[-1] = (kind, out[-1][1] + update["content"]["text"])
            else:
                out.append((kind, update["content"]["text"]))
        elif kind == "tool_call":
            out.append(
                (kind, update["toolCallId"], update["title"], update["kind"], update["status"])
            )
        elif kind == "tool_call_update" and update.get("status"):
            out.append((kind, update["toolCallId"], update["status"]))
        elif kind == "usage_update":
            out.append((kind, update["used"], update["size"]))
        elif kind == "session_info_update":
            out.append((kind, update.get("title")))
    return out


def normalized_history(path: Path, workspace: Path) -> list[dict[str, Any]]:
    """History without ids, provider-opaque fields and the (per-test) workspace path."""
    items = []
    for item in read_session(path).items:
        data = item.model_dump(mode="json", exclude_none=True)
        for key in ("id", "encrypted_content", "signature", "provider"):
            data.pop(key, None)
        items.append(json.loads(json.dumps(data).replace(str(workspace), "<workspace>")))
    return items


async def test_the_same_conversation_on_every_wire_api(tmp_path: Path) -> None:
    results = {}
    for name, module in APIS.items():
        env = CodyEnv.create(tmp_path / name)
        (env.workspace / "a.txt").write_text("hello from a\n")
        (env.workspace / "b.txt").write_text("hello from b\n")
        async with SERVERS[name]() as server:
            daemon = await start_with_mock_key(
                env, 'model_provider = "mock"\n' + provider_block("mock", name, server.base_url)
            )
            try:
                sid = await daemon.new_session()
                script_conversation(module, server)
                result = await daemon.prompt(sid, "what do a.txt and b.txt say?")
                [path] = (env.cody_home / "sessions").glob("*/*/*/*.jsonl")
                outputs_seen = json.dumps(server.requests[1].body)
                assert "hello from a" in outputs_seen and "hello from b" in outputs_seen, name
                results[name] = (
                    normalized_updates(daemon, sid),
                    normalized_history(path, env.workspace),
                    result["_meta"]["cody"]["usage"],
                )
            finally:
                await daemon.close()
    first = results["responses"]
    for name in ("chat", "anthropic"):
        updates, history, usage = results[name]
        if name == "chat":
            # Chat Completions has no portable reasoning: the thought may be missing only there.
            first_updates = [u for u in first[0] if u[0] != "agent_thought_chunk"]
            updates = [u for u in updates if u[0] != "agent_thought_chunk"]
            first_history = [i for i in first[1] if i["type"] != "reasoning"]
            history = [i for i in history if i["type"] != "reasoning"]
        else:
            first_updates, first_history = first[0], first[1]
        assert updates == first_updates, name
        assert history == first_history, name
        expected = json.loads(json.dumps(first[2]))
        if name == "anthropic":
            # The Messages API counts thinking inside output_tokens and reports no separate
            # figure, so Cody honestly reports 0 thought tokens there.
            for bucket in expected.values():
                bucket["thoughtTokens"] = 0
        assert usage == expected, name
    updates, _, usage = first
    assert ("usage_update", 120, 128000) in updates and ("usage_update", 160, 128000) in updates
    assert usage["last"] == {
        "inputTokens": 150,
        "outputTokens": 10,
        "totalTokens": 160,
        "thoughtTokens": 0,
        "cachedReadTokens": 0,
        "cachedWriteTokens": 0,
    }
    assert usage["turn"]["inputTokens"] == 250 and usage["turn"]["outputTokens"] == 30
    assert usage["turn"]["cachedReadTokens"] == 10
    assert usage["total"] == usage["turn"]


async def test_one_session_moves_from_anthropic_to_chat_to_responses(cody_env: CodyEnv) -> None:
    (cody_env.workspace / "a.txt").write_text("alpha\n")
    async with (
        mock_anthropic.MockAnthropicServer() as claude,
        mock_chat.MockChatServer() as chat,
        mock_responses.MockResponsesServer() as responses,
    ):
        daemon = await start_with_mock_key(
            cody_env,
            'model_provider = "claude"\n'
            + provider_block("claude", "anthropic", claude.base_url)
            + provider_block("chat", "chat", chat.base_url)
            + provider_block("resp", "responses", responses.base_url),
        )
        try:
            sid = await daemon.new_session()
            claude.enqueue(
                mock_anthropic.reasoning("thinking on claude", signature="claude-sig"),
                mock_anthropic.tool_call("readFile", {"filePath": "a.txt"}, call_id="toolu_1"),
            )
            claude.enqueue(mock_anthropic.text("It says alpha."))
            await daemon.prompt(sid, "turn one")
            await daemon.set_config_option(sid, "provider", "chat")
            chat.enqueue(mock_chat.text("Chat here."))
            await daemon.prompt(sid, "turn two")
            await daemon.set_config_option(sid, "provider", "resp")
            responses.enqueue(mock_responses.text("Responses here."))
            await daemon.prompt(sid, "turn three")
        finally:
            await daemon.close()

    # Anthropic got its own thinking back (with its signature) on the second call.
    second = claude.requests[1].body
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assistant_blocks = [b["type"] for b in second["messages"][1]["content"]]
    assert assistant_blocks[0] == "thinking" and "tool_use" in assistant_blocks
    assert second["messages"][1]["content"][0]["signature"] == "claude-sig"

    # Chat Completions: valid roles, the tool call answered by a tool message, no thinking.
    body = chat.requests[0].body
    roles = [m["role"] for m in body["messages"]]
    # system prompt, Cody's environment-and-permissions item (a user message on Chat), then
    # the conversation
    assert roles == ["system", "user", "user", "assistant", "tool", "assistant", "user"]
    assert body["messages"][1]["content"].startswith("<environment>")
    assistant = body["messages"][3]
    assert assistant["tool_calls"][0]["id"] == "toolu_1"
    assert (
        body["messages"][4]["tool_call_id"] == "toolu_1"
        and "alpha" in body["messages"][4]["content"]
    )
    assert "claude-sig" not in json.dumps(body) and "thinking on claude" not in json.dumps(body)
    assert body["stream_options"] == {"include_usage": True}

    # Responses: the opaque Anthropic reasoning is dropped; calls and outputs pair up.
    body = responses.requests[0].body
    fixture = json.loads(
        (Path(__file__).parents[1] / "fixtures/providers/responses_request_codex.json").read_text()
    )
    fixture_body = fixture.get("body", fixture)
    assert set(body) <= set(fixture_body) | {"instructions", "max_output_tokens"}
    types = [item["type"] for item in body["input"]]
    assert "reasoning" not in types
    assert types.count("function_call") == 1 and types.count("function_call_output") == 1
    users = [i["content"][0]["text"] for i in body["input"] if i.get("role") == "user"]
    assert users == ["turn one", "turn two", "turn three"]


ERRORS = {
    "responses": {
        "auth": {"status": 401},
        "context": {
            "status": 400,
            "code": "context_length_exceeded",
            "message": "This model's maximum context length is 400000 tokens.",
        },
        "server": {"status": 500},
        "rate": {"status": 429, "headers": {"Retry-After": "1"}},
    },
    "chat": {
        "auth": {"status": 401},
        "context": {
            "status": 400,
            "code": "context_length_exceeded",
            "message": "This model's maximum context length is 128000 tokens.",
        },
        "server": {"status": 500},
        "rate": {"status": 429, "headers": {"Retry-After": "1"}},
    },
    "anthropic": {
        "auth": {"status": 401},
        "context": {
            "status": 400,
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
        "server": {"status": 500},
        "rate": {"status": 429, "headers": {"retry-after": "1"}},
    },
}


def enqueue_error(server: Any, spec: dict[str, Any]) -> None:
    spec = dict(spec)
    server.enqueue_error(spec.pop("status"), **spec)


async def test_errors_are_classified_with_actionable_messages(
    cody_env: CodyEnv, api: tuple[str, Any]
) -> None:
    name, server = api
    module = APIS[name]
    daemon = await start_with_mock_key(
        cody_env,
        'model_provider = "mock"\n' + provider_block("mock", name, server.base_url, retries=1),
    )
    try:
        sid = await daemon.new_session()

        enqueue_error(server, ERRORS[name]["rate"])
        server.enqueue(module.text("after the wait"))
        started = time.monotonic()
        assert (await daemon.prompt(sid, "rate limited"))["stopReason"] == "end_turn"
        assert time.monotonic() - started >= 0.9, "Retry-After: 1 was honoured"
        assert daemon.agent_text(sid).endswith("after the wait")

        enqueue_error(server, ERRORS[name]["auth"])
        error = await expect_error(daemon.prompt(sid, "bad key"), -32010)
        assert error.data["kind"] == "auth" and error.data["httpStatus"] == 401
        assert "MOCK_API_KEY" in error.message and "test-key-not-secret" not in error.message

        enqueue_error(server, ERRORS[name]["context"])
        error = await expect_error(daemon.prompt(sid, "too long"), -32010)
        assert error.data["kind"] == "context_window"
        assert "new session" in error.message or "shorten" in error.message.lower()

        enqueue_error(server, ERRORS[name]["server"])
        enqueue_error(server, ERRORS[name]["server"])
        error = await expect_error(daemon.prompt(sid, "server down"), -32010)
        assert error.data["kind"] == "provider" and error.data["retryable"] is True
        assert error.data["httpStatus"] == 500

        server.enqueue(module.text("partial " * 20, chunks=20), cut_after=8)
        error = await expect_error(daemon.prompt(sid, "cut"), -32010)
        assert error.data["kind"] == "network"
        assert "partial" in daemon.agent_text(sid), "what streamed before the cut was shown"

        server.enqueue(module.text("still alive"))
        assert (await daemon.prompt(sid, "again"))["stopReason"] == "end_turn"
        user_turns = [
            text
            for text in json.dumps(server.requests[-1].body).split('"')
            if text in ("rate limited", "bad key", "too long", "server down", "cut", "again")
        ]
        assert user_turns[-1] == "again" and "rate limited" in user_turns, "no turn input was lost"
    finally:
        await daemon.close()


async def test_an_expired_chatgpt_login_is_refreshed_and_the_file_keeps_its_fields(
    cody_env: CodyEnv,
) -> None:
    now = time.time()
    expired = fake_jwt({"sub": "old", "exp": now - 60})
    fresh = fake_jwt({"sub": "new", "exp": now + 3600})
    auth_file = Path(cody_env.env["CODEX_HOME"]) / "auth.json"
    auth_file.write_text(
        json.dumps(
            {
                "OPENAI_API_KEY": None,
                "tokens": {
                    "id_token": fake_jwt({"sub": "id"}),
                    "access_token": expired,
                    "refresh_token": "refresh-1",
                    "account_id": "acct-123",
                },
                "last_refresh": "2026-11-01T00:00:00Z",
                "preferred_auth_method": "chatgpt",
                "some_future_field": {"keep": True},
            }
        )
    )
    os.chmod(auth_file, 0o600)
    async with MockTokenServer() as tokens, mock_responses.MockResponsesServer() as backend:
        tokens.enqueue(
            200,
            {
                "access_token": fresh,
                "refresh_token": "refresh-2",
                "id_token": fake_jwt({"sub": "id2"}),
            },
        )
        cody_env.env["CODY_CHATGPT_TOKEN_URL"] = tokens.url
        cody_env.env["CODY_CHATGPT_BASE_URL"] = backend.base_url
        backend.chatgpt_backend = True  # refuses a request without `instructions`
        daemon = await Daemon.start(cody_env)
        try:
            init = await daemon.initialize()
            assert init["_meta"]["cody"]["defaultProvider"] == "openai", (
                "auto picks the ChatGPT login"
            )
            sid = await daemon.new_session()
            backend.enqueue(mock_responses.text("hi from chatgpt"))
            assert (await daemon.prompt(sid, "hello"))["stopReason"] == "end_turn"
        finally:
            await daemon.close()
    assert tokens.requests[0].body["grant_type"] == "refresh_token"
    assert tokens.requests[0].body["refresh_token"] == "refresh-1"
    assert backend.refused == []
    headers = backend.requests[0].headers
    assert headers["authorization"] == f"Bearer {fresh}"
    assert headers["chatgpt-account-id"] == "acct-123"
    # Cody says who it is (not the Codex CLI's `codex_cli_rs`).
    assert headers["originator"] == "cody" and headers["user-agent"].startswith("cody/")
    body = backend.requests[0].body
    assert body["instructions"]  # the ChatGPT backend requires them
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}  # a login may summarise
    saved = json.loads(auth_file.read_text())
    assert (
        saved["tokens"]["access_token"] == fresh and saved["tokens"]["refresh_token"] == "refresh-2"
    )
    assert saved["tokens"]["account_id"] == "acct-123"
    assert (
        saved["some_future_field"] == {"keep": True} and saved["preferred_auth_method"] == "chatgpt"
    )
    assert saved["last_refresh"] != "2026-11-01T00:00:00Z"
    assert oct(auth_file.stat().st_mode & 0o777) == "0o600"
    session_text = "".join(
        p.read_text() for p in (cody_env.cody_home / "sessions").glob("*/*/*/*.jsonl")
    )
    assert (
        fresh not in session_text
        and expired not in session_text
        and "refresh-2" not in session_text
    )


async def test_a_claude_login_is_never_sent_by_the_native_loop(cody_env: CodyEnv) -> None:
    """A claude.ai login may only be used by Claude Code itself: Cody's own loop refuses it,
    says to use the `claude` backend, and (Claude Code not installed) how to install it."""
    credentials = Path(cody_env.env["CLAUDE_CONFIG_DIR"]) / ".credentials.json"
    credentials.write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": "sk-ant-oat-never-sent",
                    "refreshToken": "sk-ant-ort-1",
                    "expiresAt": int((time.time() + 3600) * 1000),
                    "subscriptionType": "max",
                }
            }
        )
    )
    cody_env.env["PATH"] = "/usr/bin:/bin"  # no Claude Code anywhere
    async with mock_anthropic.MockAnthropicServer() as api:
        cody_env.env["ANTHROPIC_BASE_URL"] = api.base_url
        daemon = await Daemon.start(cody_env)
        try:
            init = await daemon.initialize()
            assert init["_meta"]["cody"]["defaultProvider"] == "offline"
            sid = await daemon.new_session(provider="anthropic")
            error = await expect_error(daemon.prompt(sid, "hello"), -32000)
            auth = await expect_error(
                daemon.request("authenticate", {"methodId": "anthropic-api-key"}), -32000
            )
        finally:
            await daemon.close()
    for message in (error.message, auth.message):
        assert "can only be used by Claude Code itself" in message
        assert "--backend claude" in message
        assert "npm install -g @anthropic-ai/claude-code" in message
        assert "sk-ant-oat-never-sent" not in message
    assert api.requests == []


async def test_missing_credentials_say_how_to_log_in(offline_daemon: Daemon) -> None:
    for provider, hint in (("openai", "codex login"), ("anthropic", "/login")):
        sid = await offline_daemon.new_session(provider=provider)
        error = await expect_error(offline_daemon.prompt(sid, "hi"), -32000)
        assert hint in error.message, error.message


async def test_cost_is_reported_per_call_and_in_total_for_a_priced_model(cody_env: CodyEnv) -> None:
    async with mock_responses.MockResponsesServer() as api:
        cody_env.env["OPENAI_API_KEY"] = "sk-test-not-secret"
        cody_env.env["OPENAI_BASE_URL"] = api.base_url
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session(provider="openai", model="gpt-5.5")
            api.enqueue(
                mock_responses.text("one"),
                # Above the 272K long-context tier, below the 90% compaction threshold.
                usage=mock_responses.Usage(input=600_000, output=100_000, cached=300_000),
            )
            first = await daemon.prompt(sid, "first")
            api.enqueue(
                mock_responses.text("two"), usage=mock_responses.Usage(input=2_000, output=1_000)
            )
            second = await daemon.prompt(sid, "second")
        finally:
            await daemon.close()
    price = price_for("openai", "gpt-5.5")
    assert price is not None
    expected_first = cost_usd(
        price, TokenUsage(input_tokens=600_000, output_tokens=100_000, cached_read_tokens=300_000)
    )
    expected_second = cost_usd(price, TokenUsage(input_tokens=2_000, output_tokens=1_000))
    assert first["_meta"]["cody"]["cost"]["turn"] == pytest.approx(expected_first)
    assert second["_meta"]["cody"]["cost"]["last"] == pytest.approx(expected_second)
    assert second["_meta"]["cody"]["cost"]["total"] == pytest.approx(
        expected_first + expected_second
    )
    costs = [u["cost"]["amount"] for u in daemon.session_updates(sid, "usage_update")]
    assert costs == [pytest.approx(expected_first), pytest.approx(expected_first + expected_second)]


async def test_authenticate_refreshes_an_expired_login_and_reports_a_dead_one(
    cody_env: CodyEnv,
) -> None:
    now = time.time()
    auth_file = Path(cody_env.env["CODEX_HOME"]) / "auth.json"
    auth_file.write_text(
        json.dumps(
            {
                "tokens": {
                    "access_token": fake_jwt({"exp": now - 60}),
                    "refresh_token": "r-1",
                    "account_id": "a",
                },
            }
        )
    )
    async with MockTokenServer() as tokens:
        tokens.enqueue(200, {"access_token": fake_jwt({"exp": now + 3600}), "refresh_token": "r-2"})
        tokens.enqueue(400, {"error": "invalid_grant"})
        cody_env.env["CODY_CHATGPT_TOKEN_URL"] = tokens.url
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            assert await daemon.request("authenticate", {"methodId": "openai-api-key"}) == {}
            assert json.loads(auth_file.read_text())["tokens"]["refresh_token"] == "r-2"
            data = json.loads(auth_file.read_text())
            data["tokens"]["access_token"] = fake_jwt({"exp": now - 60})
            auth_file.write_text(json.dumps(data))
            error = await expect_error(
                daemon.request("authenticate", {"methodId": "openai-api-key"}), -32000
            )
            assert "codex login" in error.message and "r-2" not in error.message
        finally:
            await daemon.close()
