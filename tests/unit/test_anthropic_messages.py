"""The Anthropic Messages provider against a real HTTP mock on 127.0.0.1 (no patching)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
    SummaryPart,
    TextPart,
    user_message,
)
from cody_daemon.providers.anthropic_messages import AnthropicMessagesProvider
from cody_daemon.providers.auth import ApiKeyAuth, AuthSource
from cody_daemon.providers.base import (
    ReasoningDelta,
    ReasoningDone,
    StreamEnd,
    ToolCallRequested,
    ToolSpec,
    UsageReport,
)
from cody_daemon.providers.openai_responses import OpenAIResponsesProvider
from cody_protocol.settings import ReasoningEffort

from tests.support import mock_anthropic, mock_responses
from tests.support.mock_anthropic import (
    MockAnthropicServer,
    Usage,
    failed,
    reasoning,
    text,
    tool_call,
)
from tests.support.provider_calls import Sleeps, model_calls, provider_fixtures, texts

CLAUDE_CODE_REQUEST = (
    Path(__file__).parents[1] / "fixtures" / "providers" / "messages_request_claude_code.json"
)
API_KEY = "sk-ant-test-secret-0123456789abcdef"


@dataclass
class FakeOAuth:
    """An `AuthSource` like Claude OAuth: bearer token + oauth beta; refresh swaps the token."""

    tokens: list[str]
    can_refresh: bool = True
    refreshes: int = field(default=0)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self.tokens)

    async def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[0]}", "anthropic-beta": "oauth-2025-04-20"}

    @property
    def login_hint(self) -> str:
        return "Log in again with Claude Code."

    async def refresh(self) -> bool:
        self.refreshes += 1
        if not self.can_refresh or len(self.tokens) < 2:
            return False
        self.tokens.pop(0)
        return True


def make_provider(
    server: MockAnthropicServer, sleeps: Sleeps, **kw: Any
) -> AnthropicMessagesProvider:
    defaults: dict[str, Any] = {
        "provider_id": "anthropic",
        "base_url": server.base_url,
        "auth": ApiKeyAuth(API_KEY, header="x-api-key", scheme=None),
        "env_key": "ANTHROPIC_API_KEY",
        "sleep": sleeps,
    }
    return AnthropicMessagesProvider(**{**defaults, **kw})


server, provider = provider_fixtures(MockAnthropicServer, make_provider)
request, collect, collect_error = model_calls("claude-sonnet-4-5")


def assistant(text_: str, item_id: str = "a1") -> MessageItem:
    return MessageItem(
        id=item_id, role="assistant", content=[TextPart(type="output_text", text=text_)]
    )


def body_of(server: MockAnthropicServer, index: int = 0) -> dict[str, Any]:
    body = server.requests[index].body
    assert isinstance(body, dict)
    return body


# -- streaming ------------------------------------------------------------------------------


async def test_thinking_streams_then_is_done_with_signature_and_provider(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    server.enqueue(reasoning("thinking hard", signature="sig-1", chunks=2), text("Done."))
    events = await collect(provider)
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "ReasoningDelta",
        "ReasoningDelta",
        "ReasoningDone",
        "TextDelta",
        "UsageReport",
        "StreamEnd",
    ]
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "thinking hard"
    done = next(e for e in events if isinstance(e, ReasoningDone)).item
    assert done.text == "thinking hard"
    assert done.signature == "sig-1"
    assert done.provider == "anthropic"
    assert done.encrypted_content is None


async def test_tool_input_is_assembled_from_json_pieces(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    args = {"command": ["echo", "hello world"], "cwd": "/tmp"}
    server.enqueue(tool_call("exec", args, call_id="toolu_1", chunks=5))
    events = await collect(provider)
    calls = [e for e in events if isinstance(e, ToolCallRequested)]
    assert [(c.call_id, c.name) for c in calls] == [("toolu_1", "exec")]
    assert json.loads(calls[0].arguments) == args
    assert events[-1] == StreamEnd(stop="tool_use", response_id="msg_mock_1")


async def test_tool_use_without_input_deltas_has_empty_object_arguments(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    server.enqueue_events(
        [
            {"type": "message_start", "message": {"id": "msg_x", "usage": {"input_tokens": 3}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_x", "name": "now", "input": {}},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
            {"type": "message_stop"},
        ]
    )
    calls = [e for e in await collect(provider) if isinstance(e, ToolCallRequested)]
    assert calls == [ToolCallRequested(call_id="toolu_x", name="now", arguments="{}")]


async def test_usage_counts_cache_reads_and_writes_as_input(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    start_usage = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 600,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    server.enqueue_events(
        [
            {"type": "message_start", "message": {"id": "msg_u", "usage": start_usage}},
            {"type": "ping"},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 42},
            },
            {"type": "message_stop"},
        ]
    )
    events = await collect(provider)
    assert events == [
        UsageReport(
            input_tokens=100 + 600 + 300,
            cached_input_tokens=600,
            cache_write_tokens=300,
            output_tokens=42,  # message_delta's cumulative count wins over message_start's
        ),
        StreamEnd(stop="end_turn", response_id="msg_u"),
    ]


async def test_mock_usage_means_all_input_tokens_as_in_the_other_mocks(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    server.enqueue(text("ok"), usage=Usage(input=1000, output=42, cached=600, cache_write=300))
    usage = [e for e in await collect(provider) if isinstance(e, UsageReport)]
    assert usage == [
        UsageReport(
            input_tokens=1000, cached_input_tokens=600, cache_write_tokens=300, output_tokens=42
        )
    ]


async def test_redacted_thinking_is_kept_as_opaque_data(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    block = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}
    server.enqueue_events(
        [
            {"type": "message_start", "message": {"id": "msg_r", "usage": {"input_tokens": 5}}},
            {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
            {"type": "message_stop"},
        ]
    )
    events = await collect(provider)
    done = next(e for e in events if isinstance(e, ReasoningDone)).item
    assert done.encrypted_content == "EmwKAhgBEgy3va3pzix"
    assert done.signature is None
    assert done.provider == "anthropic"

    server.enqueue(text("ok"))
    await collect(provider, request([user_message("u1", "hi"), done, user_message("u2", "go")]))
    assert body_of(server, 1)["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}],
    }


# -- request shape --------------------------------------------------------------------------

EXEC = ToolSpec(
    name="exec",
    description="Run a command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}},
)


def long_history() -> list[HistoryItem]:
    """Text, thinking from this provider and another, two tool calls and results, new input."""
    return [
        user_message("u1", "run two commands"),
        ReasoningItem(
            id="th_0", summary=[SummaryPart(text="old")], signature="sig-old", provider="anthropic"
        ),
        assistant("First I look around.", "a0"),
        user_message("u1b", "ok"),
        ReasoningItem(id="rs_1", encrypted_content="enc-openai", provider="openai"),
        ReasoningItem(
            id="th_1", summary=[SummaryPart(text="plan")], signature="sig-1", provider="anthropic"
        ),
        assistant("Running both."),
        FunctionCallItem(call_id="toolu_a", name="exec", arguments='{"command": "ls"}'),
        FunctionCallItem(call_id="toolu_b", name="exec", arguments='{"command": "pwd"}'),
        FunctionCallOutputItem(call_id="toolu_a", output="a.txt\n"),
        FunctionCallOutputItem(call_id="toolu_b", output="", status="failed"),
        user_message("u2", "now explain"),
    ]


async def test_history_becomes_alternating_messages(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(long_history(), tools=[EXEC]))
    messages = body_of(server)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "run two commands"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "old", "signature": "sig-old"},
                {"type": "text", "text": "First I look around."},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "ok"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
                {"type": "text", "text": "Running both."},
                {"type": "tool_use", "id": "toolu_a", "name": "exec", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_b", "name": "exec", "input": {"command": "pwd"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": "a.txt\n",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "(no output)",
                    "is_error": True,
                },
                {
                    "type": "text",
                    "text": "now explain",
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
    ]
    assert "enc-openai" not in server.requests[0].raw_body.decode()


async def test_awkward_histories_still_alternate_and_start_with_user(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    history: list[HistoryItem] = [
        assistant("Earlier answer."),  # e.g. after a compaction: must not come first
        ReasoningItem(id="th_x", summary=[SummaryPart(text="x")], provider="anthropic"),  # no sig
        MessageItem(id="d1", role="developer", content=[TextPart(type="input_text", text="rules")]),
        user_message("u1", "   "),  # blank text blocks are rejected by the API
        user_message("u2", "go"),
        FunctionCallItem(call_id="call:1/x", name="exec", arguments="{not json"),
        user_message("u3", "steer"),  # arrived before the result: the result still goes first
        FunctionCallOutputItem(call_id="call:1/x", output="done"),
    ]
    server.enqueue(text("ok"))
    await collect(provider, request(history, tools=[EXEC]))  # tool blocks need tools
    messages = body_of(server)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[0]["content"] == [
        {"type": "text", "text": "(continuing an earlier conversation)"}
    ]
    assert messages[1]["content"] == [{"type": "text", "text": "Earlier answer."}]
    assert messages[2]["content"] == [
        {"type": "text", "text": "rules"},
        {"type": "text", "text": "go"},
    ]
    assert messages[3]["content"] == [
        {"type": "tool_use", "id": "call_1_x", "name": "exec", "input": {}}
    ]
    assert messages[4]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1_x", "content": "done", "is_error": False},
        {"type": "text", "text": "steer", "cache_control": {"type": "ephemeral"}},
    ]


async def test_system_tools_and_cache_control(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(long_history(), tools=[EXEC]))
    body = body_of(server)
    assert body["system"] == [
        {"type": "text", "text": "You are Cody.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {
            "name": "exec",
            "description": "Run a command.",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]
    marked = [
        (i, j)
        for i, m in enumerate(body["messages"])
        for j, block in enumerate(m["content"])
        if "cache_control" in block
    ]
    last = len(body["messages"]) - 1
    assert marked == [(last, len(body["messages"][last]["content"]) - 1)]
    assert body["max_tokens"] == 32000
    assert body["stream"] is True
    # Sonnet 4.5 thinks with a budget, by default at medium (Claude Code always thinks).
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert "output_config" not in body


async def test_no_tools_and_no_instructions_are_omitted(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(instructions="", max_output_tokens=1000))
    body = body_of(server)
    assert "tools" not in body
    assert "system" not in body
    assert body["max_tokens"] == 1000


@pytest.mark.parametrize(
    ("effort", "max_tokens", "budget"),
    [
        (None, None, 10000),  # on by default, at medium
        ("none", None, None),  # `none` switches thinking off
        ("minimal", None, 1024),
        ("low", None, 4000),
        ("medium", None, 10000),
        ("high", None, 24000),
        ("high", 16000, 12000),  # capped at 3/4 of max_tokens
        ("low", 1200, None),  # below the API's 1,024 minimum: no thinking
    ],
)
async def test_reasoning_effort_maps_to_a_thinking_budget(
    server: MockAnthropicServer,
    provider: AnthropicMessagesProvider,
    effort: ReasoningEffort | None,
    max_tokens: int | None,
    budget: int | None,
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(reasoning_effort=effort, max_output_tokens=max_tokens))
    body = body_of(server)
    if budget is None:
        assert "thinking" not in body
    else:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
        assert budget < body["max_tokens"]


ADAPTIVE = {"type": "adaptive", "display": "summarized"}


@pytest.mark.parametrize(
    ("model", "effort", "expected"),
    [
        # Opus 4.7+ accept only adaptive thinking: a budget answers 400.
        ("claude-opus-4-8", None, {"thinking": ADAPTIVE, "effort": "high"}),
        ("claude-opus-4-8", "low", {"thinking": ADAPTIVE, "effort": "low"}),
        ("claude-opus-4-8", "minimal", {"thinking": ADAPTIVE, "effort": "low"}),
        ("claude-opus-4-8", "xhigh", {"thinking": ADAPTIVE, "effort": "xhigh"}),
        ("claude-opus-4-8", "none", {}),
        ("claude-opus-4-7", "medium", {"thinking": ADAPTIVE, "effort": "medium"}),
        # Sonnet 4.6 takes no xhigh: the nearest lower one it accepts.
        ("claude-sonnet-4-6", "xhigh", {"thinking": ADAPTIVE, "effort": "high"}),
        ("claude-opus-5", None, {"thinking": ADAPTIVE, "effort": "high"}),
        # Haiku 4.5 has no adaptive thinking and no effort parameter: a budget.
        ("claude-haiku-4-5", None, {"thinking": {"type": "enabled", "budget_tokens": 10000}}),
        (
            "claude-haiku-4-5-20251001",
            "high",
            {"thinking": {"type": "enabled", "budget_tokens": 24000}},
        ),
        # Unknown to the catalog: thinking only when asked for.
        ("my-local-model", None, {}),
        ("my-local-model", "low", {"thinking": {"type": "enabled", "budget_tokens": 4000}}),
    ],
)
async def test_thinking_is_chosen_per_model_from_the_catalog(
    server: MockAnthropicServer,
    provider: AnthropicMessagesProvider,
    model: str,
    effort: ReasoningEffort | None,
    expected: dict[str, Any],
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(model=model, reasoning_effort=effort, tools=[EXEC]))
    body = body_of(server)
    assert body.get("thinking") == expected.get("thinking")
    if "effort" in expected:
        assert body["output_config"] == {"effort": expected["effort"]}
    else:
        assert "output_config" not in body
    betas = server.requests[0].headers.get("anthropic-beta", "")
    # Adaptive thinking interleaves by itself; only budget thinking needs the beta.
    interleaved = body.get("thinking", {}).get("type") == "enabled"
    assert ("interleaved-thinking-2025-05-14" in betas) == interleaved


async def test_headers_version_key_and_merged_betas(
    server: MockAnthropicServer, sleeps: Sleeps
) -> None:
    oauth: AuthSource = FakeOAuth(["oauth-token-aaaaaaaaaaaa"])
    p = make_provider(
        server,
        sleeps,
        auth=oauth,
        headers={"Anthropic-Beta": "context-1m-2025-08-07, oauth-2025-04-20", "X-Extra": "1"},
    )
    server.enqueue(text("ok"))
    server.enqueue(text("ok"))
    try:
        await collect(p, request(tools=[EXEC], reasoning_effort="low"))
        await collect(p)
    finally:
        await p.aclose()
    with_thinking, plain = (server.requests[i].headers for i in (0, 1))
    assert with_thinking["anthropic-version"] == "2023-06-01"
    assert with_thinking["authorization"] == "Bearer oauth-token-aaaaaaaaaaaa"
    assert "x-api-key" not in with_thinking
    assert with_thinking["x-extra"] == "1"
    assert with_thinking["anthropic-beta"] == (
        "oauth-2025-04-20,context-1m-2025-08-07,interleaved-thinking-2025-05-14"
    )
    assert plain["anthropic-beta"] == "oauth-2025-04-20,context-1m-2025-08-07"


async def test_api_key_goes_in_x_api_key(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    server.enqueue(text("ok"))
    await collect(provider)
    headers = server.requests[0].headers
    assert headers["x-api-key"] == API_KEY
    assert "authorization" not in headers
    assert "anthropic-beta" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"


async def test_request_has_the_claude_code_shape(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider
) -> None:
    claude = json.loads(CLAUDE_CODE_REQUEST.read_text())
    theirs = claude["body"]
    history: list[HistoryItem] = [
        user_message("u1", "run echo hello"),
        ReasoningItem(
            id="th_1",
            summary=[SummaryPart(text="I'll use the Bash tool.")],
            signature="sig",
            provider="anthropic",
        ),
        assistant("I'll run `echo hello`."),
        FunctionCallItem(call_id="toolu_1", name="exec", arguments='{"command": "echo hello"}'),
        FunctionCallOutputItem(call_id="toolu_1", output="hello"),
    ]
    server.enqueue(text("ok"))
    await collect(provider, request(history, tools=[EXEC], reasoning_effort="high"))
    ours = body_of(server)
    recorded = server.requests[0]
    assert recorded.path == claude["path"].split("?")[0]
    assert recorded.headers["anthropic-version"] == claude["headers"]["anthropic-version"]
    # Same top-level keys, in the same order, minus Claude Code's own extras.
    extras = {"metadata", "context_management", "output_config"}
    assert list(ours) == [k for k in theirs if k not in extras]
    # Same roles and the same block shapes (key sets) message by message.
    assert [m["role"] for m in ours["messages"]] == [m["role"] for m in theirs["messages"]]

    def shapes(body: dict[str, Any]) -> dict[str, set[str]]:
        return {
            block["type"]: set(block)
            for message in body["messages"]
            for block in message["content"]
            if block["type"] != "text" or "cache_control" not in block
        }

    assert shapes(ours) == shapes(theirs)
    assert ours["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert set(ours["system"][-1]) == set(theirs["system"][-1])
    assert ours["system"][-1]["cache_control"] == theirs["system"][-1]["cache_control"]
    assert [set(t) for t in ours["tools"]] == [set(t) for t in theirs["tools"]]
    assert ours["stream"] is theirs["stream"] is True
    # Claude Code asks newer models for adaptive thinking; Cody sends an explicit budget.
    assert ours["thinking"]["type"] == "enabled"


async def test_base_url_ending_in_v1_is_accepted(
    server: MockAnthropicServer, sleeps: Sleeps
) -> None:
    p = make_provider(server, sleeps, base_url=server.base_url + "/v1/")
    server.enqueue(text("ok"))
    try:
        await collect(p)
    finally:
        await p.aclose()
    assert server.requests[0].path == "/v1/messages"


# -- errors and retries ---------------------------------------------------------------------


async def test_529_overloaded_is_retried(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider, sleeps: Sleeps
) -> None:
    server.enqueue_error(529)
    server.enqueue_error(529)
    server.enqueue(text("finally"))
    events = await collect(provider)
    assert "".join(texts(events)) == "finally"
    assert len(sleeps.calls) == 2
    assert len(server.requests) == 3


async def test_529_after_max_retries_is_a_retryable_provider_error(
    server: MockAnthropicServer, sleeps: Sleeps
) -> None:
    p = make_provider(server, sleeps, max_retries=1)
    server.enqueue_error(529)
    server.enqueue_error(529)
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert (error.kind, error.retryable, error.http_status) == ("provider", True, 529)
    assert "Overloaded" in error.message
    assert len(server.requests) == 2


async def test_401_right_after_a_refresh_says_how_to_log_in_again(
    server: MockAnthropicServer, sleeps: Sleeps
) -> None:
    oauth = FakeOAuth(["expired-token-aaaaaaaa", "fresh-token-bbbbbbbbbb"])
    p = make_provider(server, sleeps, auth=oauth, env_key=None)
    server.enqueue_error(401, message="OAuth token has expired: fresh-token-bbbbbbbbbb")
    server.enqueue_error(401, message="OAuth token has expired: fresh-token-bbbbbbbbbb")
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "auth"
    assert "Log in again with Claude Code." in error.message
    assert "token-" not in error.message
    assert oauth.refreshes == 1
    assert len(server.requests) == 2


async def test_error_event_mid_stream_is_classified_and_not_retried(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider, sleeps: Sleeps
) -> None:
    server.enqueue(text("so far", chunks=2), end=failed("overloaded_error"))
    events, error = await collect_error(provider)
    assert "".join(texts(events)) == "so far"
    assert error.kind == "provider"
    assert error.retryable is False  # output had arrived: not sent again
    assert error.details == {"type": "overloaded_error"}
    assert "Overloaded" in error.message
    assert len(server.requests) == 1
    assert sleeps.calls == []


async def test_error_event_before_any_output_is_retried(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider, sleeps: Sleeps
) -> None:
    server.enqueue(end=failed("overloaded_error"))
    server.enqueue(text("second try"))
    events = await collect(provider)
    assert "".join(texts(events)) == "second try"
    assert len(server.requests) == 2
    assert len(sleeps.calls) == 1


async def test_cut_before_any_output_is_retried(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider, sleeps: Sleeps
) -> None:
    server.enqueue(text("lost"), cut_after=2)  # message_start and ping, then the line drops
    server.enqueue(text("second try"))
    events = await collect(provider)
    assert texts(events) == ["second try"]
    assert len(server.requests) == 2
    assert len(sleeps.calls) == 1


async def test_invalid_request_error_event_is_not_retried(
    server: MockAnthropicServer, provider: AnthropicMessagesProvider, sleeps: Sleeps
) -> None:
    server.enqueue(end=failed("invalid_request_error", "messages: roles must alternate"))
    _, error = await collect_error(provider)
    assert error.kind == "provider"
    assert error.retryable is False
    assert "roles must alternate" in error.message
    assert len(server.requests) == 1


# -- one script, two APIs -------------------------------------------------------------------


@pytest.mark.parametrize("api", ["responses", "anthropic"])
async def test_the_same_script_means_the_same_events_on_both_apis(api: str, sleeps: Sleeps) -> None:
    mod: Any = mock_anthropic if api == "anthropic" else mock_responses
    server_cls: Any = (
        MockAnthropicServer if api == "anthropic" else mock_responses.MockResponsesServer
    )
    async with server_cls() as srv:
        srv.enqueue(
            mod.reasoning("think", encrypted="opaque-1"),
            mod.text("Hello world", chunks=2),
            mod.tool_call("exec", {"command": "ls"}, call_id="toolu_1", chunks=2),
            usage=mod.Usage(input=100, output=20, cached=10),
        )
        p: AnthropicMessagesProvider | OpenAIResponsesProvider
        if api == "anthropic":
            p = make_provider(srv, sleeps)
        else:
            p = OpenAIResponsesProvider(
                provider_id="openai", base_url=srv.base_url, api_key=API_KEY, sleep=sleeps
            )
        try:
            events = [e async for e in p.stream(request(model="claude-or-gpt-5"))]
        finally:
            await p.aclose()
    done = next(e for e in events if isinstance(e, ReasoningDone)).item
    assert (done.signature or done.encrypted_content) == "opaque-1"
    assert "".join(texts(events)) == "Hello world"
    assert [
        (c.call_id, json.loads(c.arguments)) for c in events if isinstance(c, ToolCallRequested)
    ] == [("toolu_1", {"command": "ls"})]
    usage = next(e for e in events if isinstance(e, UsageReport))
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (100, 10, 20)
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.stop == "tool_use"
