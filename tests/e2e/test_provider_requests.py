"""Requests real providers accept, through the real daemon (issue 9).

The mocks refuse what the real APIs refuse (see tests/support/mock_*.py for the sources):
a budget for adaptive-only Claude models, summaries for an unverified OpenAI organisation, a
DeepSeek follow-up without `reasoning_content`, a Claude tool turn through OpenRouter without
its `reasoning_details`, a ChatGPT-backend request without `instructions`. Timeouts and retry
windows are configured small so the mechanisms are asserted without waiting minutes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from cody_daemon.store.reader import read_session

from tests.support import mock_anthropic, mock_chat, mock_responses
from tests.support.daemon import CodyEnv, Daemon, expect_error, start_with_mock_key


def provider(name: str, wire_api: str, base_url: str, model: str, extra: str = "") -> str:
    return (
        f'model_provider = "{name}"\nmodel = "{model}"\n'
        f"[model_providers.{name}]\n"
        f'base_url = "{base_url}"\nwire_api = "{wire_api}"\nenv_key = "MOCK_API_KEY"\n'
        f"request_max_retries = 0\nstream_max_retries = 0\n{extra}"
    )


def session_items(env: CodyEnv) -> list[dict[str, Any]]:
    [path] = (env.cody_home / "sessions").glob("*/*/*/*.jsonl")
    return [item.model_dump(mode="json", exclude_none=True) for item in read_session(path).items]


# -- 1. Claude thinking per model ---------------------------------------------------------------


async def test_claude_thinks_adaptively_on_opus_48_and_with_a_budget_on_haiku(
    cody_env: CodyEnv,
) -> None:
    (cody_env.workspace / "a.txt").write_text("alpha\n")
    async with mock_anthropic.MockAnthropicServer() as api:
        daemon = await start_with_mock_key(
            cody_env, provider("claude", "anthropic", api.base_url, "claude-opus-4-8")
        )
        try:
            sid = await daemon.new_session()
            api.enqueue(
                mock_anthropic.reasoning("Read it.", signature="sig-1"),
                mock_anthropic.tool_call("readFile", {"filePath": "a.txt"}, call_id="toolu_1"),
            )
            api.enqueue(mock_anthropic.text("It says alpha."))
            assert (await daemon.prompt(sid, "what is in a.txt?"))["stopReason"] == "end_turn"
            await daemon.set_config_option(sid, "model", "claude-haiku-4-5")
            api.enqueue(mock_anthropic.text("Haiku here."))
            await daemon.prompt(sid, "and now?")
            await daemon.set_config_option(sid, "reasoning_effort", "none")
            api.enqueue(mock_anthropic.text("No thinking."))
            await daemon.prompt(sid, "quick one")
        finally:
            await daemon.close()
    assert api.refused == [], [r.body for r in api.refused]
    opus, follow_up, haiku, off = (r.body for r in api.requests)
    # Opus 4.8 refuses a budget (400); Claude Code sends adaptive + effort, thinking by default.
    assert opus["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert opus["output_config"] == {"effort": "high"}
    assert follow_up["messages"][1]["content"][0]["signature"] == "sig-1"
    # Haiku 4.5 has no adaptive thinking and no effort parameter: a budget.
    assert haiku["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert "output_config" not in haiku
    assert "thinking" not in off  # `none` switches thinking off


# -- 2. OpenAI summaries and effort ---------------------------------------------------------------


async def test_an_unverified_organisation_works_by_default_and_after_asking_for_summaries(
    cody_env: CodyEnv,
) -> None:
    async with mock_responses.MockResponsesServer() as api:
        api.unverified_org = True
        cody_env.env["OPENAI_API_KEY"] = "sk-test-not-secret"
        cody_env.env["OPENAI_BASE_URL"] = api.base_url
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session(provider="openai", model="gpt-5.5")
            api.enqueue(mock_responses.text("no summaries asked for"))
            assert (await daemon.prompt(sid, "one"))["stopReason"] == "end_turn"
            assert api.refused == []
            asked = await daemon.new_session(
                provider="openai", model="gpt-6-preview", reasoningSummary="detailed"
            )
            api.enqueue(mock_responses.text("answered without"))
            api.enqueue(mock_responses.text("and remembered"))
            assert (await daemon.prompt(asked, "two"))["stopReason"] == "end_turn"
            assert (await daemon.prompt(asked, "three"))["stopReason"] == "end_turn"
        finally:
            await daemon.close()
    bodies = [r.body for r in api.requests]
    assert bodies[0]["reasoning"] == {"effort": "medium"}  # explicit effort, no summary
    assert len(api.refused) == 1 and "verified" in api.refused[0].body["error"]["message"]
    assert bodies[1]["reasoning"] == {"effort": "medium", "summary": "detailed"}  # refused
    assert bodies[2]["reasoning"] == {"effort": "medium"}  # sent again, once, without
    assert bodies[3]["reasoning"] == {"effort": "medium"}  # remembered for the provider
    assert daemon.agent_text(asked).endswith("and remembered")


# -- issue 24.15: prompt_cache_key and LiteLLM ---------------------------------------------------


async def test_litellm_in_front_of_another_model_gets_no_prompt_cache_key(
    cody_env: CodyEnv,
) -> None:
    """Issue 24.15: the Responses wire always sent OpenAI's `prompt_cache_key`, and LiteLLM
    in front of a non-OpenAI model answers every such request with 400
    (`litellm.UnsupportedParamsError`, the body in tests/support/mock_responses.py). Only
    OpenAI's own endpoints get it now."""
    async with mock_responses.MockResponsesServer() as api:
        api.litellm_unsupported = {"prompt_cache_key"}
        daemon = await start_with_mock_key(
            cody_env, provider("litellm", "responses", api.base_url, "claude-sonnet-4-5")
        )
        try:
            sid = await daemon.new_session()
            api.enqueue(mock_responses.text("first"))
            api.enqueue(mock_responses.text("second"))
            assert (await daemon.prompt(sid, "one"))["stopReason"] == "end_turn"
            assert (await daemon.prompt(sid, "two"))["stopReason"] == "end_turn"
        finally:
            await daemon.close()
    assert api.refused == [], [r.body for r in api.refused]
    assert all("prompt_cache_key" not in r.body for r in api.requests)


async def test_parameters_a_server_refuses_are_dropped_and_remembered_for_the_provider(
    cody_env: CodyEnv,
) -> None:
    """OpenAI's endpoint gets `prompt_cache_key` (here `OPENAI_BASE_URL` is a LiteLLM proxy in
    front of another model, as a user may set it): the 400 naming the refused parameters
    makes the daemon send the request again without them, and never send them again to that
    provider (other sessions included), as for refused reasoning summaries. One call may drop
    more than one thing (LiteLLM's refusal first, then OpenAI's unverified organisation)."""
    async with mock_responses.MockResponsesServer() as api:
        api.litellm_unsupported = {"prompt_cache_key", "parallel_tool_calls"}
        api.unverified_org = True
        cody_env.env["OPENAI_API_KEY"] = "sk-test-not-secret"
        cody_env.env["OPENAI_BASE_URL"] = api.base_url
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session(
                provider="openai", model="gpt-5.5", reasoningSummary="detailed"
            )
            api.enqueue(mock_responses.text("answered"))
            api.enqueue(mock_responses.text("remembered"))
            api.enqueue(mock_responses.text("in another session too"))
            assert (await daemon.prompt(sid, "one"))["stopReason"] == "end_turn"
            assert (await daemon.prompt(sid, "two"))["stopReason"] == "end_turn"
            other = await daemon.new_session(provider="openai", model="gpt-5.5")
            assert (await daemon.prompt(other, "three"))["stopReason"] == "end_turn"
        finally:
            await daemon.close()
    refusals = [r.body["error"]["message"] for r in api.refused]
    assert len(refusals) == 2, refusals
    assert "litellm.UnsupportedParamsError" in refusals[0] and "verified" in refusals[1]
    first, without_params, without_summary, *later = (r.body for r in api.requests)
    assert first["prompt_cache_key"] == sid and first["parallel_tool_calls"] is True
    assert "prompt_cache_key" not in without_params and "parallel_tool_calls" not in without_params
    assert without_params["reasoning"] == {"effort": "medium", "summary": "detailed"}
    assert without_summary["reasoning"] == {"effort": "medium"}
    assert len(later) == 2
    for body in later:
        assert "prompt_cache_key" not in body and "parallel_tool_calls" not in body
        assert body["reasoning"] == {"effort": "medium"}
    assert daemon.agent_text(other) == "in another session too"


# -- 3 and 6. Chat Completions: reasoning replay, cache breakpoints ---------------------------------


async def test_deepseek_thinking_mode_accepts_the_follow_up_after_a_tool_call(
    cody_env: CodyEnv,
) -> None:
    (cody_env.workspace / "a.txt").write_text("alpha\n")
    async with mock_chat.MockChatServer() as api:
        api.thinking_mode = True
        daemon = await start_with_mock_key(
            cody_env, provider("deepseek", "chat", api.base_url, "deepseek-v4-pro")
        )
        try:
            sid = await daemon.new_session()
            api.enqueue(
                mock_chat.reasoning("I will read a.txt."),
                mock_chat.tool_call("readFile", {"filePath": "a.txt"}, call_id="call_1"),
            )
            api.enqueue(mock_chat.reasoning("It says alpha."), mock_chat.text("alpha"))
            api.enqueue(mock_chat.text("still fine"))
            await daemon.prompt(sid, "read a.txt")
            await daemon.prompt(sid, "again")
        finally:
            await daemon.close()
    assert api.refused == [], [r.body for r in api.refused]
    follow_up = api.requests[1].body["messages"]
    [with_call] = [m for m in follow_up if m.get("tool_calls")]
    assert with_call["reasoning_content"] == "I will read a.txt."
    assert "I will read a.txt." in json.dumps(api.requests[2].body)  # every later request too
    thoughts = [i for i in session_items(cody_env) if i["type"] == "reasoning"]
    assert thoughts[0]["replay_fields"] == {"reasoning_content": "I will read a.txt."}


async def test_claude_through_openrouter_is_cached_and_keeps_its_reasoning_details(
    cody_env: CodyEnv,
) -> None:
    (cody_env.workspace / "a.txt").write_text("alpha\n")
    async with mock_chat.MockChatServer() as api:
        api.reasoning_style = "openrouter"
        api.thinking_upstream = True
        cody_env.env["OPENROUTER_API_KEY"] = "sk-or-test-not-secret"
        cody_env.write_config(f'[model_providers.openrouter]\nbase_url = "{api.base_url}"\n')
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session(provider="openrouter", model="anthropic/claude-opus-4.8")
            api.enqueue(
                mock_chat.reasoning("Read it first.", encrypted="sig-or"),
                mock_chat.tool_call("readFile", {"filePath": "a.txt"}, call_id="call_1"),
            )
            api.enqueue(mock_chat.text("alpha"))
            assert (await daemon.prompt(sid, "read a.txt"))["stopReason"] == "end_turn"
        finally:
            await daemon.close()
    assert api.refused == []
    first, second = (r.body for r in api.requests)
    mark = {"type": "ephemeral"}
    for body in (first, second):
        assert body["messages"][0]["content"][0]["cache_control"] == mark  # the system prompt
        assert body["messages"][-1]["content"][-1]["cache_control"] == mark  # the tail
        assert body["reasoning_effort"] == "medium"  # Claude thinks by default
    [with_call] = [m for m in second["messages"] if m.get("tool_calls")]
    assert with_call["reasoning_details"][0]["signature"] == "sig-or"
    assert with_call["reasoning_details"][0]["text"] == "Read it first."


# -- 5. The first event may take long; a live request is never sent again ---------------------


async def test_a_slow_first_event_is_waited_for_and_a_silent_one_is_not_resent(
    cody_env: CodyEnv,
) -> None:
    async with mock_responses.MockResponsesServer() as api:
        daemon = await start_with_mock_key(
            cody_env,
            provider(
                "slow", "responses", api.base_url, "mock-model", "stream_idle_timeout_ms = 1500\n"
            ),
        )
        try:
            sid = await daemon.new_session()
            # Scaled down: a reasoning model silent for 90 s under a 300 s idle timeout.
            api.enqueue(mock_responses.text("thought long"), pauses={0: 0.8})
            assert (await daemon.prompt(sid, "think"))["stopReason"] == "end_turn"
            assert len(api.requests) == 1
            # Silent for longer than the timeout: abandoned, and not sent a second time.
            api.enqueue(mock_responses.text("too late"), headers_delay_s=4.0)
            api.enqueue(mock_responses.text("a second billed request"))
            error = await expect_error(daemon.prompt(sid, "think harder"), -32010)
        finally:
            await daemon.close()
    assert error.data["kind"] == "network" and error.data["retryable"] is False
    assert "stream_idle_timeout_ms" in error.message and "not sent again" in error.message
    assert len(api.requests) == 2 and api.pending == 1


# -- 7. Retries: a 5xx burst is ridden out with growing waits; in-stream failures ---------------


async def test_a_5xx_burst_is_ridden_out_with_exponential_backoff(cody_env: CodyEnv) -> None:
    async with mock_anthropic.MockAnthropicServer() as api:
        # Scaled: a 20 s burst of 529/503 against a 60 s window -> 0.8 s against 1.5 s.
        daemon = await start_with_mock_key(
            cody_env,
            provider(
                "claude",
                "anthropic",
                api.base_url,
                "mock-model",
                "request_max_retries = 4\nrequest_retry_window_ms = 1500\n",
            ).replace("request_max_retries = 0\n", ""),
        )
        try:
            sid = await daemon.new_session()
            api.enqueue(mock_anthropic.text("back up"))
            started = time.monotonic()
            api.fail_for(0.8, status=529)
            assert (await daemon.prompt(sid, "hello"))["stopReason"] == "end_turn"
            elapsed = time.monotonic() - started
        finally:
            await daemon.close()
    times = [r.received_at for r in api.requests]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(api.requests) >= 3, "several attempts failed before the burst ended"
    assert all(later > earlier for earlier, later in zip(gaps, gaps[1:], strict=False)), gaps
    assert elapsed >= 0.8 and elapsed < 30  # rode it out (generous liveness bound)


async def test_in_stream_failures_are_retried_before_output_and_reported_after(
    cody_env: CodyEnv,
) -> None:
    async with mock_responses.MockResponsesServer() as api:
        daemon = await start_with_mock_key(
            cody_env,
            provider(
                "resp", "responses", api.base_url, "mock-model", "request_retry_window_ms = 300\n"
            ).replace("stream_max_retries = 0", "stream_max_retries = 2"),
        )
        try:
            sid = await daemon.new_session()
            api.enqueue(end=mock_responses.failed("server_error"))  # before any output
            api.enqueue(mock_responses.text("recovered"))
            assert (await daemon.prompt(sid, "first"))["stopReason"] == "end_turn"
            assert len(api.requests) == 2
            api.enqueue(
                mock_responses.text("half an answer", chunks=3),
                end=mock_responses.failed("server_error"),
            )
            error = await expect_error(daemon.prompt(sid, "second"), -32010)
            assert len(api.requests) == 3  # output had arrived: not sent again
            [path] = (cody_env.cody_home / "sessions").glob("*/*/*/*.jsonl")
            session_id = sid
        finally:
            await daemon.close()
    assert "cut off after part of it arrived" in error.message and "kept" in error.message
    texts = [i for i in read_session(Path(path)).items if i.type == "message"]
    assert texts[-1].text == "half an answer"  # what arrived is kept
    # ...and `session/load` in a new daemon replays it.
    again = await Daemon.start(cody_env)
    try:
        await again.initialize()
        await again.request(
            "session/load",
            {"sessionId": session_id, "cwd": str(cody_env.workspace), "mcpServers": []},
        )
        assert "half an answer" in again.agent_text(session_id)
    finally:
        await again.close()


# -- 4. Identity on a ChatGPT login ---------------------------------------------------------------
# (tests/e2e/test_providers.py::test_an_expired_chatgpt_login_is_refreshed_... checks the
# originator, User-Agent and instructions against a ChatGPT-backend mock.)


# -- 9. The catalog feeds the usage meter ---------------------------------------------------------


async def test_the_usage_meter_shows_the_catalog_context_window(cody_env: CodyEnv) -> None:
    async with mock_responses.MockResponsesServer() as api:
        cody_env.env["OPENAI_API_KEY"] = "sk-test-not-secret"
        cody_env.env["OPENAI_BASE_URL"] = api.base_url
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            listing = await daemon.request("_cody/models/list", {})
            sid = await daemon.new_session(provider="openai", model="gpt-5.4-mini")
            api.enqueue(mock_responses.text("hi"), usage=mock_responses.Usage(input=10, output=2))
            await daemon.prompt(sid, "hello")
        finally:
            await daemon.close()
    openai = next(p for p in listing["providers"] if p["id"] == "openai")
    windows = {m["id"]: m["contextWindow"] for m in openai["models"]}
    assert windows["gpt-5.5"] == 1_050_000 and windows["gpt-5.4-mini"] == 400_000
    [meter] = daemon.session_updates(sid, "usage_update")
    assert meter["size"] == 400_000 and meter["used"] == 12


# -- 10. A Codex config.toml works unchanged -------------------------------------------------------


async def test_a_codex_config_toml_starts_a_session_unchanged(cody_env: CodyEnv) -> None:
    async with mock_responses.MockResponsesServer() as api:
        cody_env.env["MY_GATEWAY_KEY"] = "gw-key-not-secret"
        cody_env.env["MY_ORG_ID"] = "org-42"
        cody_env.write_config(
            # A Codex user's file: top-level model, a custom provider without default_model,
            # Codex's provider keys, and Codex settings Cody has no use for.
            'model = "gpt-5.5"\n'
            'model_provider = "gateway"\n'
            'model_reasoning_effort = "high"\n'
            'model_verbosity = "low"\n'
            'approval_policy = "on-request"\n'
            "hide_agent_reasoning = false\n"
            'profile = "work"\n'
            "[model_providers.gateway]\n"
            'name = "My gateway"\n'
            f'base_url = "{api.base_url}"\n'
            'env_key = "MY_GATEWAY_KEY"\n'
            'wire_api = "responses"\n'
            'query_params = { "api-version" = "2025-04-01-preview" }\n'
            'http_headers = { "X-Team" = "tools" }\n'
            'env_http_headers = { "OpenAI-Organization" = "MY_ORG_ID", "X-Unset" = "NOT_SET" }\n'
            "request_max_retries = 4\n"
            "stream_max_retries = 5\n"
            "stream_idle_timeout_ms = 300000\n"
            "requires_openai_auth = false\n"
            "[tui]\n"
            "notifications = true\n"
            "[features]\n"
            "web_search_request = true\n"
            f'[projects."{cody_env.workspace}"]\n'
            'trust_level = "trusted"\n'
            "[sandbox_workspace_write]\n"
            "network_access = false\n"
            "exclude_slash_tmp = false\n"
            "[profiles.work]\n"
            'model = "gpt-5.4"\n'
        )
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            result = await daemon.request(
                "session/new", {"cwd": str(cody_env.workspace), "mcpServers": []}
            )
            sid = result["sessionId"]
            api.enqueue(mock_responses.text("hello from the gateway"))
            assert (await daemon.prompt(sid, "hi"))["stopReason"] == "end_turn"
        finally:
            await daemon.close()
    meta = result["_meta"]["cody"]
    assert (meta["provider"], meta["model"]) == ("gateway", "gpt-5.5")
    [warning] = [w for w in meta["warnings"] if "Codex" in w]
    assert "model_verbosity" in warning and "tui" in warning and "trust_level" in warning
    assert "sandbox_workspace_write.exclude_slash_tmp" in warning
    assert "network_access" not in warning, "Codex's sandbox keys Cody honours are not warned"
    [sent] = api.requests
    assert sent.path == "/v1/responses?api-version=2025-04-01-preview"
    assert sent.headers["authorization"] == "Bearer gw-key-not-secret"
    assert sent.headers["x-team"] == "tools"
    assert sent.headers["openai-organization"] == "org-42"
    assert "x-unset" not in sent.headers  # an unset variable sends no header (Codex's rule)
    assert sent.body["model"] == "gpt-5.5"
    assert sent.body["reasoning"] == {"effort": "high"}
