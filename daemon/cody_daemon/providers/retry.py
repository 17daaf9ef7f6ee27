"""Retry policy shared by every HTTP provider: exponential backoff with jitter over a window.

Invariants:
- only failures that happened before any model output reached the caller are candidates
  (the caller guarantees that; once deltas were streamed a retry would duplicate them);
- of those, only errors marked `retryable` whose HTTP status (if any) is 429 or one of the
  transient 5xx codes in `RETRY_STATUSES` are retried; connection errors have no status;
- a server-sent wait (`retry-after-ms`, `Retry-After` as delta-seconds or HTTP-date) is
  honoured exactly instead of the backoff; a wait longer than `max_retry_after_s` is not
  slept through: the error goes to the user, who can decide;
- at most `max_retries` retries, i.e. `max_retries + 1` attempts in all;
- the backoff doubles from retry to retry and is scaled so that the `max_retries` waits
  together last at least `window_s` (a 5xx burst of up to a minute is ridden out with the
  default 4 retries: about 4, 8, 16 and 32 s); each wait is stretched by a random 0-25% so
  that many clients do not retry in lockstep, never shortened (the window stays a minimum);
  no single wait exceeds `window_s`, and the first is at least `min_delay_s`.

`sleep` and `rand` are injectable so unit tests neither wait nor depend on chance.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from .base import ProviderError

__all__ = ["RETRY_STATUSES", "RetryPolicy", "Sleep", "parse_retry_after"]

RETRY_STATUSES: frozenset[int] = frozenset({429, 500, 502, 503, 504, 529})
"""HTTP statuses worth retrying: rate limits and transient server-side failures."""

Sleep = Callable[[float], Awaitable[None]]


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked us to wait, or None when it did not say (or said nonsense).

    `retry-after-ms` (OpenAI) wins over `Retry-After`; `Retry-After` may be delta-seconds
    or an HTTP-date (RFC 9110 section 10.2.3). Never negative. Header names are matched
    case-insensitively (httpx.Headers does that; plain dicts are searched by hand).
    """
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    for key, val in headers.items():
        if key.lower() == name:
            return val
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """When and how long to wait before retrying a failed request (see the invariants)."""

    max_retries: int = 4
    window_s: float = 60.0
    """The waits of all `max_retries` retries add up to at least this."""
    min_delay_s: float = 0.25
    jitter: float = 0.25
    """Each wait is stretched by up to this fraction (never shortened)."""
    max_retry_after_s: float = 60.0
    """A server asking for a longer wait than this is reported instead of waited for."""
    sleep: Sleep = field(default=asyncio.sleep)
    rand: Callable[[], float] = field(default=random.random)
    """Uniform in [0, 1); injectable for deterministic tests."""

    def should_retry(self, error: ProviderError) -> bool:
        """Whether this kind of failure is worth another attempt at all."""
        if not error.retryable:
            return False
        return error.http_status is None or error.http_status in RETRY_STATUSES

    def nominal_delay_s(self, failures: int) -> float:
        """The wait before retry number `failures` (>= 1) before jitter: doubling, scaled so
        that `max_retries` of them sum to `window_s`."""
        retries = max(1, self.max_retries)
        base = max(self.window_s / (2.0**retries - 1.0), self.min_delay_s)
        return min(self.window_s, base * 2.0 ** max(0, failures - 1))

    def backoff_s(self, failures: int) -> float:
        """The jittered wait after `failures` (>= 1) failed attempts."""
        return self.nominal_delay_s(failures) * (1.0 + self.jitter * float(self.rand()))

    def delay_before_retry(self, failures: int, error: ProviderError) -> float | None:
        """Seconds to wait before the next attempt, or None to give up and raise `error`.

        `failures` counts the attempts that failed so far, this one included (>= 1).
        """
        if failures > self.max_retries or not self.should_retry(error):
            return None
        if error.retry_after_s is not None:
            if error.retry_after_s > self.max_retry_after_s:
                return None
            return error.retry_after_s
        return self.backoff_s(failures)
