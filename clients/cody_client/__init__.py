"""Cody clients: the `cody-client` terminal front end and the Python client library.

    import cody_client

    async with cody_client.CodyClient.spawn() as client:
        client.on_permission = my_callback            # -> cody_client.Allow() / Deny() / Cancel()
        session = await client.new_session(".")
        result = await session.prompt("list files", timeout=300)

The names below are the library's public API (docs/client-api.md lists each with its
documentation). They are loaded on first use: `cody-client exec` imports this package before
it starts its daemon, when nothing heavy may be imported yet.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "CodyClient": "client",
    "SessionLookupError": "client",
    "ClientSession": "session",
    "PromptRun": "session",
    "PromptTimeout": "session",
    "SyncCodyClient": "sync",
    "SyncSession": "sync",
    "Allow": "decisions",
    "Deny": "decisions",
    "Cancel": "decisions",
    "Decision": "decisions",
    "InvalidDecision": "decisions",
    "RemoteError": "errors",
    "AuthenticationError": "errors",
    "AuthRequired": "errors",
    "InvalidRequest": "errors",
    "MethodNotFound": "errors",
    "InvalidParams": "errors",
    "InternalError": "errors",
    "StorageError": "errors",
    "NotFound": "errors",
    "RequestCancelled": "errors",
    "SessionBusy": "errors",
    "ProviderError": "errors",
    "ProviderAuthError": "errors",
    "RateLimitError": "errors",
    "ContextWindowError": "errors",
    "NetworkError": "errors",
    "ConnectionClosed": "connection",
    "DaemonNotFound": "daemon_command",
}

__all__ = [
    "__version__",
    "Allow",
    "AuthRequired",
    "AuthenticationError",
    "Cancel",
    "ClientSession",
    "CodyClient",
    "ConnectionClosed",
    "ContextWindowError",
    "DaemonNotFound",
    "Decision",
    "Deny",
    "InternalError",
    "InvalidDecision",
    "InvalidParams",
    "InvalidRequest",
    "MethodNotFound",
    "NetworkError",
    "NotFound",
    "PromptRun",
    "PromptTimeout",
    "ProviderAuthError",
    "ProviderError",
    "RateLimitError",
    "RemoteError",
    "RequestCancelled",
    "SessionBusy",
    "SessionLookupError",
    "StorageError",
    "SyncCodyClient",
    "SyncSession",
]
"""Kept equal to `_EXPORTS` by tests/e2e/test_client_api.py."""

if TYPE_CHECKING:
    from .client import CodyClient, SessionLookupError
    from .connection import ConnectionClosed
    from .daemon_command import DaemonNotFound
    from .decisions import Allow, Cancel, Decision, Deny, InvalidDecision
    from .errors import (
        AuthenticationError,
        AuthRequired,
        ContextWindowError,
        InternalError,
        InvalidParams,
        InvalidRequest,
        MethodNotFound,
        NetworkError,
        NotFound,
        ProviderAuthError,
        ProviderError,
        RateLimitError,
        RemoteError,
        RequestCancelled,
        SessionBusy,
        StorageError,
    )
    from .session import ClientSession, PromptRun, PromptTimeout
    from .sync import SyncCodyClient, SyncSession


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cody_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
