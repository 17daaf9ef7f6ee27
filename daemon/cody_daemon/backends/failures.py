"""Classifying what went wrong in an agent CLI as a `ProviderError` (-32010), seed 004 style.

Kinds: `auth` (401/403, "unauthorized", "invalid x-api-key", not logged in), `rate_limit`
(429, usage or rate limits), `context_window` (the conversation no longer fits), `network`
(the CLI could not reach its model provider), else `provider`. The message says what
happened, in the CLI's own words cut to one line, and what to do: for `auth` that is
"run `codex login`" / "run `claude` and log in". The `provider` field of the error is the
backend id (`codex`, `claude`). Messages never contain secrets: what looks like a key or a
bearer token (even the CLIs' masked `sk-...****1234`) is replaced by `<redacted>`, and every
detail is cut to 300 characters.
"""

from __future__ import annotations

import re
from typing import Final

from cody_protocol.errors import ProviderErrorKind

from ..errors import ProviderError
from .info import BackendKind, backend_info

__all__ = ["classify", "cli_exited", "cli_garbage", "cli_timeout"]

_AUTH: Final = re.compile(
    r"\b40[13]\b|unauthori[sz]ed|invalid (x-)?api[- _]key|authentication|not logged in|"
    r"/login|log in again|oauth token|forbidden",
    re.IGNORECASE,
)
_RATE: Final = re.compile(
    r"\b429\b|rate.?limit|too many requests|usage.?limit|quota|overloaded|\b529\b", re.IGNORECASE
)
_CONTEXT: Final = re.compile(
    r"context.?window|context_length|prompt is too long|maximum context|too many tokens|"
    r"input is too long",
    re.IGNORECASE,
)
_NETWORK: Final = re.compile(
    r"connection (refused|reset|closed|error)|econnrefused|enotfound|error sending request|"
    r"dns|network|could not connect|failed to connect|timed out|stream disconnected",
    re.IGNORECASE,
)
_STATUS_KIND: Final[dict[int, ProviderErrorKind]] = {401: "auth", 403: "auth", 429: "rate_limit"}
_CODE_KIND: Final[dict[str, ProviderErrorKind]] = {
    "unauthorized": "auth",
    "usageLimitExceeded": "rate_limit",
    "rateLimitExceeded": "rate_limit",
    "serverOverloaded": "rate_limit",
    "contextWindowExceeded": "context_window",
    "authentication_failed": "auth",
    "rate_limit": "rate_limit",
    "billing_error": "auth",
}


_SECRETISH: Final = re.compile(
    r"\b(sk|pk|rk|key|ghp|xox[abp])[-_][A-Za-z0-9*._\-]{3,}|(?i:bearer)\s+[A-Za-z0-9._\-]+"
)


def _one_line(text: str, limit: int = 300) -> str:
    flat = _SECRETISH.sub("<redacted>", " ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _kind_of(status: int | None, code: str | None, text: str) -> ProviderErrorKind:
    if status in _STATUS_KIND:
        return _STATUS_KIND[status]
    if code in _CODE_KIND:
        return _CODE_KIND[code]
    for kind, pattern in (
        ("auth", _AUTH),
        ("rate_limit", _RATE),
        ("context_window", _CONTEXT),
        ("network", _NETWORK),
    ):
        if pattern.search(text):
            return kind  # type: ignore[return-value]
    if code and "connection" in code.lower():
        return "network"
    return "provider"


_ADVICE: Final[dict[ProviderErrorKind, str]] = {
    "rate_limit": "Wait a moment and try again, or check the account's usage limits.",
    "context_window": "The conversation no longer fits the model's context: start a new session "
    "or ask the agent to compact it.",
    "network": "Check the network connection (and any proxy settings) and try again.",
    "provider": "Try again; if it keeps failing, run the CLI by itself to see its error.",
}


def classify(
    backend: BackendKind,
    detail: str,
    *,
    status: int | None = None,
    code: str | None = None,
) -> ProviderError:
    """The -32010 error for a failure the CLI reported (`detail` in its own words)."""
    info = backend_info(backend)
    name = info.display_name
    kind = _kind_of(status, code, detail)
    said = _one_line(detail) or "no details"
    if kind == "auth":
        advice = f"To fix it, {info.login_hint}."
        message = f"{name} could not authenticate with its model provider ({said}). {advice}"
    else:
        message = f"{name} failed: {said}. {_ADVICE[kind]}"
    return ProviderError(
        kind=kind,
        message=message,
        provider=backend,
        retryable=kind in ("rate_limit", "network") or (status is not None and status >= 500),
        http_status=status,
    )


def cli_exited(backend: BackendKind, code: int | None, stderr_tail: str) -> ProviderError:
    """The CLI exited in the middle of a turn; its stderr says why (classified like an error)."""
    lines = [line for line in stderr_tail.splitlines() if line.strip() and "WARN" not in line]
    detail = " ".join(lines[-6:]) if lines else ""
    how = f"exited with code {code}" if code is not None else "exited"
    name = backend_info(backend).display_name
    error = classify(backend, f"{name} {how}" + (f": {detail}" if detail else ""))
    return error


def cli_garbage(backend: BackendKind, sample: str) -> ProviderError:
    return ProviderError(
        kind="provider",
        message=(
            f"{backend_info(backend).display_name} printed output that is not its protocol "
            f"({_one_line(sample, 120)!r}); the turn was stopped. Check that the configured "
            "executable is really the CLI (and its version)."
        ),
        provider=backend,
    )


def cli_timeout(backend: BackendKind, timeout_s: float) -> ProviderError:
    return ProviderError(
        kind="provider",
        message=(
            f"{backend_info(backend).display_name} did not finish the turn within {timeout_s:g} s "
            "(backend_timeout_s); it was interrupted and stopped. Try again, or raise "
            "backend_timeout_s in config.toml."
        ),
        provider=backend,
        retryable=True,
    )
