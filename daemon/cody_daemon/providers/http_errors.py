"""Turn a failed provider call into a `ProviderError` whose message says what to do.

API-agnostic: understands OpenAI-style bodies (`{"error": {"message", "type", "param",
"code"}}`, also the in-stream `response.failed` / `error` events), Anthropic-style bodies
(`{"type": "error", "error": {"type", "message"}}`) and the loose shapes of
OpenAI-compatible servers (`{"error": "text"}`, `{"message": ...}`, `{"detail": ...}`).

Invariants:
- kinds: 401/403 or an authentication/permission error -> `auth`; 429 -> `rate_limit`
  (retryable, except `insufficient_quota`, which is billing); a context-length overflow ->
  `context_window`; 5xx and overload -> `provider` (retryable); transport failures ->
  `network` (retryable); anything else -> `provider` (not retryable);
- messages never contain the API key, request headers or the request body. Server text is
  included only for non-auth errors, cut to `_MAX_DETAIL` characters, with anything that
  looks like a key (and every string passed in `secrets`) replaced by `[redacted]`;
- `base_url` is shown without user info or query string (both may carry credentials).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from .base import ProviderError
from .retry import parse_retry_after

__all__ = [
    "ErrorInfo",
    "classify",
    "classify_http_error",
    "error_info",
    "network_error",
    "safe_url",
]

_MAX_DETAIL = 300
_KEY_LIKE = re.compile(
    r"(?:\b(?:sk|rk|pk)-[A-Za-z0-9_\-*.]{6,})|(?:Bearer\s+\S+)|(?:\b[A-Za-z0-9_\-]{40,}\b)"
)
_CONTEXT_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "prompt is too long",
    "input is too long",
    "too many tokens",
)
_RETRYABLE_CODES = frozenset(
    {"server_error", "internal_error", "overloaded_error", "api_error", "server_is_overloaded"}
)
_TRY_AGAIN = re.compile(r"try again in\s+(\d+(?:\.\d+)?)\s*(ms|s|seconds?)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """The fields a provider error body may carry; all optional."""

    code: str | None = None
    type: str | None = None
    message: str | None = None
    param: str | None = None
    """The request field the error is about (OpenAI's `param`), when the server names one."""


def error_info(body: Any) -> ErrorInfo:
    """Extract code/type/message from a parsed error body of any supported shape."""
    if not isinstance(body, Mapping):
        text = body.strip() if isinstance(body, str) else ""
        if text.startswith("<"):
            text = "(an HTML page instead of a JSON error)"
        return ErrorInfo(message=text or None)
    inner = body.get("error")
    if isinstance(inner, str):
        return ErrorInfo(message=inner, code=_str(body.get("code")), type=_str(body.get("type")))
    source: Mapping[str, Any] = inner if isinstance(inner, Mapping) else body
    message = source.get("message")
    if message is None and isinstance(source.get("detail"), str):
        message = source.get("detail")
    return ErrorInfo(
        code=_str(source.get("code")),
        type=_str(source.get("type")),
        message=_str(message),
        param=_str(source.get("param")),
    )


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _parse_body(body: bytes | str | None) -> Any:
    if not body:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace") if isinstance(body, bytes) else body


def _clean(text: str | None, secrets: Iterable[str]) -> str | None:
    if not text:
        return None
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    text = _KEY_LIKE.sub("[redacted]", " ".join(text.split()))
    if len(text) > _MAX_DETAIL:
        text = text[: _MAX_DETAIL - 1] + "…"
    return text


def _mentions_context(info: ErrorInfo) -> bool:
    if info.code in ("context_length_exceeded", "request_too_large"):
        return True
    message = (info.message or "").lower()
    return any(hint in message for hint in _CONTEXT_HINTS)


def _retry_hint(info: ErrorInfo) -> float | None:
    match = _TRY_AGAIN.search(info.message or "")
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000.0 if match.group(2).lower() == "ms" else value


def _key_hint(provider: str, env_key: str | None) -> str:
    config = f"`model_providers.{provider}.env_key`"
    if env_key:
        return (
            f"Check that the environment variable {env_key} holds a valid key ({config} names it)."
        )
    return (
        f"Check the API key configured for '{provider}' ({config} names the environment variable)."
    )


def classify(
    *,
    provider: str,
    info: ErrorInfo,
    http_status: int | None = None,
    retry_after_s: float | None = None,
    env_key: str | None = None,
    secrets: Iterable[str] = (),
) -> ProviderError:
    """Classify an error from its HTTP status (if any) and body/event fields."""
    kind_hint = (info.type or "").lower()
    code = (info.code or "").lower()
    detail = _clean(info.message, secrets)
    said = f" The server said: {detail}" if detail else ""
    where = f" (HTTP {http_status})" if http_status else ""

    def err(kind: Any, message: str, retryable: bool = False) -> ProviderError:
        return ProviderError(
            kind=kind,
            message=message,
            provider=provider,
            retryable=retryable,
            http_status=http_status,
            retry_after_s=retry_after_s,
            details={
                k: v
                for k, v in (("code", info.code), ("type", info.type), ("param", info.param))
                if v
            },
        )

    if http_status == 401 or kind_hint == "authentication_error" or code == "invalid_api_key":
        hint = _key_hint(provider, env_key)
        return err("auth", f"'{provider}' rejected the API key{where}. {hint}")
    if http_status == 403 or kind_hint == "permission_error":
        return err(
            "auth",
            f"The API key for '{provider}' is not allowed to do this{where}.{said} "
            "Check the key's project, permissions and model access. "
            + _key_hint(provider, env_key),
        )
    if code == "insufficient_quota" or kind_hint == "insufficient_quota":
        return err(
            "rate_limit",
            f"'{provider}' reports that the account has no quota left{where}: this is a billing "
            "limit, waiting will not help. Check the plan and billing details of the account "
            "that owns the API key.",
        )
    if http_status == 429 or kind_hint == "rate_limit_error" or code == "rate_limit_exceeded":
        if retry_after_s is None:
            retry_after_s = _retry_hint(info)
        wait = (
            f"Wait {retry_after_s:g} s and retry."
            if retry_after_s is not None
            else "Wait a moment and retry."
        )
        return err("rate_limit", f"Rate limited by '{provider}'{where}. {wait}{said}", True)
    if _mentions_context(info) or http_status == 413:
        return err(
            "context_window",
            f"The conversation is too long for the model's context window{where}. "
            f"Shorten the conversation or start a new session.{said}",
        )
    if (
        (http_status is not None and http_status >= 500)
        or kind_hint == "overloaded_error"
        or code in _RETRYABLE_CODES
        or kind_hint in _RETRYABLE_CODES
    ):
        return err(
            "provider",
            f"'{provider}' had a server-side problem{where}; this is usually temporary. "
            f"Retry in a moment.{said}",
            True,
        )
    if http_status == 404:
        return err(
            "provider",
            f"'{provider}' answered 404 Not Found. Check the model name and "
            f"`model_providers.{provider}.base_url`.{said}",
        )
    return err("provider", f"'{provider}' refused the request{where}.{said}")


def classify_http_error(
    *,
    provider: str,
    status: int,
    body: bytes | str | None,
    headers: Mapping[str, str] | None = None,
    env_key: str | None = None,
    secrets: Iterable[str] = (),
) -> ProviderError:
    """Classify an HTTP error response (status >= 400) from its status, headers and body."""
    retry_after = parse_retry_after(headers) if headers is not None else None
    return classify(
        provider=provider,
        info=error_info(_parse_body(body)),
        http_status=status,
        retry_after_s=retry_after,
        env_key=env_key,
        secrets=secrets,
    )


def safe_url(url: str) -> str:
    """`url` without user info, query or fragment, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def network_error(*, provider: str, base_url: str, what: str) -> ProviderError:
    """A transport failure (connect, reset, timeout) before or during a call; retryable.

    `what` describes the failure in words (e.g. "connection refused"); it must not contain
    request data.
    """
    return ProviderError(
        kind="network",
        message=(
            f"Could not get a response from '{provider}' at {safe_url(base_url)}: {what}. "
            f"Check the network connection and `model_providers.{provider}.base_url`."
        ),
        provider=provider,
        retryable=True,
    )
