"""The protocol version, JSON-RPC error codes and provider error kinds: plain constants.

No models here (they live in `errors.py` and `initialize.py`, which re-export these), so a
process can name a code or the version without importing pydantic (the
daemon answers `initialize` before it needs any model: docs/architecture.md "Starting fast").
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

__all__ = ["PROTOCOL_VERSION", "ErrorCode", "ProviderErrorKind"]

PROTOCOL_VERSION = 1
"""The ACP version Cody speaks; `initialize` always answers it and the client decides."""


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


ProviderErrorKind = Literal["auth", "rate_limit", "context_window", "network", "provider"]
