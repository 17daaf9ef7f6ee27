"""Claude Code's login (`$CLAUDE_CONFIG_DIR/.credentials.json`) as an `AuthSource`, with refresh.

The file holds `{"claudeAiOauth": {"accessToken", "refreshToken", "expiresAt" (epoch ms),
"scopes", "subscriptionType", ...}, ...}`. Claude Code is not open source; what it sends was
confirmed from public code that reuses its login (read for this):
- refresh: `POST <token endpoint>` with the JSON body `{grant_type: "refresh_token",
  refresh_token, client_id: "9d1c250a-e61b-44d9-88ed-5944d1962f5e"}`; the answer carries
  `access_token`, `refresh_token` and `expires_in` (seconds) (github.com/sst/opencode-anthropic-auth
  `index.mjs`, and several other clients of the same endpoint);
- endpoint: `https://platform.claude.com/v1/oauth/token`; older references use
  `https://console.anthropic.com/v1/oauth/token`, which newer clients report as moved (override
  with `CODY_CLAUDE_TOKEN_URL`, see `auth_sources`);
- requests carry `Authorization: Bearer <accessToken>` and `anthropic-beta: oauth-2025-04-20`
  (and no `x-api-key`); the Anthropic provider must merge that beta value with any others it
  sends (comma-separated) rather than overwrite it.

Decisions where the sources are silent: `expiresAt` is read as milliseconds (within 60 s counts
as expired); after a refresh `expiresAt` becomes now + `expires_in` (when the answer lacks it, the
file keeps its value and the token is treated as of unknown expiry: only a 401 renews it), and
`scopes`, `subscriptionType` and every other field are left as they were. See `auth_sources`
for the shared invariants.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import httpx

from .auth_sources import OAuthFileAuth, TokenState

__all__ = ["CLAUDE_CLIENT_ID", "CLAUDE_OAUTH_BETA", "CLAUDE_TOKEN_URL", "ClaudeOAuth"]

CLAUDE_TOKEN_URL: Final = "https://platform.claude.com/v1/oauth/token"
CLAUDE_CLIENT_ID: Final = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
"""Claude Code's public OAuth client id."""
CLAUDE_OAUTH_BETA: Final = "oauth-2025-04-20"
_SECTION: Final = "claudeAiOauth"


class ClaudeOAuth(OAuthFileAuth):
    """`Authorization: Bearer` and `anthropic-beta: oauth-2025-04-20` from a Claude Code login."""

    what = "Claude login"

    def __init__(
        self,
        claude_dir: Path,
        *,
        token_url: str = CLAUDE_TOKEN_URL,
        client_id: str = CLAUDE_CLIENT_ID,
        http: httpx.AsyncClient | None = None,
        now: Callable[[], float] = time.time,
        provider_id: str = "anthropic",
        api_key_env: str | None = "ANTHROPIC_API_KEY",
    ) -> None:
        super().__init__(
            claude_dir / ".credentials.json",
            provider_id=provider_id,
            token_url=token_url,
            client_id=client_id,
            http=http,
            now=now,
        )
        self._api_key_env = api_key_env

    @property
    def login_hint(self) -> str:
        hint = "Log in again with Claude Code (run `claude`, then `/login`)"
        if self._api_key_env:
            hint += f", or set {self._api_key_env} to use an API key instead"
        return hint + "."

    def parse(self, data: dict[str, Any]) -> TokenState:
        oauth = data.get(_SECTION)
        access = oauth.get("accessToken") if isinstance(oauth, dict) else None
        if not isinstance(oauth, dict) or not isinstance(access, str) or not access:
            raise ValueError("it holds no Claude login (claudeAiOauth.accessToken)")
        refresh = oauth.get("refreshToken")
        expires = oauth.get("expiresAt")
        return TokenState(
            access=access,
            refresh=refresh if isinstance(refresh, str) and refresh else None,
            expires_at=(
                expires / 1000
                if isinstance(expires, int | float) and not isinstance(expires, bool)
                else None
            ),
        )

    def refresh_body(self, refresh_token: str) -> dict[str, Any]:
        return {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": self.client_id,
        }

    def apply(self, data: dict[str, Any], answer: dict[str, Any], now: float) -> None:
        oauth = data.get(_SECTION)
        if not isinstance(oauth, dict):
            oauth = data[_SECTION] = {}
        oauth["accessToken"] = answer["access_token"]
        refresh = answer.get("refresh_token")
        if isinstance(refresh, str) and refresh:
            oauth["refreshToken"] = refresh
        lifetime = answer.get("expires_in")
        if isinstance(lifetime, int | float) and not isinstance(lifetime, bool):
            oauth["expiresAt"] = int((now + lifetime) * 1000)

    def auth_headers(self, state: TokenState) -> dict[str, str]:
        return {"Authorization": f"Bearer {state.access}", "anthropic-beta": CLAUDE_OAUTH_BETA}
