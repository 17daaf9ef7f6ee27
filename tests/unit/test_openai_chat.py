"""The Chat Completions provider against a real HTTP mock on 127.0.0.1 (no patching)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cody_daemon.core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    ImagePart,
    MessageItem,
    ReasoningItem,
    SummaryPart,
    TextPart,
    user_message,
)
from cody_daemon.providers.auth import ApiKeyAuth
from cody_daemon.providers.base import (
    ReasoningDelta,
    ReasoningDone,
    StreamEnd,
    ToolCallRequested,
    ToolSpec,
    UsageReport,
)
from cody_daemon.providers.openai_chat import OpenAIChatProvider, merge_reasoning_details

from tests.support.mock_chat import (
    MockChatServer,
    failed,
    reasoning,
    text,
    tool_call,
)
from tests.support.provider_calls import Sleeps, TokenAuth, model_calls, provider_fixtures, texts

API_KEY = "sk-test-secret-0123456789abcdef"


def make_provider(server: MockChatServer, sleeps: Sleeps, **kw: Any) -> OpenAIChatProvider:
    defaults: dict[str, Any] = {
        "provider_id": "openrouter",
        "base_url": server.base_url,
        "auth": ApiKeyAuth(API_KEY),
        "env_key": "OPENROUTER_API_KEY",
        "headers": {"X-Title": "Cody"},
        "sleep": sleeps,
    }
    return OpenAIChatProvider(**{**defaults, **kw})


server, provider = provider_fixtures(MockChatServer, make_provider)
request, collect, collect_error = model_calls("gpt-4.1")


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """A raw `chat.completion.chunk` for `enqueue_events`."""
    return {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


# -- streaming ------------------------------------------------------------------------------


async def test_reasoning_content_streams_then_is_done_before_the_text(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    server.enqueue(reasoning("thinking hard", chunks=2), text("Done."))
    events = await collect(provider)
    kinds = [type(e).__name__ for e in events]
    assert kinds[:4] == ["ReasoningDelta", "ReasoningDelta", "ReasoningDone", "TextDelta"]
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "thinking hard"
    done = next(e for e in events if isinstance(e, ReasoningDone)).item
    assert done.text == "thinking hard"
    assert done.provider == "openrouter"
    assert done.encrypted_content is None
    assert done.signature is None


async def test_openrouter_reasoning_field_and_no_double_text_when_both_are_sent(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    server.enqueue_events(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": None, "reasoning": "Let me "}),
            chunk({"reasoning": "see.", "reasoning_content": "see."}),  # newer vLLM sends both
            chunk({"content": "Four."}),
            chunk({}, "stop"),
        ]
    )
    events = await collect(provider)
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["Let me ", "see."]
    assert texts(events) == ["Four."]
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.stop == "end_turn"


async def test_parallel_tool_calls_assembled_from_interleaved_fragments(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    def frag(index: int, **fields: Any) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": index, **fields}]})

    server.enqueue_events(
        [
            chunk({"role": "assistant", "content": None}),
            frag(0, id="call_a", type="function", function={"name": "exec", "arguments": ""}),
            frag(1, id="call_b", type="function", function={"name": "readFile", "arguments": ""}),
            frag(0, function={"arguments": '{"command": '}),
            frag(1, function={"arguments": '{"filePath"'}),
            frag(0, function={"arguments": '["ls"]}'}),
            frag(1, function={"arguments": ': "a.txt"}'}),
            chunk({}, "tool_calls"),
        ]
    )
    events = await collect(provider)
    calls = [e for e in events if isinstance(e, ToolCallRequested)]
    assert [(c.call_id, c.name) for c in calls] == [("call_a", "exec"), ("call_b", "readFile")]
    assert json.loads(calls[0].arguments) == {"command": ["ls"]}
    assert json.loads(calls[1].arguments) == {"filePath": "a.txt"}
    assert events[-1] == StreamEnd(stop="tool_use", response_id="chatcmpl-raw")


async def test_no_usage_chunk_means_no_usage_report(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    server.enqueue_events([chunk({"content": "ok"}), chunk({}, "stop")])
    events = await collect(provider)
    assert not any(isinstance(e, UsageReport) for e in events)
    assert texts(events) == ["ok"]


# -- request shape --------------------------------------------------------------------------


async def test_request_body_has_the_chat_shape(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    history: list[HistoryItem] = [
        MessageItem(id="d1", role="developer", content=[TextPart(type="input_text", text="rules")]),
        user_message("u1", "list and read"),
        ReasoningItem(
            id="th_1", summary=[SummaryPart(text="plan")], signature="sig-x", provider="anthropic"
        ),
        ReasoningItem(id="rs_1", encrypted_content="enc-other", provider="openai"),
        MessageItem(
            id="a1", role="assistant", content=[TextPart(type="output_text", text="On it.")]
        ),
        FunctionCallItem(call_id="call_1", name="exec", arguments='{"command": "ls"}'),
        FunctionCallItem(call_id="call_2", name="readFile", arguments='{"filePath": "a"}'),
        FunctionCallOutputItem(call_id="call_2", output="contents"),  # finished first
        FunctionCallOutputItem(call_id="call_1", output="a\n"),
        MessageItem(
            id="a2", role="assistant", content=[TextPart(type="output_text", text="Done.")]
        ),
        user_message("u2", "thanks"),
    ]
    tool = ToolSpec(name="exec", description="Run a command.", parameters={"type": "object"})
    server.enqueue(text("ok"))
    req = request(
        history,
        model="deepseek-reasoner",
        tools=[tool],
        reasoning_effort="high",
        reasoning_summary="detailed",
        max_output_tokens=512,
    )
    await collect(provider, req)

    recorded = server.requests[0]
    body = recorded.body
    assert recorded.path == "/v1/chat/completions"
    assert body["messages"] == [
        {"role": "system", "content": "You are Cody."},
        {"role": "user", "content": "rules"},  # a developer item: user, as on Messages
        {"role": "user", "content": "list and read"},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "exec", "arguments": '{"command": "ls"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "readFile", "arguments": '{"filePath": "a"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a\n"},
        {"role": "tool", "tool_call_id": "call_2", "content": "contents"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "thanks"},
    ]
    sent = json.dumps(body)
    assert "sig-x" not in sent
    assert "enc-other" not in sent
    assert "plan" not in sent
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "exec",
                "description": "Run a command.",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert body["tool_choice"] == "auto"
    assert body["parallel_tool_calls"] is True
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 512
    assert body["reasoning_effort"] == "high"
    assert "reasoning" not in body  # summary settings have no Chat equivalent

    headers = recorded.headers
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["accept"] == "text/event-stream"
    assert headers["content-type"] == "application/json"
    assert headers["x-title"] == "Cody"


async def test_without_tools_no_tool_fields_are_sent(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    server.enqueue(text("ok"))
    await collect(provider)
    body = server.requests[0].body
    assert not {"tools", "tool_choice", "parallel_tool_calls", "reasoning_effort"} & set(body)
    assert "max_completion_tokens" not in body


def test_tool_results_always_directly_follow_their_call(provider: OpenAIChatProvider) -> None:
    history: list[HistoryItem] = [
        user_message("u1", "go"),
        FunctionCallItem(call_id="call_1", name="exec", arguments="{}"),
        user_message("u2", "(typed while the tool ran)"),
        FunctionCallOutputItem(call_id="call_1", output="late"),
        FunctionCallOutputItem(call_id="call_orphan", output="nobody asked"),
        FunctionCallItem(call_id="call_2", name="exec", arguments="{}"),  # never answered
    ]
    assert provider.messages("", history) == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "exec", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "late"},
        {"role": "user", "content": "(typed while the tool ran)"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "exec", "arguments": "{}"},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": "No output was recorded for this tool call.",
        },
    ]


def test_tool_images_follow_the_tool_messages_as_one_user_message(
    provider: OpenAIChatProvider,
) -> None:
    """A `tool` message takes text only: a tool's images (an MCP screenshot) come right after
    the call's tool messages, as one user message naming the calls."""
    shot = ImagePart(image_url="data:image/png;base64,iVBORw0KGgo=")
    history: list[HistoryItem] = [
        user_message("u1", "look"),
        FunctionCallItem(call_id="c1", name="mcp__b__shot", arguments="{}"),
        FunctionCallItem(call_id="c2", name="exec", arguments="{}"),
        FunctionCallOutputItem(call_id="c1", output="[image 1: image/png, 8 bytes]", images=[shot]),
        FunctionCallOutputItem(call_id="c2", output="ok"),
    ]
    messages = provider.messages("", history)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[2]["content"] == "[image 1: image/png, 8 bytes]"
    assert messages[4]["content"] == [
        {"type": "text", "text": "The images returned by the tool call(s) c1:"},
        {"type": "image_url", "image_url": {"url": shot.image_url}},
    ]


# -- errors, retries and auth ---------------------------------------------------------------


async def test_finish_reason_without_done_marker_still_completes(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    server.enqueue_events([chunk({"content": "All of it."}), chunk({}, "stop")], done=False)
    events = await collect(provider)
    assert texts(events) == ["All of it."]
    assert events[-1] == StreamEnd(stop="end_turn", response_id="chatcmpl-raw")


async def test_error_object_in_the_stream_is_classified(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    server.enqueue(text("so far"), end=failed("rate_limit_exceeded", "Please try again in 2.5s."))
    server.enqueue(end=failed("context_length_exceeded", "Too long."))
    openrouter = {
        **chunk({"content": ""}, "error"),
        "error": {"code": 502, "message": "Provider disconnected unexpectedly"},
    }
    server.enqueue_events([chunk({"content": "partial"}), openrouter])
    errors = [(await collect_error(provider))[1] for _ in range(3)]
    assert [e.kind for e in errors] == ["rate_limit", "context_window", "provider"]
    assert errors[0].retry_after_s == 2.5
    assert errors[2].http_status == 502
    assert errors[2].retryable is False  # "partial" had arrived: not sent again
    assert "Provider disconnected unexpectedly" in errors[2].message
    assert len(server.requests) == 3  # in-stream failures are reported, not retried


async def test_auth_secrets_are_scrubbed_from_in_stream_errors(
    server: MockChatServer, sleeps: Sleeps
) -> None:
    token = "tok-plain-looking-42"  # not key-shaped: only `auth.secrets` can catch it
    p = make_provider(server, sleeps, auth=TokenAuth(token))
    server.enqueue_events([{"error": {"message": f"bad request for token {token}", "code": None}}])
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "provider"
    assert token not in error.message
    assert "[redacted]" in error.message


async def test_no_auth_sends_no_authorization_header(sleeps: Sleeps) -> None:
    with MockChatServer.in_thread() as srv:
        srv.enqueue(text("local model", chunks=2))
        p = make_provider(srv, sleeps, auth=None, headers=None, provider_id="ollama")
        try:
            events = await collect(p)
        finally:
            await p.aclose()
        assert "".join(texts(events)) == "local model"
        assert "authorization" not in srv.requests[0].headers


def test_repeated_call_ids_get_their_own_outputs(provider: OpenAIChatProvider) -> None:
    history: list[HistoryItem] = [
        FunctionCallItem(call_id="call_0", name="exec", arguments='{"n": 1}'),
        FunctionCallOutputItem(call_id="call_0", output="first"),
        FunctionCallItem(call_id="call_0", name="exec", arguments='{"n": 2}'),  # id reused
        FunctionCallOutputItem(call_id="call_0", output="second"),
    ]
    tool_messages = [m["content"] for m in provider.messages("", history) if m["role"] == "tool"]
    assert tool_messages == ["first", "second"]


async def test_calls_sent_whole_under_one_index_stay_separate(
    server: MockChatServer, provider: OpenAIChatProvider
) -> None:
    def whole(call_id: str, args: str) -> dict[str, Any]:
        call = {"index": 0, "id": call_id, "function": {"name": "exec", "arguments": args}}
        return chunk({"tool_calls": [call]})

    server.enqueue_events(
        [whole("call_x", '{"a": 1}'), whole("call_y", '{"b": 2}'), chunk({}, "stop")]
    )
    events = await collect(provider)
    calls = [e for e in events if isinstance(e, ToolCallRequested)]
    assert [(c.call_id, c.arguments) for c in calls] == [
        ("call_x", '{"a": 1}'),
        ("call_y", '{"b": 2}'),
    ]
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.stop == "tool_use"  # finish_reason "stop" with calls (Ollama, vLLM) is tool use


# -- reasoning replay, effort, cache breakpoints ----------------------------------------------


EXEC = ToolSpec(name="exec", description="Run a command.", parameters={"type": "object"})


async def test_deepseek_reasoning_content_is_replayed_so_the_follow_up_is_accepted(
    server: MockChatServer, sleeps: Sleeps
) -> None:
    # DeepSeek's thinking mode 400s the call after a tool call without `reasoning_content`
    # (https://api-docs.deepseek.com/guides/thinking_mode#tool-calls); the mock refuses too.
    server.thinking_mode = True
    p = make_provider(server, sleeps, provider_id="deepseek")
    server.enqueue(
        reasoning("I should list the files."), tool_call("exec", {"command": "ls"}, call_id="c1")
    )
    server.enqueue(text("Two files."))
    try:
        first = await collect(p, request(model="deepseek-v4-pro", tools=[EXEC]))
        [done] = [e for e in first if isinstance(e, ReasoningDone)]
        assert done.item.replay_fields == {"reasoning_content": "I should list the files."}
        history: list[HistoryItem] = [
            user_message("u1", "list"),
            done.item,
            FunctionCallItem(call_id="c1", name="exec", arguments='{"command": "ls"}'),
            FunctionCallOutputItem(call_id="c1", output="a b"),
        ]
        await collect(p, request(history, model="deepseek-v4-pro", tools=[EXEC]))
    finally:
        await p.aclose()
    assert not server.refused
    assistant = server.requests[1].body["messages"][2]
    assert assistant["reasoning_content"] == "I should list the files."
    assert assistant["tool_calls"][0]["id"] == "c1"


async def test_reasoning_is_replayed_only_to_the_provider_that_produced_it(
    provider: OpenAIChatProvider, server: MockChatServer
) -> None:
    server.thinking_mode = True
    history: list[HistoryItem] = [
        user_message("u1", "list"),
        ReasoningItem(
            id="r1",
            summary=[SummaryPart(text="mine")],
            provider="deepseek",
            replay_fields={"reasoning_content": "mine"},
        ),
        FunctionCallItem(call_id="c1", name="exec", arguments="{}"),
        FunctionCallOutputItem(call_id="c1", output="ok"),
    ]
    server.enqueue(text("x"))
    events, error = await collect_error(provider, request(history, tools=[EXEC]))
    # `provider` is "openrouter": DeepSeek's reasoning is not sent there, and a thinking-mode
    # server refuses exactly as DeepSeek would.
    assert error.http_status == 400 and "reasoning_content" in error.message
    assert "mine" not in json.dumps(server.requests[0].body)


async def test_openrouter_reasoning_details_are_merged_and_replayed(
    server: MockChatServer, sleeps: Sleeps
) -> None:
    # Claude with thinking behind OpenRouter: the tool-use turn must carry its
    # reasoning_details back, or Anthropic's 400 is passed through (the mock refuses too).
    server.reasoning_style = "openrouter"
    server.thinking_upstream = True
    p = make_provider(server, sleeps)
    server.enqueue(
        reasoning("Let me look.", chunks=3, encrypted="sig-9"),
        tool_call("exec", {"command": "ls"}, call_id="c1"),
    )
    server.enqueue(text("Done."))
    model = "anthropic/claude-opus-4.8"
    try:
        first = await collect(p, request(model=model, tools=[EXEC]))
        [done] = [e for e in first if isinstance(e, ReasoningDone)]
        details = (done.item.replay_fields or {})["reasoning_details"]
        assert details == [
            {
                "type": "reasoning.text",
                "format": "anthropic-claude-v1",
                "index": 0,
                "text": "Let me look.",
                "signature": "sig-9",
            }
        ]
        history: list[HistoryItem] = [
            user_message("u1", "look"),
            done.item,
            FunctionCallItem(call_id="c1", name="exec", arguments='{"command": "ls"}'),
            FunctionCallOutputItem(call_id="c1", output="a"),
        ]
        await collect(p, request(history, model=model, tools=[EXEC]))
    finally:
        await p.aclose()
    assert not server.refused
    assert server.requests[1].body["messages"][2]["reasoning_details"] == details
    assert "reasoning_content" not in server.requests[1].body["messages"][2]


def test_reasoning_details_fragments_merge_per_type_and_index() -> None:
    fragments = [
        {
            "type": "reasoning.summary",
            "summary": "**Plan",
            "format": "openai-responses-v1",
            "index": 0,
        },
        {
            "type": "reasoning.summary",
            "summary": "ning**",
            "format": "openai-responses-v1",
            "index": 0,
        },
        {"type": "reasoning.encrypted", "data": "abc", "id": "rs_1", "index": 1},
        {"type": "reasoning.encrypted", "data": "def", "index": 1},
        {"type": "reasoning.text", "text": "no index"},
        {"type": "reasoning.text", "text": "stays apart"},
    ]
    assert merge_reasoning_details(fragments) == [
        {
            "type": "reasoning.summary",
            "summary": "**Planning**",
            "format": "openai-responses-v1",
            "index": 0,
        },
        {"type": "reasoning.encrypted", "data": "abcdef", "id": "rs_1", "index": 1},
        {"type": "reasoning.text", "text": "no index"},
        {"type": "reasoning.text", "text": "stays apart"},
    ]


async def test_claude_through_openrouter_gets_cache_breakpoints(
    provider: OpenAIChatProvider, server: MockChatServer
) -> None:
    history: list[HistoryItem] = [
        user_message("u1", "read it"),
        FunctionCallItem(call_id="c1", name="exec", arguments="{}"),
        FunctionCallOutputItem(call_id="c1", output="contents"),
    ]
    server.enqueue(text("ok"))
    server.enqueue(text("ok"))
    await collect(provider, request(history, model="anthropic/claude-sonnet-4.6", tools=[EXEC]))
    await collect(provider, request(history, model="openai/gpt-5.5", tools=[EXEC]))
    claude, gpt = (r.body["messages"] for r in server.requests)
    mark = {"type": "ephemeral"}
    assert claude[0] == {
        "role": "system",
        "content": [{"type": "text", "text": "You are Cody.", "cache_control": mark}],
    }
    assert claude[-1]["role"] == "tool"
    assert claude[-1]["content"] == [{"type": "text", "text": "contents", "cache_control": mark}]
    marked = [m for m in claude if "cache_control" in json.dumps(m)]
    assert len(marked) == 2  # at most 4 breakpoints are allowed; two suffice
    assert "cache_control" not in json.dumps(gpt)  # OpenAI caches by itself


@pytest.mark.parametrize(
    ("model", "configured", "sent"),
    [
        ("openai/gpt-5.5", None, "medium"),  # a reasoning model always gets an effort
        ("openai/gpt-5.5", "minimal", "low"),  # mapped to one it accepts
        ("openai/gpt-6-preview", None, "medium"),  # unlisted member of a reasoning family
        ("anthropic/claude-opus-4.8", None, "medium"),  # Claude thinks by default
        ("meta-llama/llama-3.3-70b", None, None),  # not a reasoning model: nothing
        ("meta-llama/llama-3.3-70b", "high", "high"),  # unless asked for
    ],
)
async def test_reasoning_effort_follows_the_model_family(
    provider: OpenAIChatProvider,
    server: MockChatServer,
    model: str,
    configured: str | None,
    sent: str | None,
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(model=model, reasoning_effort=configured))
    assert server.requests[0].body.get("reasoning_effort") == sent
