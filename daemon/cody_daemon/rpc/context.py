"""What a handler may use of the daemon: `HandlerContext`, the small view of `DaemonApp` the
method modules (rpc/*_handlers.py) are given instead of the whole app.

Invariants: the engine behind it (`manager`, `deps`) is built on first use, never when the
handlers are registered (`initialize` needs neither); the link is the connection's own (a
warm daemon's connection gets a link that shares sessions, rpc/sharing.py). Only
`register_handlers` (rpc/handlers.py) sees the app itself: `initialize`, `authenticate`,
`logout` and `shutdown` act on the connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..engine.deps import EngineDeps
    from ..engine.manager import SessionManager
    from .link import RpcClientLink

__all__ = ["HandlerContext"]


class HandlerContext(Protocol):
    """The engine and this connection's link (a `DaemonApp` is one)."""

    @property
    def manager(self) -> SessionManager:
        """The session manager (the engine's façade)."""

    @property
    def deps(self) -> EngineDeps:
        """The engine's store, tools, providers and paths."""

    @property
    def link(self) -> RpcClientLink:
        """This connection's client link (updates, approval requests)."""
