"""The warm daemon's clients, whichever listener they came by (a unix socket or a WebSocket):
each is served like the stdio daemon's one client, the sessions are shared (rpc/sharing.py).

Invariants:
- Every connection gets its own `ConnectionApp` (pygls server, protocol, link, client
  capabilities, in-flight requests, approvals, stall watchdog) over the one store, session
  manager and engine; its `shutdown`/`exit` ends that connection only.
- At most `connection_limit()` connections are served at once, counted over every listener
  (a quarter of the fd limit, at most MAX_CONNECTIONS): `admit()` says no past that, with one
  warning per episode, and the listener refuses the connection before serving it.
- `close()` ends every connection (its approvals rejected, its sessions closed as at EOF
  unless someone else is attached) and waits for them.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

from cody_protocol.session import SessionStateResult

from ..app import DaemonApp
from .link import RpcClientLink
from .server import FrameSource, serve_frames
from .session_handlers import advertise_commands, session_state
from .sharing import Attachments, BroadcastLink, SharingServer
from .transport import ByteSink

__all__ = ["MAX_CONNECTIONS", "ConnectionApp", "Connections", "connection_limit"]

logger = logging.getLogger(__name__)

MAX_CONNECTIONS = 256
"""Connections served at once, whatever the fd limit (a user has a few editors and terminals)."""


def connection_limit() -> int:
    """How many connections may be served now: a quarter of the current soft fd limit (read
    each time: it may be changed from outside with prlimit), at most MAX_CONNECTIONS. The
    other three quarters stay for the turns (session files, tool processes, model sockets)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, soft // 4))


class ConnectionApp(DaemonApp):
    """One connection's view of the daemon: the shared engine (configuration, store and
    sessions), with its own pygls server, link and client capabilities, built by
    `DaemonApp.__init__` like any app. Its `shutdown` (the client's `shutdown` request)
    ends this connection's part only (rpc/sharing.py, `disconnect`)."""

    def __init__(self, shared: DaemonApp, attachments: Attachments) -> None:
        self.sharing = SharingServer(attachments, shared.engine.manager)
        self.sharing.resume_live = self._resume_running
        super().__init__(
            env=shared.env, paths=shared.paths, engine=shared.engine, server=self.sharing
        )

    def _new_link(self) -> RpcClientLink:
        return self.sharing.link

    async def _resume_running(self, session_id: str) -> Any:
        """`session/resume` of a session whose turn is running: attach and watch it."""
        session = self.manager.get(session_id)
        advertise_commands(self, session)
        return SessionStateResult.model_validate(session_state(self, session)).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )

    async def shutdown(self) -> None:
        if self._shutdown_started:
            return
        self._shutdown_started = True
        await self.sharing.disconnect()


class Connections:
    """The clients being served (see the module docstring)."""

    def __init__(self, app: DaemonApp, *, stall_timeout_s: float) -> None:
        self._app = app
        self._stall_timeout_s = stall_timeout_s
        self.attachments = Attachments()
        app.engine.manager.link = BroadcastLink(self.attachments)
        self._clients: dict[asyncio.Future[None], asyncio.Event] = {}
        self._refused = 0
        """Connections refused since the limit was last reached (logged once per episode)."""

    def __len__(self) -> int:
        return len(self._clients)

    def admit(self) -> bool:
        limit = connection_limit()
        if len(self._clients) < limit:
            if self._refused:
                logger.warning("serving new connections again (%d were refused)", self._refused)
                self._refused = 0
            return True
        if not self._refused:
            logger.warning(
                "%d connections open, the most this daemon serves at once (a quarter of its "
                "file descriptor limit, at most %d): refusing new ones until one closes",
                len(self._clients),
                MAX_CONNECTIONS,
            )
        self._refused += 1
        return False

    async def serve(self, frames: FrameSource, sink: ByteSink) -> None:
        """Serve one client until it leaves (or `close()`); its sink is closed after."""
        ends = asyncio.Event()
        task = asyncio.ensure_future(self._serve(frames, sink, ends))
        self._clients[task] = ends
        try:
            await asyncio.shield(task)
        finally:
            if task.done():
                self._clients.pop(task, None)
            else:
                ends.set()
                task.add_done_callback(lambda done: self._clients.pop(done, None))

    def start(self, frames: FrameSource, sink: ByteSink) -> None:
        """Serve one client in a task of its own."""
        ends = asyncio.Event()
        task = asyncio.ensure_future(self._serve(frames, sink, ends))
        self._clients[task] = ends
        task.add_done_callback(lambda done: self._clients.pop(done, None))

    async def _serve(self, frames: FrameSource, sink: ByteSink, ends: asyncio.Event) -> None:
        view = ConnectionApp(self._app, self.attachments)
        view.server.protocol.attach(sink)
        try:
            await serve_frames(
                view.server, frames, sink, stop=ends, stall_timeout_s=self._stall_timeout_s
            )
        finally:
            await view.shutdown()
            await sink.close()

    async def close(self) -> None:
        for ends in list(self._clients.values()):
            ends.set()
        if self._clients:
            await asyncio.wait(list(self._clients))
