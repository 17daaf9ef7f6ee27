"""JSON-RPC error codes (docs/protocol.md "Errors") and the shapes of their `data`."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Literal

from ._base import WireModel

__all__ = [
    "AuthRequiredData",
    "ErrorCode",
    "InvalidParamsData",
    "ParamIssue",
    "ProviderErrorData",
    "ProviderErrorKind",
    "RpcError",
]


class ErrorCode(IntEnum):
    """Every error code Cody sends."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    AUTH_REQUIRED = -32000
    NOT_FOUND = -32002
    REQUEST_CANCELLED = -32800
    PROVIDER_ERROR = -32010
    SESSION_BUSY = -32011


class RpcError(WireModel):
    """The `error` member of a JSON-RPC error response."""

    code: int
    message: str
    data: Any = None


class ParamIssue(WireModel):
    """One invalid field or configuration key."""

    key: str
    """Dotted path of the field or config key, e.g. `approval_policy` or `prompt.0.type`."""
    message: str
    value: Any = None
    valid: list[Any] | None = None
    """The valid values, when the set is finite."""
    source: str | None = None
    """Where the bad value came from: a config file path, `_meta.cody`, or `params`."""


class InvalidParamsData(WireModel):
    """`data` of a -32602 error."""

    errors: list[ParamIssue]


ProviderErrorKind = Literal["auth", "rate_limit", "context_window", "network", "provider"]


class ProviderErrorData(WireModel):
    """`data` of a -32010 error."""

    kind: ProviderErrorKind
    retryable: bool
    provider: str
    http_status: int | None = None


class AuthRequiredData(WireModel):
    """`data` of a -32000 error."""

    provider: str
    fix: str
