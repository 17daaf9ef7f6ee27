"""What the three HTTP providers must all do, each against its own mock on 127.0.0.1.

Responses, Chat Completions and Messages differ on the wire but not here: the same script (text,
tool calls, refusals, stops) means the same events, and the same failure (429, 401, context
window, 5xx, a cut stream) means the same `ProviderError`. Every test runs once per API; the
API-specific parts (ids, header spellings, error bodies, where a stream is cut) come from `Api`.
Each API's own behaviour stays in its module (test_openai_responses.py, test_openai_chat.py,
test_anthropic_messages.py), which also owns the `make_provider` used here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from cody_daemon.providers.base import (
    ModelProvider,
    StopKind,
    StreamEnd,
    TextDelta,
    ToolCallRequested,
    UsageReport,
)

from tests.support import mock_anthropic, mock_chat, mock_responses
from tests.support.mock_responses import MockResponsesServer
from tests.support.provider_calls import ModelCalls, Sleeps, TokenAuth, texts
from tests.unit import test_anthropic_messages as messages_tests
from tests.unit import test_openai_chat as chat_tests
from tests.unit import test_openai_responses as responses_tests


@dataclass(frozen=True)
class Api:
    """One provider API as these tests see it: its mock, its provider and its particulars."""

    name: str
    mock: ModuleType  # text, refusal, tool_call, incomplete, no_terminal, Usage
    server: type[MockResponsesServer]
    make_provider: Callable[..., ModelProvider]
    provider_id: str  # as `make_provider` names it
    model: str
    path: str
    env_key: str
    api_key: str
    first_response_id: str
    default_call_id: str  # the mock's id for an unnamed call at output index 2
    retry_after: str  # the header's spelling in the API's docs
    cut_after: int  # frames that hold some text of `text("Hello world", chunks=5)`, not all
    context_error: dict[str, Any]  # `enqueue_error(400, **context_error)`: the window is full
    key_echo: str | None = None
    without_key: dict[str, Any] = field(
        default_factory=dict
    )  # `make_provider` kw: no API key  # a 401 body that repeats the key (else the mock's masked one)
    stops: list[tuple[Any, StopKind]] = field(default_factory=list)  # (End, expected stop)

    @property
    def calls(self) -> ModelCalls:
        return ModelCalls(self.model)


RESPONSES = Api(
    name="responses",
    provider_id="openai",
    mock=mock_responses,
    server=mock_responses.MockResponsesServer,
    make_provider=responses_tests.make_provider,
    model="gpt-4.1",
    path="/v1/responses",
    env_key="OPENAI_API_KEY",
    api_key=responses_tests.API_KEY,
    first_response_id="resp_mock_1",
    default_call_id="call_fc_mock_2",
    retry_after="Retry-After",
    cut_after=6,
    without_key={"api_key": None},  # else the key, not `auth`, is sent
    context_error={
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model.",
    },
    stops=[
        (mock_responses.incomplete("max_output_tokens"), "max_tokens"),
        (mock_responses.incomplete("content_filter"), "refusal"),
    ],
)
CHAT = Api(
    name="chat",
    provider_id="openrouter",
    mock=mock_chat,
    server=mock_chat.MockChatServer,
    make_provider=chat_tests.make_provider,
    model="gpt-4.1",
    path="/v1/chat/completions",
    env_key="OPENROUTER_API_KEY",
    api_key=chat_tests.API_KEY,
    first_response_id="chatcmpl-mock-1",
    default_call_id="call_fc_mock_2",  # the same default as the Responses mock
    retry_after="Retry-After",
    cut_after=3,
    context_error={
        "code": "context_length_exceeded",
        "message": "This model's maximum context length is 128000 tokens.",
    },
    stops=[
        (mock_chat.incomplete("max_output_tokens"), "max_tokens"),  # finish_reason "length"
        (mock_chat.incomplete("content_filter"), "refusal"),
    ],
)
MESSAGES = Api(
    name="anthropic",
    provider_id="anthropic",
    mock=mock_anthropic,
    server=mock_anthropic.MockAnthropicServer,
    make_provider=messages_tests.make_provider,
    model="claude-sonnet-4-5",
    path="/v1/messages",
    env_key="ANTHROPIC_API_KEY",
    api_key=messages_tests.API_KEY,
    first_response_id="msg_mock_1",
    default_call_id="toolu_mock_2",
    retry_after="retry-after",
    cut_after=5,  # message_start, ping, content_block_start, two deltas
    context_error={"message": "prompt is too long: 208310 tokens > 200000 maximum"},
    key_echo=f"invalid x-api-key {messages_tests.API_KEY}",
    stops=[
        (mock_anthropic.incomplete(), "max_tokens"),
        (mock_anthropic.incomplete("stop_sequence"), "end_turn"),
    ],
)
APIS = [RESPONSES, CHAT, MESSAGES]


@pytest.fixture(params=APIS, ids=lambda api: api.name)
def api(request: pytest.FixtureRequest) -> Api:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
async def server(api: Api) -> AsyncIterator[MockResponsesServer]:
    async with api.server() as srv:
        yield srv


@pytest.fixture
async def provider(
    api: Api, server: MockResponsesServer, sleeps: Sleeps
) -> AsyncIterator[ModelProvider]:
    p = api.make_provider(server, sleeps)
    yield p
    await p.aclose()


# -- streaming ------------------------------------------------------------------------------


async def test_text_arrives_as_ordered_deltas_then_end_turn(
    api: Api, server: MockResponsesServer, provider: ModelProvider
) -> None:
    server.enqueue(api.mock.text("Hello world", chunks=3))
    events = await api.calls.collect(provider)
    assert texts(events) == ["Hell", "o wo", "rld"]  # Chat's role chunk "" adds nothing
    assert events[-1] == StreamEnd(stop="end_turn", response_id=api.first_response_id)
    assert sum(isinstance(e, StreamEnd) for e in events) == 1
    assert server.requests[0].path == api.path


async def test_text_and_two_tool_calls_in_one_response_end_as_tool_use(
    api: Api, server: MockResponsesServer, provider: ModelProvider
) -> None:
    server.enqueue(
        api.mock.text("Running both."),
        api.mock.tool_call("exec", {"command": ["echo", "hi"]}, call_id="call_1", chunks=4),
        api.mock.tool_call("readFile", {"filePath": "a.txt"}, chunks=2),
    )
    events = await api.calls.collect(provider)
    assert "".join(texts(events)) == "Running both."
    calls = [e for e in events if isinstance(e, ToolCallRequested)]
    assert [(c.call_id, c.name) for c in calls] == [
        ("call_1", "exec"),
        (api.default_call_id, "readFile"),
    ]
    assert json.loads(calls[0].arguments) == {"command": ["echo", "hi"]}
    assert json.loads(calls[1].arguments) == {"filePath": "a.txt"}
    assert events[-1] == StreamEnd(stop="tool_use", response_id=api.first_response_id)


@pytest.mark.parametrize("api", [RESPONSES, CHAT], ids=lambda api: api.name)
async def test_usage_reports_what_the_server_sent(
    api: Api, server: MockResponsesServer, provider: ModelProvider
) -> None:
    # Messages reports no reasoning tokens and counts cache writes: its own test covers it.
    usage_sent = api.mock.Usage(input=100, output=20, cached=10, reasoning=5)
    server.enqueue(api.mock.text("ok"), usage=usage_sent)
    events = await api.calls.collect(provider)
    usage = [e for e in events if isinstance(e, UsageReport)]
    assert usage == [
        UsageReport(input_tokens=100, cached_input_tokens=10, output_tokens=20, reasoning_tokens=5)
    ]
    assert events[-2] == usage[0]  # usage comes right before the end


@pytest.mark.parametrize("case", [0, 1])
async def test_an_incomplete_response_stops_with_its_reason(
    api: Api, server: MockResponsesServer, provider: ModelProvider, case: int
) -> None:
    end, stop = api.stops[case]
    server.enqueue(api.mock.text("partial answ"), end=end, usage=api.mock.Usage(input=5, output=7))
    events = await api.calls.collect(provider)
    assert "".join(texts(events)) == "partial answ"
    assert isinstance(events[-2], UsageReport)
    assert events[-2].output_tokens == 7
    assert events[-1] == StreamEnd(stop=stop, response_id=api.first_response_id)


async def test_refusal_is_shown_and_stops_as_refusal(
    api: Api, server: MockResponsesServer, provider: ModelProvider
) -> None:
    server.enqueue(api.mock.refusal("I can't help with that.", chunks=2))
    events = await api.calls.collect(provider)
    assert "".join(texts(events)) == "I can't help with that."
    assert events[-1] == StreamEnd(stop="refusal", response_id=api.first_response_id)


async def test_closing_the_iterator_early_closes_the_connection(
    api: Api, server: MockResponsesServer, provider: ModelProvider
) -> None:
    server.enqueue(api.mock.text("x" * 50, chunks=50), delay_s=0.02)
    async with aclosing(provider.stream(api.calls.request())) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                break
    assert await server.wait_disconnected(0)


async def test_threaded_mock_serves_a_provider_on_another_loop(api: Api, sleeps: Sleeps) -> None:
    with api.server.in_thread() as srv:
        srv.enqueue(api.mock.text("from the thread", chunks=2))
        p = api.make_provider(srv, sleeps)
        try:
            events = await api.calls.collect(p)
        finally:
            await p.aclose()
        assert "".join(texts(events)) == "from the thread"
        assert srv.requests[0].body["model"] == api.model


# -- errors and retries ---------------------------------------------------------------------


async def test_429_with_retry_after_is_retried_then_succeeds(
    api: Api, server: MockResponsesServer, provider: ModelProvider, sleeps: Sleeps
) -> None:
    server.enqueue_error(429, headers={api.retry_after: "7"})
    server.enqueue(api.mock.text("made it"))
    events = await api.calls.collect(provider)
    assert "".join(texts(events)) == "made it"
    assert sleeps.calls == [7.0]
    assert len(server.requests) == 2


async def test_401_is_auth_error_naming_env_var_without_the_key(
    api: Api, server: MockResponsesServer, provider: ModelProvider
) -> None:
    # Without `key_echo` the mock's body echoes a masked key, like OpenAI's does.
    server.enqueue_error(401, **({"message": api.key_echo} if api.key_echo else {}))
    _, error = await api.calls.collect_error(provider)
    assert error.kind == "auth"
    assert error.http_status == 401
    assert error.retryable is False
    assert api.env_key in error.message
    assert f"model_providers.{api.provider_id}.env_key" in error.message
    assert api.api_key not in error.message
    assert "sk-" not in error.message
    assert len(server.requests) == 1  # an API key cannot be refreshed: never retried


async def test_401_refreshes_the_credentials_once_per_call_and_retries(
    api: Api, server: MockResponsesServer, sleeps: Sleeps
) -> None:
    auth = TokenAuth("tok-old-00000000", "tok-new-11111111", "tok-newer-2222222")
    p = api.make_provider(server, sleeps, auth=auth, **api.without_key)
    server.enqueue_error(401)
    server.enqueue(api.mock.text("hello again"))
    for _ in range(4):
        server.enqueue_error(401)
    try:
        events = await api.calls.collect(p)
        _, rejected = await api.calls.collect_error(p)  # the refreshed token is rejected too
        _, exhausted = await api.calls.collect_error(p)  # no token left to refresh to
    finally:
        await p.aclose()
    assert "".join(texts(events)) == "hello again"
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer tok-old-00000000",
        "Bearer tok-new-11111111",
        "Bearer tok-new-11111111",
        "Bearer tok-newer-2222222",  # one refresh per call: no loop
        "Bearer tok-newer-2222222",  # refresh impossible: not sent again
    ]
    assert rejected.kind == exhausted.kind == "auth"
    assert "tok-" not in rejected.message + exhausted.message
    assert auth.refreshes == 3
    assert sleeps.calls == []  # a refresh is not a backoff retry
    assert server.pending == 1


async def test_a_full_context_window_is_context_window(
    api: Api, server: MockResponsesServer, provider: ModelProvider
) -> None:
    server.enqueue_error(400, **api.context_error)
    _, error = await api.calls.collect_error(provider)
    assert error.kind == "context_window"
    assert "new session" in error.message
    assert len(server.requests) == 1


async def test_500_after_max_retries_is_retryable_provider_error(
    api: Api, server: MockResponsesServer, sleeps: Sleeps
) -> None:
    p = api.make_provider(server, sleeps, max_retries=2)
    for _ in range(3):
        server.enqueue_error(500)
    try:
        _, error = await api.calls.collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "provider"
    assert error.retryable is True
    assert error.http_status == 500
    assert len(server.requests) == 3
    # Two retries spread over the 60 s window: about 20 s then 40 s, each stretched by <= 25%.
    assert len(sleeps.calls) == 2
    first, second = sleeps.calls
    assert 20 <= first <= 25 and 40 <= second <= 50
    assert sum(sleeps.calls) >= 60


@pytest.mark.parametrize("how", ["cut", "clean end without its terminal event"])
async def test_stream_cut_mid_response_raises_instead_of_ending(
    api: Api, server: MockResponsesServer, provider: ModelProvider, how: str
) -> None:
    if how == "cut":
        server.enqueue(api.mock.text("Hello world", chunks=5), cut_after=api.cut_after)
    else:
        server.enqueue(api.mock.text("Hello world", chunks=5), end=api.mock.no_terminal())
    events, error = await api.calls.collect_error(provider)
    assert texts(events)  # some text had arrived...
    assert not any(isinstance(e, StreamEnd) for e in events)  # ...but no normal end
    assert error.kind == "network"
    assert error.retryable is False  # sending it again would duplicate what arrived
    assert "cut off after part of it arrived" in error.message and "kept" in error.message
    assert len(server.requests) == 1  # not retried after deltas were streamed
