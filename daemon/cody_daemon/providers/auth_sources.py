"""Which `AuthSource` a provider gets, and the shared machinery of the OAuth login files.

`auth_for(spec, credentials, env=...)` maps a credential kind to a source:
`api_key` -> `ApiKeyAuth` (`Authorization: Bearer <key>` for `responses`/`chat`, `x-api-key: <key>`
without a scheme for `anthropic`), `chatgpt` -> `ChatGptAuth` (Codex CLI login),
`none` -> `NoAuth`. (A Claude subscription login is never used here: only Claude Code itself may
use it, so it is reached through the `claude` session backend, see backends/claude_code.py.)
`base_url_for(spec, credentials)` is the ChatGPT backend for a ChatGPT login, else `spec.base_url`.

Environment variables (both optional; for tests, proxies and users whose network needs another
endpoint; a refresh token is sent there, so only the user's own environment can set them):
- `CODY_CHATGPT_TOKEN_URL`: the OAuth token endpoint used to refresh a ChatGPT login
  (default `https://auth.openai.com/oauth/token`, as in the Codex CLI);
- `CODY_CHATGPT_BASE_URL`: where a ChatGPT login's model requests go (default the ChatGPT
  Codex backend, `https://chatgpt.com/backend-api/codex`);
An explicit `token_urls` argument (key `chatgpt`) wins over both.

`OAuthFileAuth` invariants (of `ChatGptAuth`, and of any other login-file source):
- the login file is read lazily, and again whenever its mtime/size changes (a `codex login` or
  `/login` made while the daemon runs is picked up), and always right before a refresh;
- refreshing is serialized by one `asyncio.Lock` per source: concurrent callers that find the
  token expired, or that all got a 401, cause exactly one POST to the token endpoint;
- a refreshed file is written atomically (core/atomic_write.py: readers see the old or the
  whole new file, no temp file is left behind) with the file's previous permission bits and
  owner, and every field other than the tokens (and their timestamps) is kept, including
  fields this code does not know;
- a missing/unreadable file or a failed refresh raises `ProviderError(kind="auth")` whose
  message says how to log in again (5xx/transport failures of the token endpoint are
  retryable `provider`/`network` errors instead); no token ever appears in a message, repr or
  log line, and `secrets` lists every token this source has seen (old ones included).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import httpx

from .. import __version__
from ..core.atomic_write import replace_file
from ..core.safe_read import JSON_FILE_LIMIT, read_regular
from .auth import ApiKeyAuth, AuthSource, NoAuth
from .base import ProviderError
from .catalog import default_codex_home
from .specs import Credentials, ProviderSpec

__all__ = [
    "CHATGPT_TOKEN_URL_ENV",
    "OAuthFileAuth",
    "TokenState",
    "auth_for",
    "base_url_for",
    "write_json_atomic",
]

log = logging.getLogger(__name__)

CHATGPT_TOKEN_URL_ENV: Final = "CODY_CHATGPT_TOKEN_URL"
CHATGPT_BASE_URL_ENV: Final = "CODY_CHATGPT_BASE_URL"
EXPIRY_SKEW_S: Final = 60.0
"""A token expiring within this many seconds counts as expired."""
_RECENT_REFRESH_S: Final = 10.0
"""A 401 arriving this soon after a refresh is answered with the refreshed token (no new POST):
it was almost certainly sent with the old token, and a seconds-old token will not improve."""
_TOKEN_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
_SAFE_CODE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


# -- the factory -------------------------------------------------------------------------------


def auth_for(
    spec: ProviderSpec,
    credentials: Credentials,
    *,
    env: Mapping[str, str],
    token_urls: Mapping[str, str] | None = None,
    codex_home: Path | None = None,
) -> AuthSource:
    """The auth source for `spec` with `credentials` (see the module docstring).

    The login directory defaults to the one the catalog reads (`$CODEX_HOME` or `~/.codex`,
    taken from `env`).
    """
    kind = credentials.kind
    if kind == "none":
        return NoAuth()
    if kind == "api_key":
        if not credentials.secret:
            return NoAuth()
        if spec.wire_api == "anthropic":
            return ApiKeyAuth(credentials.secret, header="x-api-key", scheme=None)
        return ApiKeyAuth(credentials.secret)
    urls = token_urls or {}
    from .oauth_chatgpt import CHATGPT_TOKEN_URL, ChatGptAuth

    return ChatGptAuth(
        codex_home or default_codex_home(env),
        token_url=urls.get("chatgpt") or env.get(CHATGPT_TOKEN_URL_ENV) or CHATGPT_TOKEN_URL,
        provider_id=spec.id,
        api_key_env=spec.env_key,
    )


def base_url_for(
    spec: ProviderSpec, credentials: Credentials | None, env: Mapping[str, str] | None = None
) -> str:
    """Where requests go: the ChatGPT backend for a ChatGPT login (`CODY_CHATGPT_BASE_URL`
    overrides it), else `spec.base_url` (`""` for the offline provider, which has none)."""
    if credentials is not None and credentials.kind == "chatgpt":
        from .oauth_chatgpt import CHATGPT_BASE_URL

        return (env or {}).get(CHATGPT_BASE_URL_ENV, "").strip() or CHATGPT_BASE_URL
    return spec.base_url or ""


# -- shared OAuth machinery ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenState:
    """What a login file says; every string field except `account_id` is a secret."""

    access: str
    refresh: str | None
    expires_at: float | None
    """Epoch seconds; None when unknown (then only a 401 triggers a refresh)."""
    account_id: str | None = None
    other_secrets: tuple[str, ...] = ()
    """Further tokens in the file (e.g. the ChatGPT `id_token`)."""


class OAuthFileAuth(ABC):
    """An OAuth login kept in a JSON file owned by another CLI; see the module invariants."""

    def __init__(
        self,
        path: Path,
        *,
        provider_id: str,
        token_url: str,
        client_id: str,
        http: httpx.AsyncClient | None,
        now: Callable[[], float],
    ) -> None:
        self.path = path
        self.provider_id = provider_id
        self.token_url = token_url
        self.client_id = client_id
        self._http = http
        self._now = now
        self._lock = asyncio.Lock()
        self._state: TokenState | None = None
        self._stamp: tuple[int, int] | None = None
        self._seen: dict[str, None] = {}
        self._refreshed_at: float | None = None  # time.monotonic() of the last refresh

    # -- what subclasses define ----------------------------------------------------------

    what: str = "login"
    """For messages, e.g. "ChatGPT login"."""

    @property
    @abstractmethod
    def login_hint(self) -> str:
        """One sentence: how to log in again (or use an API key instead)."""

    @abstractmethod
    def parse(self, data: dict[str, Any]) -> TokenState:
        """The tokens in the file's JSON object; raise `ValueError(reason)` when absent."""

    @abstractmethod
    def refresh_body(self, refresh_token: str) -> dict[str, Any]:
        """The JSON body of the refresh-token grant."""

    @abstractmethod
    def apply(self, data: dict[str, Any], answer: dict[str, Any], now: float) -> None:
        """Merge the token endpoint's `answer` into the file's JSON object, in place."""

    @abstractmethod
    def auth_headers(self, state: TokenState) -> dict[str, str]:
        """The request headers for `state`."""

    # -- AuthSource ------------------------------------------------------------------------

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self._seen)

    async def headers(self) -> dict[str, str]:
        async with self._lock:
            state = self._load(force=False)
            if self._expired(state):
                state = await self._refresh_locked(state)
            return self.auth_headers(state)

    async def refresh(self) -> bool:
        """After a 401: get a new access token; True when there is one to retry with.

        Raises `ProviderError` when refreshing fails (its message says how to log in again).
        """
        asked = time.monotonic()
        async with self._lock:
            if self._refreshed_at is not None and self._refreshed_at >= asked - _RECENT_REFRESH_S:
                return True  # another caller refreshed meanwhile (or just before)
            before = self._state.access if self._state is not None else None
            state = self._load(force=True)
            if before is not None and state.access != before and not self._expired(state):
                return True  # the other CLI refreshed the file meanwhile: use its token
            await self._refresh_locked(state)
            return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(path={_display(self.path)!r}, token_url={self.token_url!r})"

    # -- internals -------------------------------------------------------------------------

    @property
    def display_path(self) -> str:
        return _display(self.path)

    def _expired(self, state: TokenState) -> bool:
        return state.expires_at is not None and state.expires_at - self._now() <= EXPIRY_SKEW_S

    def _load(self, *, force: bool) -> TokenState:
        try:
            info = self.path.stat()
        except OSError as exc:
            raise self._missing(_os_reason(exc)) from None
        stamp = (info.st_mtime_ns, info.st_size)
        if not force and self._state is not None and stamp == self._stamp:
            return self._state
        try:
            state = self.parse(self._read())
        except ValueError as problem:
            raise self._missing(str(problem)) from None
        self._remember(state, stamp)
        return state

    def _read(self) -> dict[str, Any]:
        """The file's JSON object; `ValueError(reason)` when it is missing or unusable."""
        try:
            data = json.loads(read_regular(self.path, JSON_FILE_LIMIT))
        except OSError as exc:
            raise ValueError(_os_reason(exc)) from None
        except ValueError:
            raise ValueError("it is not valid JSON") from None
        if not isinstance(data, dict):
            raise ValueError("it is not a JSON object")
        return data

    def _remember(self, state: TokenState, stamp: tuple[int, int] | None) -> None:
        self._state = state
        self._stamp = stamp
        for secret in (state.access, state.refresh, *state.other_secrets, state.account_id):
            if secret:
                self._seen[secret] = None

    async def _refresh_locked(self, state: TokenState) -> TokenState:
        if not state.refresh:
            raise self._auth_error(
                f"The {self.what} in {self.display_path} has no refresh token, so it cannot be "
                f"renewed. {self.login_hint}"
            )
        answer = await self._post(self.refresh_body(state.refresh))
        try:
            data = self._read()  # the freshest copy: keep what the other CLI wrote meanwhile
        except ValueError:
            data = {}
        self.apply(data, answer, self._now())
        new_state = self.parse(data)
        if self._expired(new_state):  # no usable expiry in the answer: rely on 401s from now on
            new_state = replace(new_state, expires_at=None)
        try:
            write_json_atomic(self.path, data)
        except OSError as exc:
            # The new tokens stay in use from memory (the unchanged file is not re-read while
            # it stays unchanged); the old refresh token in it may be spent.
            log.warning(
                "%s: could not save the refreshed %s to %s (%s)",
                self.provider_id,
                self.what,
                self.display_path,
                exc.strerror or type(exc).__name__,
            )
        try:
            info = self.path.stat()
            stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        self._remember(new_state, stamp)
        self._refreshed_at = time.monotonic()
        log.info("%s: refreshed the %s in %s", self.provider_id, self.what, self.display_path)
        return new_state

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Accept": "application/json", "User-Agent": f"cody/{__version__}"}
        try:
            if self._http is None:
                async with httpx.AsyncClient(timeout=_TOKEN_TIMEOUT) as client:
                    response = await client.post(self.token_url, json=body, headers=headers)
            else:
                response = await self._http.post(
                    self.token_url, json=body, headers=headers, timeout=_TOKEN_TIMEOUT
                )
        except httpx.HTTPError as exc:
            raise ProviderError(
                kind="network",
                provider=self.provider_id,
                retryable=True,
                message=(
                    f"Could not reach the token endpoint to renew the {self.what} "
                    f"({type(exc).__name__}). Check the network connection and retry."
                ),
            ) from None
        answer = _json_object(response.content)
        status = response.status_code
        if status >= 500:
            raise ProviderError(
                kind="provider",
                provider=self.provider_id,
                retryable=True,
                http_status=status,
                message=(
                    f"The token endpoint had a server-side problem while renewing the {self.what} "
                    f"(HTTP {status}); this is usually temporary. Retry in a moment."
                ),
            )
        if status >= 400 or answer is None or not isinstance(answer.get("access_token"), str):
            said = f"HTTP {status}"
            code = _error_code(answer)
            if code:
                said += f": {code}"
            raise self._auth_error(
                f"The {self.what} in {self.display_path} has expired and could not be renewed "
                f"(the token endpoint answered {said}). {self.login_hint}",
                http_status=status if status >= 400 else None,
            )
        return answer

    def _missing(self, reason: str) -> ProviderError:
        return self._auth_error(
            f"No usable {self.what} in {self.display_path}: {reason}. {self.login_hint}"
        )

    def _auth_error(self, message: str, http_status: int | None = None) -> ProviderError:
        return ProviderError(
            kind="auth", provider=self.provider_id, message=message, http_status=http_status
        )


# -- helpers ---------------------------------------------------------------------------------


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace `path` with `data` as JSON, atomically (core/atomic_write.py), keeping its
    permission bits and owner (0600 when it does not exist yet)."""
    payload = json.dumps(data, indent=2).encode() + b"\n"
    replace_file(path, payload, new_file_mode=0o600)


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _error_code(answer: dict[str, Any] | None) -> str | None:
    """An OAuth error code (`invalid_grant`, `refresh_token_expired`...) when it looks like an
    identifier; free text from the server is never shown (it could echo a token)."""
    if answer is None:
        return None
    error = answer.get("error")
    code = error.get("code") if isinstance(error, dict) else error
    if code is None:
        code = answer.get("code")
    return code if isinstance(code, str) and _SAFE_CODE.match(code) else None


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "it does not exist"
    return f"it cannot be read ({exc.strerror or type(exc).__name__})"


def _display(path: Path) -> str:
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)
