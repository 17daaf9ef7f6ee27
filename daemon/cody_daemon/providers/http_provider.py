"""What every HTTP provider shares: the client, timeouts, headers, secrets and the call loop.

`HttpProvider` is the base of the Responses, Chat Completions and Messages providers. A
subclass supplies the request body, how auth and config headers are merged (a default is
here), and the translation of one attempt's SSE events into `ModelEvent`s; the loop around
it (auth headers, request, 401 refresh, retries after the first event) lives here.

Invariants:
- a passed-in `httpx.AsyncClient` is never closed; one this provider created is closed by
  `aclose()`;
- auth headers and the secrets scrubbed from errors are read again for every attempt: a
  refresh changes them (config header values are scrubbed too);
- a 401 before the first SSE event makes the `AuthSource` refresh at most once per call; when
  it did, the request is sent again, and a second 401 is reported (`_still_rejected`);
- failures before the first SSE event are retried per `RetryPolicy` (`request_max_retries`)
  by `stream_json_events`; a stream that fails after its first event but before any model
  event was yielded (an in-stream `response.failed` / `error` event, a cut) is retried the
  same way, with `stream_max_retries`: nothing can be duplicated. A request is never sent
  again because it is slow (see `sse`);
- once a model event has been yielded nothing is retried (it would be duplicated): the
  error's message then says the answer was cut off and that what arrived is kept;
- a request the server refused (before its stream started) may be sent again with a
  changed body when the subclass's `_fallback_body` says so (e.g. without reasoning
  summaries for an organisation that may not request them), at most `MAX_FALLBACKS` times
  (each fallback removes something from the body);
- the HTTP response is closed on every exit path (end, error, cancellation, `aclose`).

httpx is imported at the top: import this module only from the provider modules, which the
pool imports when a provider is first used (the daemon starts without httpx).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import aclosing
from dataclasses import replace
from functools import partial
from typing import Any, Required, TypedDict

import httpx
import orjson

from .. import __version__
from .auth import AuthSource
from .base import ModelEvent, ModelRequest, ProviderError
from .retry import RetryPolicy, Sleep
from .sse import StreamSettings, stream_json_events

__all__ = [
    "MAX_FALLBACKS",
    "USER_AGENT",
    "Attempt",
    "HttpOptions",
    "HttpProvider",
    "SseEvents",
    "secret_values",
]

log = logging.getLogger(__name__)

SseEvents = AsyncIterator[tuple[str, dict[str, Any]]]
"""`(event name, JSON object)` per SSE event, as `stream_json_events` yields them."""

USER_AGENT = f"cody/{__version__}"
"""Every request says it comes from Cody (also on a ChatGPT login, with `originator: cody`)."""

MAX_FALLBACKS = 3
"""How many times one call's body may be changed and sent again after a refusal (each
fallback drops one optional parameter the server named)."""

MIN_SECRET_LEN = 8
"""Shorter values are not scrubbed: no credential is that short, and replacing, say, "1"
everywhere would garble the message."""


class HttpOptions(TypedDict, total=False):
    """What every HTTP provider is built from, beyond its own options: one typed object that
    the pool fills from a `ProviderSpec` and each subclass passes on to `HttpProvider`
    (defaults are those of `HttpProvider.__init__`)."""

    provider_id: Required[str]
    base_url: Required[str]
    auth: AuthSource | None
    """None: requests carry no credentials."""
    env_key: str | None
    headers: Mapping[str, str] | None
    max_retries: int
    connect_timeout_s: float
    first_byte_timeout_s: float | None
    stream_idle_timeout_s: float
    client: httpx.AsyncClient | None
    """A client to use (left open by `aclose`); None: the provider makes its own."""
    sleep: Sleep | None
    stream_max_retries: int
    retry_window_s: float
    query_params: Mapping[str, str] | None


class Attempt:
    """One request of a call, as the subclass's `_translate` sees it."""

    __slots__ = ("settings", "started")

    def __init__(self, settings: StreamSettings) -> None:
        self.settings = settings
        """With this attempt's secrets (for the subclass's in-stream errors)."""
        self.started = False
        """Set by `_translate` when the first SSE event arrived."""


class HttpProvider(ABC):
    """A `ModelProvider` over an SSE-streaming HTTP API; see the module invariants."""

    def __init__(
        self,
        *,
        url: str,
        api_name: str,
        provider_id: str,
        base_url: str,
        auth: AuthSource | None = None,
        env_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        max_retries: int = 4,
        connect_timeout_s: float = 10.0,
        first_byte_timeout_s: float | None = None,
        stream_idle_timeout_s: float = 300.0,
        client: httpx.AsyncClient | None = None,
        sleep: Sleep | None = None,
        stream_max_retries: int = 5,
        retry_window_s: float = 60.0,
        query_params: Mapping[str, str] | None = None,
    ) -> None:
        """`url` is where requests go, `api_name` names the API in messages (see
        `StreamSettings`); the rest are the `HttpOptions` every subclass takes: `headers` are
        the configured headers, sent last; `query_params` are added to the URL. The first event may take `first_byte_timeout_s` (default: the
        idle timeout, as Codex's `stream_idle_timeout_ms` covers both)."""
        self._id = provider_id
        self._url = url
        self._query = dict(query_params or {})
        self._auth = auth
        self._env_key = env_key
        self._base_headers = {
            "Accept": "text/event-stream",
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        }
        self._config_headers = dict(headers or {})
        # Configured header and query values could be credentials too: scrubbed like the
        # auth secrets.
        self._header_secrets = secret_values(
            (*self._config_headers.values(), *self._query.values())
        )
        first_event_s = (
            stream_idle_timeout_s if first_byte_timeout_s is None else first_byte_timeout_s
        )
        wait = sleep or asyncio.sleep
        longest_wait = max(60.0, retry_window_s)
        self._settings = StreamSettings(
            provider=provider_id,
            base_url=base_url,
            api_name=api_name,
            env_key=env_key,
            first_byte_timeout_s=first_event_s,
            idle_timeout_s=stream_idle_timeout_s,
            retry=RetryPolicy(
                max_retries=max_retries,
                window_s=retry_window_s,
                max_retry_after_s=longest_wait,
                sleep=wait,
            ),
        )
        self._stream_retry = RetryPolicy(
            max_retries=stream_max_retries,
            window_s=retry_window_s,
            max_retry_after_s=longest_wait,
            sleep=wait,
        )
        # Read timeouts are enforced by `stream_json_events` (first event, then idle).
        self._timeout = httpx.Timeout(
            connect=connect_timeout_s, read=None, write=first_event_s, pool=connect_timeout_s
        )
        self._client = client
        self._owns_client = client is None

    @property
    def id(self) -> str:
        return self._id

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it (a passed-in client is left open)."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- what subclasses define ----------------------------------------------------------

    @abstractmethod
    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for `request`."""

    @abstractmethod
    def _translate(self, events: SseEvents, attempt: Attempt) -> AsyncGenerator[ModelEvent, None]:
        """One attempt's SSE events -> model events, ending after the API's terminal event.

        Must set `attempt.started` on the first event. Errors (in-stream ones included) are
        raised as `ProviderError`; the stream stopping early raises one from `events`.
        """

    def _request_headers(
        self, auth_headers: Mapping[str, str], body: Mapping[str, Any]
    ) -> dict[str, str]:
        """This attempt's headers: defaults < auth < config headers."""
        return {**self._base_headers, **auth_headers, **self._config_headers}

    def _secrets(self, auth_headers: Mapping[str, str]) -> tuple[str, ...]:
        """Everything to scrub from this attempt's error messages: the config header values
        and the auth source's secrets (read now: they change on refresh). `auth_headers` are
        this attempt's auth headers, for a subclass that scrubs their values too."""
        return (*self._header_secrets, *secret_values(self._auth.secrets if self._auth else ()))

    def _fallback_body(
        self, error: ProviderError, body: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """A changed body to send once more after the server refused `body` before its stream
        started, or None to report `error`. None here: nothing to fall back to."""
        return None

    def _still_rejected(self, error: ProviderError) -> ProviderError:
        """A 401 right after a successful refresh: say how to log in again when the auth
        source knows (OAuth logins have a `login_hint`), else keep the API-key advice."""
        hint = getattr(self._auth, "login_hint", None)
        if isinstance(hint, str):
            error.message = (
                f"'{self._id}' rejected the login even after renewing it (HTTP 401). {hint}"
            )
        return error

    # -- the call ------------------------------------------------------------------------

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream one model call; see the module invariants for what is retried."""
        body = self.request_body(request)
        client = self._http()
        refreshed = False
        fallbacks = 0
        failures = 0
        while True:
            payload = orjson.dumps(body)
            auth_headers = await self._auth.headers() if self._auth is not None else {}
            headers = self._request_headers(auth_headers, body)
            attempt = Attempt(replace(self._settings, secrets=self._secrets(auth_headers)))
            build = partial(
                client.build_request,
                "POST",
                self._url,
                params=self._query or None,
                content=payload,
                headers=headers,
                timeout=self._timeout,
            )
            yielded = False
            try:
                async with (
                    aclosing(stream_json_events(client, build, attempt.settings)) as sse,
                    aclosing(self._translate(sse, attempt)) as events,
                ):
                    async for event in events:
                        yielded = True
                        yield event
                return
            except ProviderError as error:
                if yielded:
                    raise _after_output(error) from None
                if not attempt.started:
                    if error.http_status == 401 and self._auth is not None:
                        if refreshed:
                            raise self._still_rejected(error) from None
                        if not await self._auth.refresh():
                            raise
                        refreshed = True
                        log.info("%s: credentials refreshed after HTTP 401; retrying", self._id)
                        continue
                    fallback = (
                        self._fallback_body(error, body) if fallbacks < MAX_FALLBACKS else None
                    )
                    if fallback is None:
                        raise  # `stream_json_events` already retried what it could
                    fallbacks += 1
                    body = fallback
                    continue
                failures += 1
                delay = self._stream_retry.delay_before_retry(failures, error)
                if delay is None:
                    raise
                log.warning(
                    "%s: stream failed before any output (%s); retry %d in %.2f s",
                    self._id,
                    error.kind,
                    failures,
                    delay,
                )
                await self._stream_retry.sleep(delay)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, verify=tls_trust(self._url))
        return self._client


def tls_trust(url: str) -> ssl.SSLContext | bool:
    """What the provider's HTTP client trusts for TLS.

    True (httpx's default: the CA bundle, or `SSL_CERT_FILE`/`SSL_CERT_DIR`) unless every
    request goes to a plain `http://` URL (a local model server) and no proxy is set in the
    environment: then TLS is never spoken, and loading the CA bundle (~30 ms at the first
    model call) is skipped. The client then gets a context that checks certificates and host
    names but trusts no certificate at all, so a TLS connection it should never make fails
    closed. (Provider requests do not follow redirects.)"""
    if not url.startswith("http://") or urllib.request.getproxies():
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _after_output(error: ProviderError) -> ProviderError:
    """`error` raised after part of the answer was streamed: say so, and that it is kept."""
    detail = error.message.rstrip()
    return replace(
        error,
        retryable=False,
        message=(
            f"The answer from '{error.provider}' was cut off after part of it arrived; what "
            f"arrived is kept in the session. Send another prompt to continue. ({detail})"
        ),
    )


def secret_values(values: Iterable[str]) -> tuple[str, ...]:
    """The strings in `values` long enough to be scrubbed (see `MIN_SECRET_LEN`)."""
    return tuple(v for v in values if v and len(v) >= MIN_SECRET_LEN)
