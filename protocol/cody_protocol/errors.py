"""JSON-RPC error codes (docs/protocol.md "Errors") and the shapes of their `data`.

The codes and provider error kinds live in `codes.py` (no pydantic); they are re-exported here.
"""

from __future__ import annotations

from typing import Any

from ._base import WireModel
from .codes import ErrorCode, ProviderErrorKind

__all__ = [
    "AuthRequiredData",
    "ErrorCode",
    "InvalidParamsData",
    "ParamIssue",
    "ProviderErrorData",
    "ProviderErrorKind",
    "RpcError",
]


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
    details: str | None = None
    """The error's message again (every error the daemon maps has it; ACP SDKs read it)."""


class ProviderErrorData(WireModel):
    """`data` of a -32010 error."""

    kind: ProviderErrorKind
    retryable: bool
    provider: str
    http_status: int | None = None
    details: str | None = None
    """The error's message again."""


class AuthRequiredData(WireModel):
    """`data` of a -32000 error."""

    provider: str
    fix: str
    details: str | None = None
    """The error's message again."""
