"""Streaming JSON-over-SSE calls for every HTTP provider: timeouts, retries, truncation.

`stream_json_events` sends one request and yields `(event_name, data)` for each SSE event
(parsed with httpx-sse, data decoded as a JSON object). The caller translates the events and
simply stops iterating after its API's terminal event (`aclosing` closes the response).

Invariants:
- failures before the first event (connect errors, resets, HTTP errors) are retried per
  `RetryPolicy`, since nothing has been yielded yet; after the first event nothing is retried
  here. A connection refused by a loopback address is not retried: nothing is listening
  there (a local model server that was not started), and waiting a minute will not start it;
- a request that was sent on a live connection is never sent again because it is slow: the
  first event may take up to `first_byte_timeout_s` (the provider's `stream_idle_timeout_ms`,
  300 s by default: a reasoning model may think for minutes before its first byte); after
  that the stream is abandoned with a `network` error that is not retryable (a second request
  would be billed a second time);
- the stream ending (or the connection dropping) while the caller is still iterating raises
  a retryable `network` ProviderError: a response is never silently truncated;
- waiting longer than `idle_timeout_s` for the next event raises a `network` ProviderError
  naming `model_providers.<id>.stream_idle_timeout_ms` (not retryable either); time the
  consumer spends between events never counts;
- the HTTP response is closed on every exit path (end, error, cancellation, `aclose`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from httpx_sse import EventSource, ServerSentEvent

from .base import ProviderError
from .http_errors import classify_http_error, network_error, safe_url
from .retry import RetryPolicy

__all__ = ["StreamSettings", "stream_json_events"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamSettings:
    """How one provider's streaming calls are run and how their failures are worded."""

    provider: str
    base_url: str
    api_name: str
    """For messages, e.g. "the Responses API"."""
    env_key: str | None = None
    secrets: tuple[str, ...] = ()
    """Strings scrubbed from every error message (API keys, auth header values)."""
    first_byte_timeout_s: float = 300.0
    """Response headers and the first event must arrive within this (after connecting)."""
    idle_timeout_s: float = 300.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)


class _BeforeFirstEvent(Exception):
    def __init__(self, error: ProviderError) -> None:
        super().__init__(error.message)
        self.error = error


async def stream_json_events(
    client: httpx.AsyncClient,
    build_request: Callable[[], httpx.Request],
    settings: StreamSettings,
) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
    """Yield `(event name, JSON object)` per SSE event; see the module invariants."""
    failures = 0
    while True:
        attempt = _attempt(client, build_request(), settings)
        try:
            async for event in attempt:
                yield event
            return
        except _BeforeFirstEvent as failed:
            error = failed.error
        finally:
            await attempt.aclose()
        failures += 1
        delay = settings.retry.delay_before_retry(failures, error)
        if delay is None:
            raise error
        log.warning(
            "%s: attempt %d failed (%s); retrying in %.2f s",
            settings.provider,
            failures,
            error.kind if error.http_status is None else f"{error.kind}, HTTP {error.http_status}",
            delay,
        )
        await settings.retry.sleep(delay)


async def _attempt(
    client: httpx.AsyncClient, request: httpx.Request, settings: StreamSettings
) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
    loop = asyncio.get_running_loop()
    response: httpx.Response | None = None
    events: AsyncGenerator[ServerSentEvent, None] | None = None
    try:
        try:
            async with asyncio.timeout(settings.first_byte_timeout_s):
                response = await client.send(request, stream=True)
                if response.status_code >= 400:
                    raise _BeforeFirstEvent(await _http_error(response, settings))
                _check_content_type(response, settings)
                events = EventSource(response).aiter_sse()
                sse = await anext(events)
        except TimeoutError:
            raise _first_event_timeout(settings) from None
        except StopAsyncIteration:
            raise _BeforeFirstEvent(_empty_stream(settings)) from None
        except httpx.UnsupportedProtocol:
            raise _bad_url(settings) from None
        except httpx.ConnectError as exc:
            if _refused(exc) and _is_loopback(request.url.host):
                raise _nothing_listening(settings) from None
            raise _BeforeFirstEvent(_network(settings, _describe(exc))) from None
        except httpx.TransportError as exc:
            raise _BeforeFirstEvent(_network(settings, _describe(exc))) from None

        watchdog = _IdleWatchdog(loop, settings.idle_timeout_s)
        try:
            while True:
                yield sse.event, _decode(sse, settings.provider)
                watchdog.waiting_since = loop.time()
                try:
                    sse = await anext(events)
                except StopAsyncIteration:
                    raise _cut_off(settings, "the server ended the stream early") from None
                except httpx.TransportError as exc:
                    raise _cut_off(settings, _describe(exc)) from None
                except asyncio.CancelledError:
                    if watchdog.fired and watchdog.task.uncancel() == 0:
                        raise _idle_timeout(settings) from None
                    raise
                watchdog.waiting_since = None
        finally:
            watchdog.close()
    finally:
        if events is not None:
            await events.aclose()
        if response is not None:
            await response.aclose()


class _IdleWatchdog:
    """Cancels the consuming task once it has waited `timeout_s` for the next event.

    Cheaper than an `asyncio.timeout` per event: the hot path only stores a timestamp and
    the timer fires at most about once per `timeout_s`. While the generator is suspended
    at `yield` (`waiting_since is None`) it never fires.
    """

    __slots__ = ("_handle", "_loop", "_timeout_s", "fired", "task", "waiting_since")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        task = asyncio.current_task()
        assert task is not None, "streams are consumed inside a task"
        self.task = task
        self._loop = loop
        self._timeout_s = timeout_s
        self.waiting_since: float | None = None
        self.fired = False
        self._handle: asyncio.TimerHandle | None = loop.call_later(timeout_s, self._check)

    def _check(self) -> None:
        since = self.waiting_since
        now = self._loop.time()
        if since is not None and now - since >= self._timeout_s:
            self.fired = True
            self._handle = None
            self.task.cancel()
            return
        self._handle = self._loop.call_at((since or now) + self._timeout_s, self._check)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def _decode(sse: ServerSentEvent, provider: str) -> dict[str, Any]:
    if sse.data == "[DONE]":  # Chat Completions' end marker; callers see it as event "done"
        return {"type": "done"}
    try:
        data = orjson.loads(sse.data)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise ProviderError(
            kind="provider",
            provider=provider,
            message=f"'{provider}' sent a malformed stream event ({sse.event or 'unnamed'}).",
        )
    return data


async def _http_error(response: httpx.Response, settings: StreamSettings) -> ProviderError:
    try:
        body: bytes | None = await response.aread()
    except httpx.HTTPError:
        body = None
    return classify_http_error(
        provider=settings.provider,
        status=response.status_code,
        body=body,
        headers=response.headers,
        env_key=settings.env_key,
        secrets=settings.secrets,
    )


def _check_content_type(response: httpx.Response, settings: StreamSettings) -> None:
    ctype = response.headers.get("content-type", "").partition(";")[0].strip()
    if ctype != "text/event-stream":
        name = settings.provider
        raise ProviderError(
            kind="provider",
            provider=name,
            http_status=response.status_code,
            message=(
                f"'{name}' answered with {ctype or 'no content type'} instead of an event "
                f"stream. Check `model_providers.{name}.base_url` (now "
                f"{safe_url(settings.base_url)}): it must point at a server that implements "
                f"{settings.api_name}."
            ),
        )


def _describe(exc: httpx.TransportError) -> str:
    """Words for a transport failure; httpx exception texts carry no request data."""
    if isinstance(exc, httpx.ConnectTimeout):
        return "connecting timed out"
    if isinstance(exc, httpx.TimeoutException):
        return "the connection timed out"
    if isinstance(exc, httpx.ConnectError):
        return f"could not connect ({exc})" if str(exc) else "could not connect"
    return f"the connection failed ({exc})" if str(exc) else "the connection failed"


def _bad_url(settings: StreamSettings) -> ProviderError:
    return ProviderError(
        kind="provider",
        provider=settings.provider,
        message=(
            f"`model_providers.{settings.provider}.base_url` ({safe_url(settings.base_url)}) "
            "is not an http:// or https:// URL."
        ),
    )


def _network(settings: StreamSettings, what: str) -> ProviderError:
    return network_error(provider=settings.provider, base_url=settings.base_url, what=what)


def _refused(exc: BaseException) -> bool:
    """The connection was refused (ECONNREFUSED), looking through httpx's wrapping."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "Connection refused" in str(exc) or "Errno 111" in str(exc)


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _nothing_listening(settings: StreamSettings) -> ProviderError:
    name = settings.provider
    return ProviderError(
        kind="network",
        provider=name,
        retryable=False,
        message=(
            f"Nothing is listening at {safe_url(settings.base_url)} (the connection to "
            f"'{name}' was refused at once, so it was not retried). Start the model server "
            f"there (e.g. `ollama serve`), or fix `model_providers.{name}.base_url`."
        ),
    )


def _empty_stream(settings: StreamSettings) -> ProviderError:
    name = settings.provider
    return ProviderError(
        kind="network",
        provider=name,
        retryable=True,
        message=(
            f"'{name}' answered with an event stream that ended before its first event: no "
            "answer arrived. The turn can be retried. If this keeps happening, check "
            f"`model_providers.{name}.base_url` (now {safe_url(settings.base_url)}): it must "
            f"point at a server that implements {settings.api_name}."
        ),
    )


def _cut_off(settings: StreamSettings, what: str) -> ProviderError:
    name = settings.provider
    return ProviderError(
        kind="network",
        provider=name,
        retryable=True,
        message=(
            f"The response from '{name}' broke off before it was complete ({what}). Nothing "
            "was lost: the turn can be retried. If this keeps happening, check the network "
            f"and `model_providers.{name}.base_url`."
        ),
    )


def _first_event_timeout(settings: StreamSettings) -> ProviderError:
    name = settings.provider
    return ProviderError(
        kind="network",
        provider=name,
        retryable=False,
        message=(
            f"'{name}' sent nothing for {settings.first_byte_timeout_s:g} s after the request "
            "was sent, so the request was abandoned; it was not sent again (the provider may "
            "have been working on it, and a second request would be billed too). Retry the "
            f"turn, or raise `model_providers.{name}.stream_idle_timeout_ms` if the model "
            "needs longer to start answering."
        ),
    )


def _idle_timeout(settings: StreamSettings) -> ProviderError:
    name = settings.provider
    return ProviderError(
        kind="network",
        provider=name,
        retryable=False,
        message=(
            f"'{name}' sent nothing for {settings.idle_timeout_s:g} s in the middle of a "
            "response, so the stream was abandoned; the turn can be retried. Raise "
            f"`model_providers.{name}.stream_idle_timeout_ms` if the model needs longer pauses."
        ),
    )
