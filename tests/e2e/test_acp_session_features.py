"""ACP features editors use beyond a plain turn, through the real daemon: `session/fork`,
`usage` in the prompt result, `logout`.

`session/fork` and `PromptResponse.usage` are in ACP's unstable schema (SDK 2.4.0
`schema/v1/schema.unstable.json`, copied to tests/fixtures/acp/); `logout` and
`agentCapabilities.auth.logout` are stable (https://agentclientprotocol.com/protocol/v1/authentication#logging-out).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.support import mock_responses
from tests.support.acp_schema import acp_errors
from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mock_oauth import fake_jwt
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import user_texts


async def test_session_fork_is_offered_and_copies_the_history(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    try:
        init = await daemon.initialize()
        assert init["agentCapabilities"]["sessionCapabilities"]["fork"] == {}
        assert not acp_errors("InitializeResponse", init, unstable=True)
        sid = await daemon.new_session(approvalPolicy="never")
        model.enqueue(text("one"))
        await daemon.prompt(sid, "question one")
        model.enqueue(text("two"))
        await daemon.prompt(sid, "question two")

        params = {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []}
        assert not acp_errors("ForkSessionRequest", params, unstable=True)
        fork = await daemon.request("session/fork", params)
        assert not acp_errors("ForkSessionResponse", fork, unstable=True), fork
        assert fork["sessionId"] != sid
        policy = next(o for o in fork["configOptions"] if o["id"] == "approval_policy")
        assert policy["currentValue"] == "never", "the fork keeps the session's settings"

        model.enqueue(text("three"))
        await daemon.prompt(fork["sessionId"], "question three")
        assert user_texts(model.requests[-1]) == ["question one", "question two", "question three"]

        alias = await daemon.request("_cody/session/fork", {**params, "atMessage": 0})
        model.enqueue(text("again"))
        await daemon.prompt(alias["sessionId"], "question two, again")
        assert user_texts(model.requests[-1]) == ["question one", "question two, again"]

        listed = await daemon.request("session/list", {})
        assert {s["sessionId"] for s in listed["sessions"]} == {
            sid,
            fork["sessionId"],
            alias["sessionId"],
        }
        await expect_error(
            daemon.request("session/fork", {**params, "sessionId": "01a20000-0000-7000-8000-0"}),
            -32002,
        )
    finally:
        await daemon.close()


async def test_the_prompt_result_carries_the_turns_usage(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(
        tool_call("listDir", {"dirPath": "."}, call_id="l1"),
        usage=mock_responses.Usage(input=100, output=20, cached=40, reasoning=5),
    )
    model.enqueue(text("done"), usage=mock_responses.Usage(input=150, output=10))
    sid = await daemon.new_session()

    result = await daemon.prompt(sid, "list")  # validated against the unstable schema too

    usage = result["usage"]
    assert usage["inputTokens"] == 250 and usage["outputTokens"] == 30
    assert usage["totalTokens"] == 280
    assert usage["cachedReadTokens"] == 40 and usage["thoughtTokens"] == 5
    assert usage == result["_meta"]["cody"]["usage"]["turn"], "the same numbers as Cody's meta"
    model.enqueue(text("again"), usage=mock_responses.Usage(input=300, output=5))
    second = await daemon.prompt(sid, "again")
    assert second["usage"]["inputTokens"] == 300, "this turn's usage, not the session's"


def write_chatgpt_login(codex_home: Path) -> None:
    auth_file = codex_home / "auth.json"
    auth_file.write_text(
        json.dumps(
            {
                "OPENAI_API_KEY": None,
                "tokens": {
                    "id_token": fake_jwt({"sub": "id"}),
                    "access_token": fake_jwt({"sub": "u", "exp": time.time() + 3600}),
                    "refresh_token": "refresh-1",
                    "account_id": "acct-1",
                },
                "last_refresh": "2026-11-01T00:00:00Z",
            }
        )
    )
    os.chmod(auth_file, 0o600)


async def test_logout_ends_the_chatgpt_login_until_authenticate(cody_env: CodyEnv) -> None:
    """After `logout` the connection needs `authenticate` again for the login the daemon
    refreshes (the Codex CLI's ChatGPT login); the login file itself is the Codex CLI's and
    stays. Providers without such a login are not affected."""
    auth_file = Path(cody_env.env["CODEX_HOME"]) / "auth.json"
    write_chatgpt_login(Path(cody_env.env["CODEX_HOME"]))
    before = auth_file.read_bytes()
    async with mock_responses.MockResponsesServer() as backend:
        cody_env.env["CODY_CHATGPT_BASE_URL"] = backend.base_url
        daemon = await Daemon.start(cody_env)
        try:
            init = await daemon.initialize()
            assert init["agentCapabilities"]["auth"] == {"logout": {}}
            sid = await daemon.new_session(provider="openai")
            offline = await daemon.new_session(provider="offline")
            backend.enqueue(text("hi"))
            assert (await daemon.prompt(sid, "hello"))["stopReason"] == "end_turn"

            answer = await daemon.request("logout", {})
            assert not acp_errors("LogoutResponse", answer)
            assert answer["_meta"]["cody"]["loggedOut"] == ["openai"]

            error = await expect_error(daemon.prompt(sid, "still there?"), -32000)
            assert "logged out" in error.message and "openai-api-key" in error.message
            assert error.data["provider"] == "openai"
            assert len(backend.requests) == 1, "no request after logout"
            assert (await daemon.prompt(offline, "list files"))["stopReason"] == "end_turn"

            assert await daemon.request("authenticate", {"methodId": "openai-api-key"}) == {}
            backend.enqueue(text("back"))
            assert (await daemon.prompt(sid, "back?"))["stopReason"] == "end_turn"
        finally:
            await daemon.close()
    assert auth_file.read_bytes() == before, "the Codex CLI's login file is left alone"


async def test_logout_without_a_login_ends_nothing(offline_daemon: Daemon) -> None:
    answer = await offline_daemon.request("logout", {})
    assert answer["_meta"]["cody"]["loggedOut"] == []
    sid = await offline_daemon.new_session()
    assert (await offline_daemon.prompt(sid, "list files"))["stopReason"] == "end_turn"


async def test_a_fork_runs_codys_loop_even_when_config_chooses_a_backend(
    cody_env: CodyEnv,
) -> None:
    """Regression: a fork took `backend` from config.toml and became a codex session with no
    CLI thread (and failed when that CLI was not installed)."""
    cody_env.write_config('backend = "codex"\n')
    cody_env.env["CODEX_CLI_PATH"] = str(cody_env.root / "no-such-codex")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session(backend="native", provider="offline")
        await daemon.prompt(sid, "list files")
        forked = await daemon.request(
            "session/fork", {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []}
        )
        assert forked["_meta"]["cody"]["backend"] == "native"
        result = await daemon.prompt(forked["sessionId"], "list files")
        assert result["stopReason"] == "end_turn"
    finally:
        await daemon.close()


async def test_an_audio_block_is_refused_not_dropped(offline_daemon: Daemon) -> None:
    sid = await offline_daemon.new_session()
    error = await expect_error(
        offline_daemon.request(
            "session/prompt",
            {
                "sessionId": sid,
                "prompt": [
                    {"type": "text", "text": "listen to this"},
                    {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
                ],
            },
        ),
        -32602,
    )
    assert "Audio is not accepted" in error.message
    assert error.data["errors"][0]["key"] == "prompt[1]"
