"""The Responses API provider against a real HTTP mock on 127.0.0.1 (no patching)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
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
from cody_daemon.providers.base import (
    ReasoningDelta,
    ReasoningDone,
    TextDelta,
    ToolCallRequested,
    ToolSpec,
)
from cody_daemon.providers.openai_responses import OpenAIResponsesProvider

from tests.support.mock_responses import (
    MockResponsesServer,
    failed,
    reasoning,
    text,
)
from tests.support.provider_calls import Sleeps, model_calls, provider_fixtures, texts

CODEX_REQUEST = (
    Path(__file__).parents[1] / "fixtures" / "providers" / "responses_request_codex.json"
)
API_KEY = "sk-test-secret-0123456789abcdef"


def make_provider(
    server: MockResponsesServer, sleeps: Sleeps, **kw: Any
) -> OpenAIResponsesProvider:
    defaults: dict[str, Any] = {
        "provider_id": "openai",
        "base_url": server.base_url,
        "api_key": API_KEY,
        "env_key": "OPENAI_API_KEY",
        "headers": {"OpenAI-Beta": "test"},
        "sleep": sleeps,
    }
    return OpenAIResponsesProvider(**{**defaults, **kw})


server, provider = provider_fixtures(MockResponsesServer, make_provider)
request, collect, collect_error = model_calls("gpt-4.1")


# -- streaming ------------------------------------------------------------------------------


async def test_reasoning_streams_then_completes_with_encrypted_content(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.enqueue(reasoning("thinking hard", encrypted="enc-1", chunks=2), text("Done."))
    events = await collect(provider)
    kinds = [type(e).__name__ for e in events]
    assert kinds[:4] == ["ReasoningDelta", "ReasoningDelta", "ReasoningDone", "TextDelta"]
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "thinking hard"
    done = next(e for e in events if isinstance(e, ReasoningDone)).item
    assert done.id == "rs_mock_0"
    assert done.text == "thinking hard"
    assert done.encrypted_content == "enc-1"
    assert done.provider == "openai"


def _created() -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": "resp_raw", "status": "in_progress"}}


def _completed(output: list[dict[str, Any]]) -> dict[str, Any]:
    response = {"id": "resp_raw", "status": "completed", "output": output, "usage": None}
    return {"type": "response.completed", "response": response}


async def test_tool_arguments_assembled_from_deltas_and_final_item_wins(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    where = {"item_id": "fc_1", "output_index": 0}
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_a", "name": "exec"}
    server.enqueue_events(
        [
            _created(),
            {"type": "response.function_call_arguments.delta", **where, "delta": '{"command":'},
            {"type": "response.function_call_arguments.delta", **where, "delta": ' "ls"}'},
            {"type": "response.output_item.done", "output_index": 0, "item": call},
            _completed([call]),
        ]
    )
    fixed = {**call, "id": "fc_2", "call_id": "call_b", "arguments": '{"command": "pwd"}'}
    server.enqueue_events(
        [
            _created(),
            {
                "type": "response.function_call_arguments.delta",
                **where,
                "delta": '{"command": "ls"}',
            },
            {"type": "response.output_item.done", "output_index": 0, "item": fixed},
            _completed([fixed]),
        ]
    )
    first = [e for e in await collect(provider) if isinstance(e, ToolCallRequested)]
    second = [e for e in await collect(provider) if isinstance(e, ToolCallRequested)]
    assert first == [
        ToolCallRequested(call_id="call_a", name="exec", arguments='{"command": "ls"}')
    ]
    assert second == [
        ToolCallRequested(call_id="call_b", name="exec", arguments='{"command": "pwd"}')
    ]


async def test_reasoning_summary_parts_are_separated(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    where = {"item_id": "rs_1", "output_index": 0}
    part = {"type": "summary_text", "text": ""}
    server.enqueue_events(
        [
            _created(),
            {
                "type": "response.reasoning_summary_part.added",
                **where,
                "summary_index": 0,
                "part": part,
            },
            {
                "type": "response.reasoning_summary_text.delta",
                **where,
                "summary_index": 0,
                "delta": "**Plan**",
            },
            {
                "type": "response.reasoning_summary_part.added",
                **where,
                "summary_index": 1,
                "part": part,
            },
            {
                "type": "response.reasoning_summary_text.delta",
                **where,
                "summary_index": 1,
                "delta": "**Check**",
            },
            _completed([]),
        ]
    )
    events = await collect(provider)
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert thought == "**Plan**\n\n**Check**"


# -- request shape --------------------------------------------------------------------------


async def test_request_body_has_the_codex_shape(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    # OpenAI itself (the pool says so for the official base URL or a ChatGPT login) gets the
    # cache routing hint; any other server does not (test_provider_requests.py).
    provider = make_provider(server, sleeps, prompt_cache_key=True)
    codex = json.loads(CODEX_REQUEST.read_text())["body"]
    history: list[HistoryItem] = [
        MessageItem(id="d1", role="developer", content=[TextPart(type="input_text", text="rules")]),
        user_message("u1", "run echo hello"),
        ReasoningItem(
            id="rs_1",
            summary=[SummaryPart(text="plan")],
            encrypted_content="enc",
            provider="openai",
        ),
        MessageItem(
            id="a1", role="assistant", content=[TextPart(type="output_text", text="On it.")]
        ),
        FunctionCallItem(call_id="call_1", name="exec", arguments='{"command": "echo hello"}'),
        FunctionCallOutputItem(call_id="call_1", output="hello\n"),
    ]
    tool = ToolSpec(name="exec", description="Run a command.", parameters={"type": "object"})
    server.enqueue(text("ok"))
    await collect(
        provider, request(history, model="gpt-5", tools=[tool], reasoning_effort="medium")
    )

    recorded = server.requests[0]
    body = recorded.body
    assert recorded.path == "/v1/responses"
    # Same top-level keys as Codex, except Codex-only `text`/`client_metadata`; Cody sends the
    # system prompt as `instructions` instead of a developer message.
    assert set(body) == (set(codex) - {"text", "client_metadata"}) | {"instructions"}
    for key in ("tool_choice", "parallel_tool_calls", "store", "stream", "include"):
        assert body[key] == codex[key], key
    assert body["prompt_cache_key"] == "session-1"
    # No summary unless configured: unverified organisations get a 400 for one.
    assert body["reasoning"] == {"effort": "medium"}
    assert body["instructions"] == "You are Cody."

    # Item shapes match Codex's, minus Codex's optional item `id`/`status`.
    ours = {(i["type"], i.get("role")): i for i in body["input"]}
    for theirs in codex["input"]:
        mine = ours[(theirs["type"], theirs.get("role"))]
        assert set(mine) == set(theirs) - {"id", "status"}, theirs["type"]
        for mine_part, their_part in zip(
            mine.get("content", []), theirs.get("content", []), strict=False
        ):
            assert mine_part.keys() == their_part.keys()
    assert ours[("message", "assistant")]["content"] == [{"type": "output_text", "text": "On it."}]
    assert ours[("reasoning", None)] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "plan"}],
        "encrypted_content": "enc",
    }
    assert [i["type"] for i in body["input"]] == [
        "message",
        "message",
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert body["tools"][0].keys() == codex["tools"][0].keys()
    assert body["tools"][0]["strict"] is False

    headers = recorded.headers
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["accept"] == "text/event-stream"
    assert headers["content-type"] == "application/json"
    assert headers["openai-beta"] == "test"


async def test_non_reasoning_model_gets_no_reasoning_params(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(model="gpt-4.1", max_output_tokens=256))
    body = server.requests[0].body
    assert "reasoning" not in body
    assert "include" not in body
    assert body["max_output_tokens"] == 256


async def test_summary_none_omits_summary(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(model="o3", reasoning_effort="high", reasoning_summary="none"))
    assert server.requests[0].body["reasoning"] == {"effort": "high"}


async def test_reasoning_from_another_provider_is_not_sent(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    history: list[HistoryItem] = [
        user_message("u1", "hi"),
        ReasoningItem(
            id="th_1", summary=[SummaryPart(text="a")], signature="sig", provider="anthropic"
        ),
        ReasoningItem(id="rs_x", encrypted_content="enc-other", provider="openrouter"),
        ReasoningItem(id="rs_y", summary=[SummaryPart(text="b")], provider="openai"),
        ReasoningItem(id="rs_z", encrypted_content="enc-mine", provider="openai"),
        user_message("u2", "again"),
    ]
    server.enqueue(text("ok"))
    await collect(provider, request(history, model="gpt-5"))
    sent = server.requests[0].body["input"]
    assert [i.get("id") for i in sent if i["type"] == "reasoning"] == ["rs_z"]
    assert "enc-other" not in json.dumps(sent)


# -- errors and retries ---------------------------------------------------------------------


async def test_retry_after_ms_wins_over_retry_after(
    server: MockResponsesServer, provider: OpenAIResponsesProvider, sleeps: Sleeps
) -> None:
    server.enqueue_error(429, headers={"retry-after-ms": "1500", "Retry-After": "9"})
    server.enqueue(text("ok"))
    await collect(provider)
    assert sleeps.calls == [1.5]


class RotatingAuth:
    """An AuthSource whose refresh swaps in a new token (like an OAuth login)."""

    def __init__(self, *, can_refresh: bool = True) -> None:
        self.token = "oauth-token-old-0123456789"
        self.old_tokens: list[str] = []
        self.refreshes = 0
        self.can_refresh = can_refresh

    @property
    def secrets(self) -> tuple[str, ...]:
        return (*self.old_tokens, self.token)

    async def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def refresh(self) -> bool:
        self.refreshes += 1
        if not self.can_refresh:
            return False
        self.old_tokens.append(self.token)
        self.token = f"oauth-token-new-{self.refreshes}-abcdefghij"
        return True


async def test_401_after_a_refresh_is_not_retried_again_and_hides_both_tokens(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    auth = RotatingAuth()
    p = make_provider(server, sleeps, api_key=None, auth=auth)
    server.enqueue_error(401)
    echo = "Token oauth-token-new-1-abcdefghij and oauth-token-old-0123456789 are invalid."
    server.enqueue_error(401, message=echo)
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "auth"
    assert error.http_status == 401
    assert auth.refreshes == 1
    assert len(server.requests) == 2
    assert "oauth-token" not in error.message


async def test_error_after_refresh_scrubs_the_new_secret(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    auth = RotatingAuth()
    p = make_provider(server, sleeps, api_key=None, auth=auth)
    server.enqueue_error(401)
    server.enqueue_error(400, message="bad header oauth-token-new-1-abcdefghij given")
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "provider"
    assert "oauth-token-new-1-abcdefghij" not in error.message
    assert "[redacted]" in error.message


async def test_401_with_an_auth_that_cannot_refresh_is_not_retried(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    auth = RotatingAuth(can_refresh=False)
    p = make_provider(server, sleeps, api_key=None, auth=auth)
    server.enqueue_error(401)
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "auth"
    assert "OPENAI_API_KEY" in error.message
    assert auth.refreshes == 1
    assert len(server.requests) == 1


async def test_connection_dropped_before_first_byte_is_retried(
    server: MockResponsesServer, provider: OpenAIResponsesProvider, sleeps: Sleeps
) -> None:
    server.enqueue_disconnect()
    server.enqueue(text("second try"))
    events = await collect(provider)
    assert "".join(texts(events)) == "second try"
    assert len(server.requests) == 2
    assert len(sleeps.calls) == 1


async def test_a_refused_loopback_server_is_a_network_error_at_once(sleeps: Sleeps) -> None:
    """Nothing listens there (a local server not started): retrying for a minute would not
    start it (issue 24.5)."""
    async with MockResponsesServer() as gone:
        base_url = gone.base_url  # a port nobody listens on once the server stopped
    p = OpenAIResponsesProvider(
        provider_id="local", base_url=base_url, api_key=None, max_retries=4, sleep=sleeps
    )
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "network"
    assert error.retryable is False
    assert f"Nothing is listening at {base_url}" in error.message
    assert "model_providers.local.base_url" in error.message
    assert sleeps.calls == []


async def test_failed_response_is_classified(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.enqueue(text("so far"), end=failed("rate_limit_exceeded", "Please try again in 2.5s."))
    server.enqueue(end=failed("context_length_exceeded", "Too long."))
    errors = [(await collect_error(provider))[1] for _ in range(2)]
    assert [e.kind for e in errors] == ["rate_limit", "context_window"]
    assert errors[0].retry_after_s == 2.5
    assert "cut off after part of it arrived" in errors[0].message  # output had arrived
    assert len(server.requests) == 2  # after output, or not retryable: reported, not retried


async def test_in_stream_failure_before_any_output_is_retried_like_an_http_error(
    server: MockResponsesServer, provider: OpenAIResponsesProvider, sleeps: Sleeps
) -> None:
    server.enqueue(end=failed("server_error"))  # response.created ... response.failed
    server.enqueue_events(
        [
            {"type": "response.created", "response": {"id": "resp_2", "status": "in_progress"}},
            {"type": "error", "code": "server_error", "message": "Overloaded.", "param": None},
        ]
    )
    server.enqueue(text("third time lucky"))
    events = await collect(provider)
    assert "".join(texts(events)) == "third time lucky"
    assert len(server.requests) == 3
    assert len(sleeps.calls) == 2 and sleeps.calls[1] > sleeps.calls[0]  # backing off


async def test_error_event_is_raised(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.enqueue_events(
        [
            {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
            {"type": "error", "code": "invalid_prompt", "message": "Bad prompt.", "param": None},
        ]
    )
    _, error = await collect_error(provider)
    assert error.kind == "provider"
    assert "Bad prompt." in error.message


async def test_empty_mock_queue_fails_loudly(server: MockResponsesServer, sleeps: Sleeps) -> None:
    p = make_provider(server, sleeps, max_retries=0)
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.http_status == 500
    assert "mock: no scripted response left" in error.message
    assert len(server.requests) == 1


# -- timeouts and cancellation --------------------------------------------------------------


async def test_idle_stream_times_out_naming_the_config_key(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    p = make_provider(server, sleeps, stream_idle_timeout_s=0.1)
    server.enqueue(text("ab", chunks=2), pauses={5: 2.0})  # stall after the first delta
    try:
        events, error = await collect_error(p)
    finally:
        await p.aclose()
    assert texts(events) == ["a"]
    assert error.kind == "network"
    assert "model_providers.openai.stream_idle_timeout_ms" in error.message
    assert await server.wait_disconnected(0)  # the stalled connection was dropped


async def test_slow_consumer_does_not_trip_the_idle_timeout(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    p = make_provider(server, sleeps, stream_idle_timeout_s=0.1)
    server.enqueue(text("abc", chunks=3))
    received: list[str] = []
    try:
        async for event in p.stream(request()):
            if isinstance(event, TextDelta):
                received.append(event.text)
                await asyncio.sleep(0.15)  # the consumer is slow, the server is not
    finally:
        await p.aclose()
    assert received == ["a", "b", "c"]


async def test_a_silent_first_event_within_the_idle_timeout_is_waited_for(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    # A reasoning model may think for minutes before its first byte (79 s was reported on
    # Chat); scaled down: the idle timeout covers the first event too.
    p = make_provider(server, sleeps, stream_idle_timeout_s=1.5)
    server.enqueue(text("worth the wait"), headers_delay_s=0.6)
    try:
        events = await collect(p)
    finally:
        await p.aclose()
    assert "".join(texts(events)) == "worth the wait"
    assert len(server.requests) == 1 and not sleeps.calls


async def test_no_first_event_in_time_is_abandoned_and_never_sent_again(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    p = make_provider(server, sleeps, stream_idle_timeout_s=0.3)
    server.enqueue(text("late"), headers_delay_s=2.0)
    server.enqueue(text("a second, billed request"))
    try:
        _, error = await collect_error(p)
    finally:
        await p.aclose()
    assert error.kind == "network" and error.retryable is False
    assert "not sent again" in error.message
    assert "model_providers.openai.stream_idle_timeout_ms" in error.message
    assert len(server.requests) == 1 and not sleeps.calls
    assert server.pending == 1


async def test_cancelling_the_consumer_closes_the_connection(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.enqueue(text("x" * 50, chunks=50), delay_s=0.05)
    first = asyncio.Event()

    async def consume() -> None:
        async for event in provider.stream(request()):
            if isinstance(event, TextDelta):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await server.wait_disconnected(0)


# -- client ownership and the threaded mock -------------------------------------------------


async def test_aclose_leaves_a_passed_in_client_open(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    async with httpx.AsyncClient() as client:
        p = make_provider(server, sleeps, client=client)
        server.enqueue(text("ok"))
        await collect(p)
        await p.aclose()
        assert not client.is_closed


# -- reasoning parameters per model, summaries ------------------------------------------------


@pytest.mark.parametrize(
    ("model", "configured", "sent"),
    [
        ("gpt-5.5", None, {"effort": "medium"}),  # explicit, as Codex sends (5.1+ default none)
        ("gpt-5.5", "none", {"effort": "none"}),
        ("gpt-5.5", "minimal", {"effort": "low"}),  # gpt-5.5 takes no `minimal`
        ("gpt-5.3-codex", "none", {"effort": "low"}),  # no `none` there: the lowest it takes
        ("gpt-6-mini", None, {"effort": "medium"}),  # an unlisted member of the GPT-5+ family
        ("o4-mini", "high", {"effort": "high"}),
        ("gpt-4.1", None, None),  # not a reasoning model: it would reject `reasoning`
    ],
)
async def test_reasoning_effort_is_explicit_for_reasoning_models(
    server: MockResponsesServer,
    provider: OpenAIResponsesProvider,
    model: str,
    configured: str | None,
    sent: dict[str, str] | None,
) -> None:
    server.enqueue(text("ok"))
    await collect(provider, request(model=model, reasoning_effort=configured))
    assert not server.refused, server.refused  # the mock refuses efforts a model rejects
    body = server.requests[0].body
    assert body.get("reasoning") == sent
    assert ("include" in body) == (sent is not None)


async def test_an_unverified_organisation_gets_its_answer_without_summaries(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.unverified_org = True
    server.enqueue(text("first"))
    server.enqueue(text("second"))
    first = await collect(provider, request(model="gpt-5.5", reasoning_summary="detailed"))
    second = await collect(provider, request(model="gpt-5.5", reasoning_summary="detailed"))
    assert texts(first) == ["first"] and texts(second) == ["second"]
    # One refusal, one retry without the summary, and no second refusal: remembered.
    assert [r.status for r in server.refused] == [400]
    bodies = [r.body for r in server.requests]
    assert bodies[0]["reasoning"] == {"effort": "medium", "summary": "detailed"}
    assert bodies[1]["reasoning"] == {"effort": "medium"}
    assert bodies[2]["reasoning"] == {"effort": "medium"}
    assert provider.summaries_refused


async def test_other_400s_are_not_retried_without_summaries(
    server: MockResponsesServer, provider: OpenAIResponsesProvider
) -> None:
    server.enqueue_error(400, message="Invalid 'input[0]'.", code="invalid_value")
    _, error = await collect_error(provider, request(model="gpt-5.5", reasoning_summary="auto"))
    assert error.http_status == 400
    assert len(server.requests) == 1 and not provider.summaries_refused


async def test_a_chatgpt_login_asks_for_summaries_by_default_an_api_key_does_not(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    login = make_provider(server, sleeps, default_summary="auto")
    key = make_provider(server, sleeps)
    server.enqueue(text("a"))
    server.enqueue(text("b"))
    try:
        await collect(login, request(model="gpt-5.5"))
        await collect(key, request(model="gpt-5.5"))
    finally:
        await login.aclose()
        await key.aclose()
    assert server.requests[0].body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert server.requests[1].body["reasoning"] == {"effort": "medium"}


async def test_query_params_are_added_to_the_url(
    server: MockResponsesServer, sleeps: Sleeps
) -> None:
    p = make_provider(server, sleeps, query_params={"api-version": "2025-04-01-preview"})
    server.enqueue(text("ok"))
    try:
        await collect(p)
    finally:
        await p.aclose()
    assert server.requests[0].path == "/v1/responses?api-version=2025-04-01-preview"
