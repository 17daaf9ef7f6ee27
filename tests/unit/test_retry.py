"""Retry policy (backoff, Retry-After) and the error classification that feeds it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from cody_daemon.providers.base import ProviderError
from cody_daemon.providers.http_errors import classify_http_error, network_error
from cody_daemon.providers.retry import RetryPolicy, parse_retry_after
from cody_protocol.errors import ProviderErrorKind

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
        ({"Retry-After": "Fri, 02 Jan 2026 03:04:35 GMT"}, 30.0),
        ({"Retry-After": "Fri, 02 Jan 2026 03:00:00 GMT"}, 0.0),  # in the past: no wait
        ({"Retry-After": "-3"}, 0.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def error(
    status: int | None, *, retryable: bool = True, after: float | None = None
) -> ProviderError:
    kind: ProviderErrorKind = "network" if status is None else "provider"
    return ProviderError(
        kind=kind,
        message="x",
        provider="p",
        retryable=retryable,
        http_status=status,
        retry_after_s=after,
    )


def test_default_backoff_doubles_and_rides_out_a_minute() -> None:
    # Codex's default request_max_retries = 4: waits of 4, 8, 16, 32 s fill the 60 s window.
    low = RetryPolicy(rand=lambda: 0.0)
    assert [low.backoff_s(n) for n in range(1, 5)] == [4.0, 8.0, 16.0, 32.0]
    assert sum(low.backoff_s(n) for n in range(1, 5)) >= 60
    # Jitter only stretches a wait (by up to 25%), so the window stays a minimum.
    high = RetryPolicy(rand=lambda: 0.999999)
    assert all(4.0 * 2 ** (n - 1) < high.backoff_s(n) < 5.0 * 2 ** (n - 1) for n in range(1, 5))


@pytest.mark.parametrize(
    ("retries", "window"), [(1, 60.0), (2, 60.0), (4, 2.0), (8, 60.0), (20, 60.0)]
)
def test_backoff_spans_at_least_the_window_whatever_the_retry_count(
    retries: int, window: float
) -> None:
    policy = RetryPolicy(max_retries=retries, window_s=window, rand=lambda: 0.0)
    waits = [policy.backoff_s(n) for n in range(1, retries + 1)]
    assert sum(waits) >= window - 1e-9
    assert all(b >= a for a, b in zip(waits, waits[1:], strict=False))  # never shrinking
    assert max(waits) <= window and waits[0] >= min(policy.min_delay_s, window)


def test_server_requested_wait_replaces_backoff() -> None:
    policy = RetryPolicy(rand=lambda: 0.5)
    assert policy.delay_before_retry(1, error(429, after=12.0)) == 12.0
    assert policy.delay_before_retry(1, error(429)) == 4.5
    # Asked to wait longer than we are willing to: report instead of hanging the turn.
    assert policy.delay_before_retry(1, error(429, after=600.0)) is None


@pytest.mark.parametrize(
    ("status", "retryable", "retried"),
    [
        (None, True, True),  # connection error
        (429, True, True),
        (500, True, True),
        (502, True, True),
        (503, True, True),
        (504, True, True),
        (529, True, True),
        (501, True, False),  # not a transient status
        (400, False, False),
        (429, False, False),  # e.g. insufficient_quota
    ],
)
def test_which_failures_are_retried(status: int | None, retryable: bool, retried: bool) -> None:
    decision = RetryPolicy().delay_before_retry(1, error(status, retryable=retryable))
    assert (decision is not None) is retried


def test_gives_up_after_max_retries() -> None:
    policy = RetryPolicy(max_retries=2)
    assert policy.delay_before_retry(2, error(503)) is not None
    assert policy.delay_before_retry(3, error(503)) is None


# -- classification (API-agnostic: OpenAI and Anthropic bodies) ------------------------------


def test_anthropic_overloaded_is_retryable_provider_error() -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    err = classify_http_error(provider="anthropic", status=529, body=body)
    assert (err.kind, err.retryable, err.http_status) == ("provider", True, 529)
    assert "Overloaded" in err.message
    assert RetryPolicy().delay_before_retry(1, err) is not None


@pytest.mark.parametrize(
    ("status", "etype", "message", "kind"),
    [
        (401, "authentication_error", "invalid x-api-key", "auth"),
        (403, "permission_error", "not allowed", "auth"),
        (429, "rate_limit_error", "slow down", "rate_limit"),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "context_window",
        ),
        (400, "invalid_request_error", "messages: field required", "provider"),
    ],
)
def test_anthropic_error_bodies(status: int, etype: str, message: str, kind: str) -> None:
    body = f'{{"type":"error","error":{{"type":"{etype}","message":"{message}"}}}}'
    err = classify_http_error(
        provider="anthropic", status=status, body=body, env_key="ANTHROPIC_API_KEY"
    )
    assert err.kind == kind
    if kind == "auth":
        assert "ANTHROPIC_API_KEY" in err.message


def test_insufficient_quota_means_billing_not_waiting() -> None:
    body = b'{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}'
    err = classify_http_error(
        provider="openai", status=429, body=body, headers={"retry-after": "1"}
    )
    assert err.kind == "rate_limit"
    assert err.retryable is False
    assert "billing" in err.message
    assert RetryPolicy().delay_before_retry(1, err) is None


def test_rate_limit_message_says_how_long_to_wait() -> None:
    err = classify_http_error(
        provider="openai", status=429, body=None, headers={"Retry-After": "20"}
    )
    assert err.retry_after_s == 20.0
    assert "Wait 20 s" in err.message


def test_messages_never_echo_secrets() -> None:
    body = b'{"error":{"message":"Bad header Authorization: Bearer my-very-secret-token-value for key sk-proj-abcdef123456","type":"invalid_request_error"}}'
    err = classify_http_error(
        provider="openai", status=400, body=body, secrets=["my-very-secret-token-value"]
    )
    assert "my-very-secret-token-value" not in err.message
    assert "sk-proj-abcdef123456" not in err.message
    assert "[redacted]" in err.message


def test_network_error_hides_credentials_in_base_url() -> None:
    err = network_error(
        provider="local",
        base_url="http://user:pw@10.0.0.2:8000/v1?api-key=abc",
        what="connection refused",
    )
    assert err.kind == "network"
    assert err.retryable is True
    assert "http://10.0.0.2:8000/v1" in err.message
    assert "pw" not in err.message
    assert "abc" not in err.message
