"""The errors a daemon's answer raises, one class per kind (docs/protocol.md "Errors").

Every error answer becomes a `RemoteError` (code, message, data); its class says what went
wrong, so callers catch what they can handle:

    RemoteError
    ├── InvalidRequest (-32600)      ├── MethodNotFound (-32601)
    ├── InvalidParams (-32602)       ├── InternalError (-32603)
    │                                │   └── StorageError (data.kind "storage")
    ├── AuthRequired (-32000)        ├── NotFound (-32002)
    ├── RequestCancelled (-32800)    ├── SessionBusy (-32011)
    └── ProviderError (-32010)
        ├── ProviderAuthError (kind "auth")
        ├── RateLimitError (kind "rate_limit")
        ├── ContextWindowError (kind "context_window")
        └── NetworkError (kind "network")

`AuthenticationError` is a second base of `AuthRequired` and `ProviderAuthError` (no usable
credentials, or credentials the provider refused): `except AuthenticationError` catches both.

Invariants: `remote_error` never fails (an unknown code or kind, or `data` of an unexpected
shape, gives the nearest class, at worst `RemoteError`); every class keeps `code`, `message`
and `data` exactly as the daemon sent them.
"""

from __future__ import annotations

from functools import cache
from typing import Any, ClassVar

__all__ = [
    "AuthRequired",
    "AuthenticationError",
    "ContextWindowError",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MethodNotFound",
    "NetworkError",
    "NotFound",
    "ProviderAuthError",
    "ProviderError",
    "RateLimitError",
    "RemoteError",
    "RequestCancelled",
    "SessionBusy",
    "StorageError",
    "remote_error",
]


class RemoteError(Exception):
    """An error answer from the other side (`code`, `message`, `data` as sent)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data

    def _data(self, key: str) -> Any:
        return self.data.get(key) if isinstance(self.data, dict) else None


class AuthenticationError(RemoteError):
    """No usable credentials (-32000), or the provider refused them (-32010, kind `auth`)."""


class InvalidRequest(RemoteError):
    """-32600: not a request the daemon takes now (e.g. before `initialize`)."""


class MethodNotFound(RemoteError):
    """-32601: the daemon has no such method."""


class InvalidParams(RemoteError):
    """-32602: bad params or configuration; `issues` says which field and why."""

    @property
    def issues(self) -> list[dict[str, Any]]:
        """`data.errors`: `{key, message, value?, valid?, source?}` per problem."""
        errors = self._data("errors")
        return (
            [issue for issue in errors if isinstance(issue, dict)]
            if isinstance(errors, list)
            else []
        )


class InternalError(RemoteError):
    """-32603: a failure of the daemon's own (its log has the details)."""


class StorageError(InternalError):
    """-32603 with `data.kind == "storage"`: a session file could not be written."""

    @property
    def path(self) -> str | None:
        path = self._data("path")
        return path if isinstance(path, str) else None


class AuthRequired(AuthenticationError):
    """-32000: the provider has no usable credentials; `fix` says what to do."""

    @property
    def provider(self) -> str | None:
        provider = self._data("provider")
        return provider if isinstance(provider, str) else None

    @property
    def fix(self) -> str | None:
        fix = self._data("fix")
        return fix if isinstance(fix, str) else None


class NotFound(RemoteError):
    """-32002: no such session (or history file, or cursor)."""


class RequestCancelled(RemoteError):
    """-32800: the request was cancelled while it ran."""


class SessionBusy(RemoteError):
    """-32011: the session is running a turn (or its file is locked by another daemon)."""


class ProviderError(RemoteError):
    """-32010: the model provider or agent CLI failed (after the daemon's retries)."""

    KIND: ClassVar[str] = "provider"

    @property
    def kind(self) -> str:
        kind = self._data("kind")
        return kind if isinstance(kind, str) else self.KIND

    @property
    def retryable(self) -> bool:
        """Whether trying again later may work (rate limits, 5xx, network)."""
        return self._data("retryable") is True

    @property
    def provider(self) -> str | None:
        provider = self._data("provider")
        return provider if isinstance(provider, str) else None

    @property
    def http_status(self) -> int | None:
        status = self._data("httpStatus")
        return status if isinstance(status, int) else None


class ProviderAuthError(ProviderError, AuthenticationError):
    """-32010 kind `auth`: the provider refused the credentials (401/403)."""

    KIND = "auth"


class RateLimitError(ProviderError):
    """-32010 kind `rate_limit`: rate limited, or out of quota."""

    KIND = "rate_limit"


class ContextWindowError(ProviderError):
    """-32010 kind `context_window`: the conversation is too long for the model."""

    KIND = "context_window"


class NetworkError(ProviderError):
    """-32010 kind `network`: no answer from the provider (connection, timeout)."""

    KIND = "network"


@cache
def _by_code() -> dict[int, type[RemoteError]]:
    # Imported here: `cody-client exec` loads this module before it has started its daemon,
    # when nothing of cody_protocol may be imported yet (tests/unit/test_lazy_imports.py).
    from cody_protocol.codes import ErrorCode

    return {
        ErrorCode.INVALID_REQUEST: InvalidRequest,
        ErrorCode.METHOD_NOT_FOUND: MethodNotFound,
        ErrorCode.INVALID_PARAMS: InvalidParams,
        ErrorCode.INTERNAL_ERROR: InternalError,
        ErrorCode.AUTH_REQUIRED: AuthRequired,
        ErrorCode.NOT_FOUND: NotFound,
        ErrorCode.REQUEST_CANCELLED: RequestCancelled,
        ErrorCode.PROVIDER_ERROR: ProviderError,
        ErrorCode.SESSION_BUSY: SessionBusy,
    }


_PROVIDER_KINDS: dict[str, type[ProviderError]] = {
    cls.KIND: cls for cls in (ProviderAuthError, RateLimitError, ContextWindowError, NetworkError)
}


def remote_error(code: int, message: str, data: Any = None) -> RemoteError:
    """The `RemoteError` subclass for an error answer (see the module docstring)."""
    cls = _by_code().get(code, RemoteError)
    kind = data.get("kind") if isinstance(data, dict) else None
    if cls is ProviderError and isinstance(kind, str):
        cls = _PROVIDER_KINDS.get(kind, ProviderError)
    elif cls is InternalError and kind == "storage":
        cls = StorageError
    return cls(code, message, data)
