"""The ChatGPT OAuth login: real temp files, a real token endpoint on 127.0.0.1.

(A Claude subscription login is never used by Cody's own loop: see tests/e2e/test_providers.py.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.core.history import user_message
from cody_daemon.providers import auth_sources
from cody_daemon.providers.auth import ApiKeyAuth, NoAuth
from cody_daemon.providers.auth_sources import (
    CHATGPT_TOKEN_URL_ENV,
    auth_for,
    base_url_for,
)
from cody_daemon.providers.base import ModelRequest, ProviderError, TextDelta
from cody_daemon.providers.oauth_chatgpt import (
    CHATGPT_BASE_URL,
    CHATGPT_TOKEN_URL,
    CODEX_CLIENT_ID,
    ChatGptAuth,
)
from cody_daemon.providers.openai_responses import OpenAIResponsesProvider
from cody_daemon.providers.specs import Credentials, builtin_providers

from tests.support.mock_oauth import MockTokenServer, fake_jwt
from tests.support.mock_responses import MockResponsesServer, text

NOW = 1_800_000_000.0
ACCOUNT = "acct-test-0001"
OLD_REFRESH = "rt-old-fake-0123456789"
NEW_REFRESH = "rt-new-fake-9876543210"
OLD_ID = fake_jwt({"sub": "old-id-token", "exp": NOW + 3600})
NEW_ID = fake_jwt({"sub": "new-id-token", "exp": NOW + 7200})


def jwt_access(label: str, exp: float) -> str:
    return fake_jwt({"sub": label, "exp": exp, "https://api.openai.com/auth": {}})


EXPIRED_ACCESS = jwt_access("old-access", NOW - 10)
NEW_ACCESS = jwt_access("new-access", NOW + 3600)


def clock() -> float:
    return NOW


@pytest.fixture
async def tokens() -> AsyncIterator[MockTokenServer]:
    async with MockTokenServer() as srv:
        yield srv


def write_codex(home: Path, access: str = EXPIRED_ACCESS, mode: int = 0o600) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "auth.json"
    path.write_text(
        json.dumps(
            {
                "OPENAI_API_KEY": None,
                "tokens": {
                    "id_token": OLD_ID,
                    "access_token": access,
                    "refresh_token": OLD_REFRESH,
                    "account_id": ACCOUNT,
                    "unknown_token_field": "kept",
                },
                "last_refresh": "2026-01-01T00:00:00.123456789Z",
                "future_field": {"nested": [1, 2, 3]},
            }
        )
    )
    path.chmod(mode)
    return path


def chatgpt_answer(**extra: Any) -> dict[str, Any]:
    return {
        "id_token": NEW_ID,
        "access_token": NEW_ACCESS,
        "refresh_token": NEW_REFRESH,
        **extra,
    }


def chatgpt(home: Path, srv: MockTokenServer, **kw: Any) -> ChatGptAuth:
    return ChatGptAuth(home, token_url=srv.url, now=clock, **kw)


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text


# -- ChatGPT ------------------------------------------------------------------------------------


async def test_expired_chatgpt_token_is_refreshed_before_the_request(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    path = write_codex(tmp_path)
    tokens.enqueue(200, chatgpt_answer())
    auth = chatgpt(tmp_path, tokens)

    headers = await auth.headers()

    assert headers["Authorization"] == f"Bearer {NEW_ACCESS}"
    assert headers["ChatGPT-Account-ID"] == ACCOUNT
    assert headers["originator"] == "cody"
    [sent] = tokens.requests
    assert sent.method == "POST"
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == {
        "client_id": CODEX_CLIENT_ID,
        "grant_type": "refresh_token",
        "refresh_token": OLD_REFRESH,
        "scope": "openid profile email",
    }
    saved = json.loads(path.read_text())
    assert saved["tokens"] == {
        "id_token": NEW_ID,
        "access_token": NEW_ACCESS,
        "refresh_token": NEW_REFRESH,
        "account_id": ACCOUNT,
        "unknown_token_field": "kept",
    }
    assert saved["OPENAI_API_KEY"] is None
    assert saved["future_field"] == {"nested": [1, 2, 3]}
    assert saved["last_refresh"] == "2027-01-15T08:00:00Z"  # NOW, in Codex's format
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["auth.json"]  # no temp file left behind
    # ...and the next call uses the saved token without asking again.
    assert (await auth.headers())["Authorization"] == f"Bearer {NEW_ACCESS}"
    assert len(tokens.requests) == 1


async def test_refresh_keeps_a_non_default_file_mode(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    path = write_codex(tmp_path, mode=0o640)
    tokens.enqueue(200, chatgpt_answer())
    await chatgpt(tmp_path, tokens).headers()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


async def test_refresh_keeps_the_login_files_owner(tmp_path: Path, tokens: MockTokenServer) -> None:
    """A daemon run by root (sudo, a container) refreshing a user's login file leaves it the
    user's: before, the refreshed file became root's and the user's own `codex` could no
    longer read it."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("giving a file to another owner needs root (CI runs as root)")
    path = write_codex(tmp_path)
    os.chown(path, 4321, 4321)
    tokens.enqueue(200, chatgpt_answer())
    await chatgpt(tmp_path, tokens).headers()
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4321, 4321, 0o600)
    assert json.loads(path.read_text())["tokens"]["access_token"] == NEW_ACCESS


async def test_valid_token_is_used_without_refreshing(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    valid = jwt_access("valid", NOW + 600)
    write_codex(tmp_path, access=valid)
    headers = await chatgpt(tmp_path, tokens).headers()
    assert headers["Authorization"] == f"Bearer {valid}"
    assert tokens.requests == []


async def test_token_expiring_within_60_s_counts_as_expired(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    write_codex(tmp_path, access=jwt_access("nearly", NOW + 59))
    tokens.enqueue(200, chatgpt_answer())
    assert (await chatgpt(tmp_path, tokens).headers())["Authorization"] == f"Bearer {NEW_ACCESS}"
    assert len(tokens.requests) == 1


async def test_401_refresh_posts_exactly_once(tmp_path: Path, tokens: MockTokenServer) -> None:
    write_codex(tmp_path, access=jwt_access("valid-but-revoked", NOW + 600))
    tokens.enqueue(200, chatgpt_answer())
    auth = chatgpt(tmp_path, tokens)
    await auth.headers()
    assert await auth.refresh() is True
    assert (await auth.headers())["Authorization"] == f"Bearer {NEW_ACCESS}"
    assert len(tokens.requests) == 1


async def test_concurrent_headers_calls_refresh_once(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    write_codex(tmp_path)
    tokens.enqueue(200, chatgpt_answer(), delay_s=0.1)  # slow, so the callers overlap
    auth = chatgpt(tmp_path, tokens)
    results = await asyncio.gather(*(auth.headers() for _ in range(5)))
    assert {h["Authorization"] for h in results} == {f"Bearer {NEW_ACCESS}"}
    assert len(tokens.requests) == 1


async def test_concurrent_401_refreshes_post_once(tmp_path: Path, tokens: MockTokenServer) -> None:
    write_codex(tmp_path, access=jwt_access("valid-but-revoked", NOW + 600))
    tokens.enqueue(200, chatgpt_answer(), delay_s=0.1)
    auth = chatgpt(tmp_path, tokens)
    await auth.headers()
    assert await asyncio.gather(auth.refresh(), auth.refresh(), auth.refresh()) == [True] * 3
    assert len(tokens.requests) == 1


async def test_login_refreshed_by_the_codex_cli_is_adopted_without_a_post(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    write_codex(tmp_path, access=jwt_access("first", NOW + 600))
    auth = chatgpt(tmp_path, tokens)
    await auth.headers()
    other = jwt_access("refreshed-by-codex", NOW + 3600)
    write_codex(tmp_path, access=other)  # the Codex CLI rotated the tokens meanwhile
    assert await auth.refresh() is True
    assert (await auth.headers())["Authorization"] == f"Bearer {other}"
    assert tokens.requests == []


async def test_failed_refresh_is_an_actionable_auth_error_without_tokens(
    tmp_path: Path, tokens: MockTokenServer, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_codex(tmp_path)
    before = path.read_bytes()
    tokens.enqueue(400, {"error": "invalid_grant", "error_description": f"bad {OLD_REFRESH}"})
    auth = chatgpt(tmp_path, tokens)
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ProviderError) as caught:
        await auth.headers()

    error = caught.value
    assert error.kind == "auth"
    assert error.retryable is False
    assert error.provider == "openai"
    assert "codex login" in error.message
    assert "OPENAI_API_KEY" in error.message
    assert "invalid_grant" in error.message
    for text_ in (error.message, str(error), repr(error), repr(auth), caplog.text):
        assert_no_secret(text_, EXPIRED_ACCESS, OLD_REFRESH, OLD_ID)
    assert path.read_bytes() == before  # nothing written on failure
    assert set(auth.secrets) >= {EXPIRED_ACCESS, OLD_REFRESH, OLD_ID}


async def test_unsaveable_refresh_keeps_the_new_tokens_in_memory(
    tmp_path: Path, tokens: MockTokenServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_codex(tmp_path)
    before = path.read_bytes()

    def disk_full(path: Path, data: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(auth_sources, "write_json_atomic", disk_full)
    tokens.enqueue(200, chatgpt_answer())
    auth = chatgpt(tmp_path, tokens)
    assert (await auth.headers())["Authorization"] == f"Bearer {NEW_ACCESS}"
    assert (await auth.headers())["Authorization"] == f"Bearer {NEW_ACCESS}"
    assert len(tokens.requests) == 1  # the unchanged old file is not re-read and re-refreshed
    assert path.read_bytes() == before


async def test_token_endpoint_5xx_is_retryable_not_a_login_problem(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    write_codex(tmp_path)
    tokens.enqueue(503, {"error": "unavailable"})
    with pytest.raises(ProviderError) as caught:
        await chatgpt(tmp_path, tokens).headers()
    assert caught.value.kind == "provider"
    assert caught.value.retryable is True


async def test_secrets_include_old_and_new_tokens(tmp_path: Path, tokens: MockTokenServer) -> None:
    write_codex(tmp_path)
    tokens.enqueue(200, chatgpt_answer())
    auth = chatgpt(tmp_path, tokens)
    await auth.headers()
    assert set(auth.secrets) >= {EXPIRED_ACCESS, OLD_REFRESH, OLD_ID, NEW_ACCESS, NEW_REFRESH}
    assert_no_secret(repr(auth), EXPIRED_ACCESS, NEW_ACCESS, NEW_REFRESH)


@pytest.mark.parametrize("content", [None, "{not json", '{"OPENAI_API_KEY": "sk-x"}'])
async def test_missing_or_unusable_file_says_how_to_log_in(
    tmp_path: Path, tokens: MockTokenServer, content: str | None
) -> None:
    if content is not None:
        (tmp_path / "auth.json").write_text(content)
    with pytest.raises(ProviderError) as caught:
        await chatgpt(tmp_path, tokens).headers()
    assert caught.value.kind == "auth"
    assert "codex login" in caught.value.message
    assert str(tmp_path / "auth.json") in caught.value.message
    assert "sk-x" not in caught.value.message


async def test_no_refresh_token_says_how_to_log_in(tmp_path: Path, tokens: MockTokenServer) -> None:
    (tmp_path / "auth.json").write_text(json.dumps({"tokens": {"access_token": EXPIRED_ACCESS}}))
    with pytest.raises(ProviderError) as caught:
        await chatgpt(tmp_path, tokens).headers()
    assert caught.value.kind == "auth"
    assert "codex login" in caught.value.message
    assert tokens.requests == []


async def test_account_id_falls_back_to_the_id_token_claim(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    id_token = fake_jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-from-jwt"}})
    access = jwt_access("valid", NOW + 600)
    tokens_ = {"access_token": access, "refresh_token": OLD_REFRESH, "id_token": id_token}
    (tmp_path / "auth.json").write_text(json.dumps({"tokens": tokens_}))
    headers = await chatgpt(tmp_path, tokens).headers()
    assert headers["ChatGPT-Account-ID"] == "acct-from-jwt"


# -- auth_for / base_url_for -------------------------------------------------------------------


def spec(provider_id: str) -> Any:
    return next(s for s in builtin_providers() if s.id == provider_id)


def test_api_keys_map_to_the_wire_apis_header() -> None:
    key = Credentials(kind="api_key", source="env", secret="sk-test-key")
    openai = auth_for(spec("openai"), key, env={})
    anthropic = auth_for(spec("anthropic"), key, env={})
    assert isinstance(openai, ApiKeyAuth)
    assert isinstance(anthropic, ApiKeyAuth)
    assert asyncio.run(openai.headers()) == {"Authorization": "Bearer sk-test-key"}
    assert asyncio.run(anthropic.headers()) == {"x-api-key": "sk-test-key"}
    none = Credentials(kind="none", source="none needed")
    assert isinstance(auth_for(spec("offline"), none, env={}), NoAuth)


def test_a_chatgpt_login_maps_to_its_source_with_an_overridable_token_url(tmp_path: Path) -> None:
    env = {
        "CODEX_HOME": str(tmp_path / "codex"),
        CHATGPT_TOKEN_URL_ENV: "http://127.0.0.1:1/chatgpt",
    }
    gpt = Credentials(kind="chatgpt", source="~/.codex/auth.json", secret="t")

    from_env = auth_for(spec("openai"), gpt, env=env)
    assert isinstance(from_env, ChatGptAuth)
    assert from_env.path == tmp_path / "codex" / "auth.json"
    assert from_env.token_url == "http://127.0.0.1:1/chatgpt"

    explicit = auth_for(spec("openai"), gpt, env=env, token_urls={"chatgpt": "http://x/t"})
    assert isinstance(explicit, ChatGptAuth)
    assert explicit.token_url == "http://x/t"
    defaults = auth_for(spec("openai"), gpt, env={"CODEX_HOME": str(tmp_path)})
    assert isinstance(defaults, ChatGptAuth)
    assert defaults.token_url == CHATGPT_TOKEN_URL == "https://auth.openai.com/oauth/token"


def test_base_url_is_the_chatgpt_backend_only_for_a_chatgpt_login() -> None:
    gpt = Credentials(kind="chatgpt", source="~/.codex/auth.json", secret="t")
    key = Credentials(kind="api_key", source="env", secret="k")
    assert base_url_for(spec("openai"), gpt) == CHATGPT_BASE_URL
    assert CHATGPT_BASE_URL == "https://chatgpt.com/backend-api/codex"
    assert base_url_for(spec("openai"), key) == "https://api.openai.com/v1"
    assert base_url_for(spec("openai"), None) == "https://api.openai.com/v1"
    assert ChatGptAuth(Path("/nonexistent")).base_url == CHATGPT_BASE_URL


# -- end to end with the Responses provider ----------------------------------------------------


def model_request() -> ModelRequest:
    return ModelRequest(
        model="gpt-5.5",
        instructions="You are Cody.",
        history=[user_message("u1", "hi")],
        tools=[],
        session_id="s1",
    )


async def test_responses_provider_sends_refreshed_chatgpt_credentials(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    write_codex(tmp_path)
    tokens.enqueue(200, chatgpt_answer())
    async with MockResponsesServer() as server:
        server.enqueue(text("hello"))
        provider = OpenAIResponsesProvider(
            provider_id="openai", base_url=server.base_url, auth=chatgpt(tmp_path, tokens)
        )
        try:
            events = [e async for e in provider.stream(model_request())]
        finally:
            await provider.aclose()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hello"]
    [sent] = server.requests
    assert sent.headers["authorization"] == f"Bearer {NEW_ACCESS}"
    assert sent.headers["chatgpt-account-id"] == ACCOUNT
    assert sent.headers["originator"] == "cody"
    assert sent.headers["user-agent"].startswith("cody/")
    assert len(tokens.requests) == 1


async def test_responses_provider_refreshes_a_revoked_chatgpt_token_after_401(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    revoked = jwt_access("revoked", NOW + 600)
    write_codex(tmp_path, access=revoked)
    tokens.enqueue(200, chatgpt_answer())
    async with MockResponsesServer() as server:
        server.enqueue_error(401)
        server.enqueue(text("after refresh"))
        provider = OpenAIResponsesProvider(
            provider_id="openai", base_url=server.base_url, auth=chatgpt(tmp_path, tokens)
        )
        try:
            events = [e async for e in provider.stream(model_request())]
        finally:
            await provider.aclose()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["after refresh"]
    assert [r.headers["authorization"] for r in server.requests] == [
        f"Bearer {revoked}",
        f"Bearer {NEW_ACCESS}",
    ]
    assert len(tokens.requests) == 1


async def test_a_second_401_after_refresh_says_how_to_log_in(
    tmp_path: Path, tokens: MockTokenServer
) -> None:
    write_codex(tmp_path, access=jwt_access("revoked", NOW + 600))
    tokens.enqueue(200, chatgpt_answer())
    async with MockResponsesServer() as server:
        server.enqueue_error(401)
        server.enqueue_error(401)
        provider = OpenAIResponsesProvider(
            provider_id="openai",
            base_url=server.base_url,
            env_key="OPENAI_API_KEY",
            auth=chatgpt(tmp_path, tokens),
        )
        try:
            with pytest.raises(ProviderError) as caught:
                async for _ in provider.stream(model_request()):
                    pass
        finally:
            await provider.aclose()
    assert caught.value.kind == "auth"
    assert caught.value.http_status == 401
    assert "codex login" in caught.value.message
    assert len(server.requests) == 2
    assert len(tokens.requests) == 1
