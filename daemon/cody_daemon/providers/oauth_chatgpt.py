"""The Codex CLI's ChatGPT login (`$CODEX_HOME/auth.json`) as an `AuthSource`, with refresh.

What the Codex CLI does, and this module mirrors (sources read for this, github.com/openai/codex):
- `codex-rs/core/src/auth.rs`: refresh = `POST https://auth.openai.com/oauth/token` with the
  JSON body `{client_id: "app_EMoamEEZ73f0CkXaXp7hrann", grant_type: "refresh_token",
  refresh_token, scope: "openid profile email"}`; the answer's optional `id_token`,
  `access_token` and `refresh_token` replace the stored ones and `last_refresh` is set to now;
  every other field of `auth.json` is kept. A 401 from the model API triggers one refresh and
  one retry (`handle_unauthorized`); refresh tokens are single-use (`refresh_token_reused`), so
  the file is re-read right before refreshing in case the Codex CLI already did.
- `codex-rs/core/src/model_provider_info.rs`: with a ChatGPT login the base URL is
  `https://chatgpt.com/backend-api/codex` (Responses wire format, `POST {base}/responses`),
  not `https://api.openai.com/v1`.
- `codex-rs/codex-api/src/auth.rs`: requests carry `Authorization: Bearer <access_token>` and
  `ChatGPT-Account-ID: <account_id>`; `codex-rs/core/src/default_client.rs`: every request also
  carries an `originator` header naming the client (Codex sends `codex_cli_rs`/`codex_exec`,
  see tests/fixtures/providers/responses_requests_from_codex.jsonl). Cody says who it is:
  `originator: cody` and `User-Agent: cody/<version>`.
- The ChatGPT backend answers 400 `{"detail": "Instructions are required"}` to a request
  without a top-level `instructions` field even when the prompt is a developer message in
  `input` (reported 2026-05 and 2026-06: github.com/PwnKit-Labs/pwnkit/pull/330,
  github.com/EasyMetaAu/helm-api/pull/311; read 2026-11-22), while Codex 0.169 on an API key
  sends none. Cody always sends `instructions`, which both accept; the backend no longer
  insists on Codex's own prompt ("Instructions are not valid", openai/codex#3376, 2025).

Decisions where the sources are silent: expiry comes from the access token's JWT `exp` claim
(read without verifying the signature; within 60 s counts as expired); when the token has no
readable `exp`, the Codex rule applies (refresh when `last_refresh` is over 8 days old). See `auth_sources`
for the shared invariants.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import httpx

from .auth_sources import OAuthFileAuth, TokenState

__all__ = [
    "CHATGPT_BASE_URL",
    "CHATGPT_TOKEN_URL",
    "CODEX_CLIENT_ID",
    "CODY_ORIGINATOR",
    "ChatGptAuth",
    "jwt_claims",
]

CHATGPT_BASE_URL: Final = "https://chatgpt.com/backend-api/codex"
CHATGPT_TOKEN_URL: Final = "https://auth.openai.com/oauth/token"
CODEX_CLIENT_ID: Final = "app_EMoamEEZ73f0CkXaXp7hrann"
"""The Codex CLI's public OAuth client id (`CLIENT_ID` in codex-rs/core/src/auth.rs)."""
CODY_ORIGINATOR: Final = "cody"
"""The `originator` header on ChatGPT-login requests: Cody names itself (not `codex_cli_rs`)."""
_REFRESH_SCOPE: Final = "openid profile email"
_CODEX_REFRESH_INTERVAL_S: Final = 8 * 24 * 3600.0  # TOKEN_REFRESH_INTERVAL (8 days)
_AUTH_CLAIM: Final = "https://api.openai.com/auth"


class ChatGptAuth(OAuthFileAuth):
    """`Authorization: Bearer`, `ChatGPT-Account-ID` and `originator` from a Codex CLI login."""

    what = "ChatGPT login"

    def __init__(
        self,
        codex_home: Path,
        *,
        token_url: str = CHATGPT_TOKEN_URL,
        client_id: str = CODEX_CLIENT_ID,
        http: httpx.AsyncClient | None = None,
        now: Callable[[], float] = time.time,
        provider_id: str = "openai",
        api_key_env: str | None = "OPENAI_API_KEY",
        originator: str = CODY_ORIGINATOR,
    ) -> None:
        super().__init__(
            codex_home / "auth.json",
            provider_id=provider_id,
            token_url=token_url,
            client_id=client_id,
            http=http,
            now=now,
        )
        self._api_key_env = api_key_env
        self._originator = originator

    @property
    def base_url(self) -> str:
        """Where requests made with this login go (the ChatGPT backend, Responses format)."""
        return CHATGPT_BASE_URL

    @property
    def login_hint(self) -> str:
        hint = "Log in again with the Codex CLI (`codex login`)"
        if self._api_key_env:
            hint += f", or set {self._api_key_env} to use an API key instead"
        return hint + "."

    def parse(self, data: dict[str, Any]) -> TokenState:
        tokens = data.get("tokens")
        access = tokens.get("access_token") if isinstance(tokens, dict) else None
        if not isinstance(tokens, dict) or not isinstance(access, str) or not access:
            raise ValueError("it holds no ChatGPT tokens")
        id_token = _str(tokens.get("id_token"))
        claims = jwt_claims(access)
        expires_at = _number(claims.get("exp")) if claims else None
        if expires_at is None:
            last = _parse_time(data.get("last_refresh"))
            expires_at = last + _CODEX_REFRESH_INTERVAL_S if last is not None else None
        return TokenState(
            access=access,
            refresh=_str(tokens.get("refresh_token")),
            expires_at=expires_at,
            account_id=_str(tokens.get("account_id")) or _account_from(id_token, access),
            other_secrets=(id_token,) if id_token else (),
        )

    def refresh_body(self, refresh_token: str) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "scope": _REFRESH_SCOPE,
        }

    def apply(self, data: dict[str, Any], answer: dict[str, Any], now: float) -> None:
        tokens = data.get("tokens")
        if not isinstance(tokens, dict):
            tokens = data["tokens"] = {}
        for key in ("id_token", "access_token", "refresh_token"):
            value = answer.get(key)
            if isinstance(value, str) and value:
                tokens[key] = value
        stamp = datetime.fromtimestamp(now, tz=UTC).isoformat().replace("+00:00", "Z")
        data["last_refresh"] = stamp

    def auth_headers(self, state: TokenState) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {state.access}", "originator": self._originator}
        if state.account_id:
            headers["ChatGPT-Account-ID"] = state.account_id
        return headers


def jwt_claims(token: str) -> dict[str, Any] | None:
    """The payload of a JWT, decoded WITHOUT verifying the signature (only to read `exp` and
    ids of our own token); None when `token` is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        data = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, binascii.Error):
        return None
    return data if isinstance(data, dict) else None


def _account_from(*tokens: str | None) -> str | None:
    """`chatgpt_account_id` from the id/access token claims (older files lack `account_id`)."""
    for token in tokens:
        claims = jwt_claims(token) if token else None
        auth = claims.get(_AUTH_CLAIM) if claims else None
        account = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
        if isinstance(account, str) and account:
            return account
    return None


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
