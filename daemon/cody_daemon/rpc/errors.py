"""Mapping the daemon's errors to JSON-RPC errors (one JsonRpcException per Cody code).

This is the boundary: nothing below it knows JSON-RPC codes, and nothing above it sees a
Python traceback (an unexpected exception becomes -32603 with a one-line message).

Every error mapped here carries its message again as `data.details` (next to the code's own
`data` fields): the ACP SDKs put an error's text there, and clients such as Toad show only it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cody_protocol.codes import ErrorCode
from pygls.exceptions import JsonRpcException

from ..errors import (
    AuthRequired,
    CodyError,
    InvalidParams,
    InvalidRequest,
    Issue,
    NotFound,
    ProviderError,
    SessionBusy,
    StorageError,
)

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = ["RpcError", "invalid_params_from_validation", "to_rpc_error"]

logger = logging.getLogger(__name__)


class RpcError(JsonRpcException):
    """A JSON-RPC error with a Cody code, a user-facing message and structured data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message=message, code=code, data=data)


def _issues_data(issues: list[Issue]) -> dict[str, Any]:
    return {
        "errors": [
            {
                key: value
                for key, value in {
                    "key": issue.key,
                    "message": issue.message,
                    "value": _jsonable(issue.value),
                    "valid": list(issue.valid) if issue.valid is not None else None,
                    "source": issue.source,
                }.items()
                if value is not None
            }
            for issue in issues
        ]
    }


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def invalid_params_from_validation(exc: ValidationError, model: type[BaseModel]) -> RpcError:
    from ..validation import issues_from_validation_error

    issues = issues_from_validation_error(exc, model, source="params")
    summary = "; ".join(issue.describe() for issue in issues[:5])
    message = f"Invalid params: {summary}"
    return RpcError(ErrorCode.INVALID_PARAMS, message, {**_issues_data(issues), "details": message})


def to_rpc_error(exc: BaseException) -> RpcError:
    """The JSON-RPC error for any exception raised by a handler (see the module docstring)."""
    if isinstance(exc, RpcError):
        return exc
    error = _mapped(exc)
    data = error.data if isinstance(error.data, dict) else {}
    error.data = {**data, "details": error.message}
    return error


def _mapped(exc: BaseException) -> RpcError:
    if isinstance(exc, InvalidParams):
        return RpcError(ErrorCode.INVALID_PARAMS, exc.message, _issues_data(exc.issues))
    if isinstance(exc, InvalidRequest):
        return RpcError(ErrorCode.INVALID_REQUEST, exc.message)
    if isinstance(exc, NotFound):
        return RpcError(ErrorCode.NOT_FOUND, exc.message)
    if isinstance(exc, SessionBusy):
        return RpcError(ErrorCode.SESSION_BUSY, exc.message)
    if isinstance(exc, AuthRequired):
        return RpcError(
            ErrorCode.AUTH_REQUIRED, exc.message, {"provider": exc.provider, "fix": exc.fix}
        )
    if isinstance(exc, ProviderError):
        data: dict[str, Any] = {
            "kind": exc.kind,
            "retryable": exc.retryable,
            "provider": exc.provider,
        }
        if exc.http_status is not None:
            data["httpStatus"] = exc.http_status
        return RpcError(ErrorCode.PROVIDER_ERROR, exc.message, data)
    if isinstance(exc, StorageError):
        storage = {"kind": "storage", "reason": exc.reason, "path": str(exc.path)}
        return RpcError(ErrorCode.INTERNAL_ERROR, exc.message, storage)
    if isinstance(exc, CodyError):
        return RpcError(ErrorCode.INTERNAL_ERROR, exc.message)
    logger.error("internal error", exc_info=exc)
    return RpcError(
        ErrorCode.INTERNAL_ERROR,
        f"Internal error ({exc.__class__.__name__}); see the daemon log for details.",
    )
