"""Sessions shared by the connections of one warm daemon (rpc/listen.py): who sees what.

Each connection has its own `SharedSessionLink` (its own protocol, in-flight requests,
approvals and `clientCapabilities`); the sessions and the engine belong to the process.

Invariants:
- A connection is *attached* to a session it created, loaded, resumed, forked or imported,
  and to one it prompts or compacts (so another client leaving never cancels its turn).
  Every live event of a session (a turn's updates, a mode or model change, MCP status) goes
  to every connection attached to it, and to the connection whose request caused it.
- Only the connection that caused an event slows its producer down (the turn waits for it
  as for the stdio client). Another attached connection that stops reading is dropped once
  WATCHER_BACKLOG bytes wait for it: a stopped terminal (Ctrl-Z) watching an editor's session
  can neither stall the editor's turn nor grow the daemon's memory without bound.
- What answers one connection's request goes to that connection only: a `session/load`
  replay, the slash commands advertised after new/load/resume.
- A child session (a subagent) is attached to every connection attached to its parent when
  it starts (`SubagentStarted`), so whoever watches the parent sees the child's updates.
- `session/request_permission`, `_cody/mcp/elicit` and `fs/*` go to the connection that sent
  the turn's prompt, never to another. Once that connection is gone they are answered at once
  as a rejection (approval), a decline (elicitation) or an error (file request): nothing
  waits for a dead client.
- `session/close` detaches the caller; the session is closed only when nobody else is
  attached. When a connection goes away (`disconnect`), its pending approvals and file
  requests are rejected; the sessions nobody else is attached to are closed as the stdio
  daemon closes them at EOF (a running turn is cancelled and saved); the others stay live,
  and their turns go on.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods
from pygls.exceptions import JsonRpcException

from ..engine.events import CommandsAvailable, EngineEvent, SubagentStarted
from ..engine.ports import (
    ApprovalReply,
    ApprovalRequest,
    ClientFileAccess,
    Elicitation,
    ElicitationAnswer,
)
from ..errors import ClientFileError, NotFound
from .link import RpcClientLink
from .protocol import CodyProtocol
from .server import CodyServer
from .transport import HIGH_WATER

if TYPE_CHECKING:
    from ..engine.manager import SessionManager

__all__ = ["WATCHER_BACKLOG", "Attachments", "BroadcastLink", "SharedSessionLink", "SharingServer"]

logger = logging.getLogger(__name__)

_PRIVATE_TO: contextvars.ContextVar[SharedSessionLink | None] = contextvars.ContextVar(
    "cody_private_to", default=None
)
"""Set while a `session/load` runs: its replay goes to the loading connection alone."""

CLIENT_GONE = "the client that was asked disconnected"

WATCHER_BACKLOG = 8 * HIGH_WATER
"""Unread bytes after which a connection watching someone else's events is dropped."""


class Attachments:
    """Which connections see which live sessions (insertion-ordered, no duplicates)."""

    def __init__(self) -> None:
        self._by_session: dict[str, dict[SharedSessionLink, None]] = {}

    def attach(self, session_id: str, link: SharedSessionLink) -> None:
        self._by_session.setdefault(session_id, {})[link] = None

    def detach(self, session_id: str, link: SharedSessionLink) -> bool:
        """Detach `link`; True when nobody else is attached to the session any more."""
        links = self._by_session.get(session_id)
        if links is not None:
            links.pop(link, None)
            if links:
                return False
            del self._by_session[session_id]
        return True

    def forget(self, session_id: str) -> None:
        self._by_session.pop(session_id, None)

    def links(self, session_id: str) -> list[SharedSessionLink]:
        return list(self._by_session.get(session_id, ()))

    def sessions_of(self, link: SharedSessionLink) -> list[str]:
        return [sid for sid, links in self._by_session.items() if link in links]


class SharedSessionLink(RpcClientLink):
    """One connection's link: its own requests and capabilities, live events fanned out to
    every connection attached to the session (see the module docstring)."""

    def __init__(self, protocol: CodyProtocol, attachments: Attachments) -> None:
        super().__init__(protocol)
        self._attachments = attachments
        self.closed = False
        """The connection is gone: nothing more is sent to it or asked of it."""
        self._flushes: set[asyncio.Task[None]] = set()

    # -- updates --------------------------------------------------------------------------

    def deliver(self, session_id: str, event: EngineEvent) -> None:
        """Send to this connection alone."""
        if not self.closed:
            super().emit(session_id, event)

    def watch(self, session_id: str, event: EngineEvent) -> None:
        """Send to this connection an event another one caused (see WATCHER_BACKLOG)."""
        if self.closed:
            return
        sink = self._protocol.sink
        if sink is not None and sink.buffered() > WATCHER_BACKLOG:
            logger.warning(
                "a client watching session %s stopped reading (%d bytes unread): dropped; "
                "the session and its turn go on",
                session_id,
                sink.buffered(),
            )
            self.closed = True
            sink.drop()  # its connection ends (EOF): `disconnect` runs as for any client
            return
        super().emit(session_id, event)

    def emit(self, session_id: str, event: EngineEvent) -> None:
        if isinstance(event, CommandsAvailable) or _PRIVATE_TO.get() is self:
            self.deliver(session_id, event)
            return
        if isinstance(event, SubagentStarted):
            # Whoever watches the parent watches its child too (the child's turn talks
            # through this link, the one of the parent's turn).
            for link in [self, *self._attachments.links(session_id)]:
                self._attachments.attach(event.child_session_id, link)
        for link in self._attachments.links(session_id):
            if link is not self:
                link.watch(session_id, event)
        self.deliver(session_id, event)

    async def flush(self, session_id: str) -> None:
        """Flush every attached connection; wait only for this one (a slow watcher must not
        hold up the turn: its own stall watchdog deals with it)."""
        for link in self._attachments.links(session_id):
            if link is not self and not link.closed:
                task = asyncio.ensure_future(link.flush_own(session_id))
                self._flushes.add(task)
                task.add_done_callback(self._flushes.discard)
        await self.flush_own(session_id)

    async def flush_own(self, session_id: str) -> None:
        await super().flush(session_id)

    # -- requests to this connection's client ---------------------------------------------

    async def request_approval(self, session_id: str, request: ApprovalRequest) -> ApprovalReply:
        if self.closed:
            logger.info("approval for a session of a disconnected client: rejected")
            return ApprovalReply("invalid")
        return await super().request_approval(session_id, request)

    async def request_elicitation(self, session_id: str, request: Elicitation) -> ElicitationAnswer:
        if self.closed:
            logger.info("elicitation for a session of a disconnected client: declined")
            return ElicitationAnswer("decline")
        return await super().request_elicitation(session_id, request)

    def file_access(self) -> ClientFileAccess:
        return ClientFileAccess() if self.closed else super().file_access()

    async def read_text_file(self, session_id: str, path: str) -> str:
        if self.closed:
            raise ClientFileError(CLIENT_GONE)
        return await super().read_text_file(session_id, path)

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        if self.closed:
            raise ClientFileError(CLIENT_GONE)
        await super().write_text_file(session_id, path, content)

    # -- leaving --------------------------------------------------------------------------

    def reject_pending(self) -> int:
        """Answer every request still waiting on this client with an error (an approval
        becomes a rejection, a file request a tool error); returns how many."""
        self.closed = True
        pending = 0
        for msg_id in list(self._protocol.outgoing):
            future = self._protocol.outgoing.pop(msg_id)
            if not future.done():
                future.set_exception(JsonRpcException(CLIENT_GONE, code=-32603))
                pending += 1
        return pending


class BroadcastLink:
    """The manager's link for events outside any request (MCP server status): they go to
    every connection attached to the session. Nothing is ever asked through it."""

    def __init__(self, attachments: Attachments) -> None:
        self._attachments = attachments

    def emit(self, session_id: str, event: EngineEvent) -> None:
        for link in self._attachments.links(session_id):
            link.watch(session_id, event)

    async def wait_writable(self) -> None:
        return None

    async def flush(self, session_id: str) -> None:
        for link in self._attachments.links(session_id):
            await link.flush_own(session_id)

    async def request_approval(self, session_id: str, request: ApprovalRequest) -> ApprovalReply:
        return ApprovalReply("invalid")

    async def request_elicitation(self, session_id: str, request: Elicitation) -> ElicitationAnswer:
        return ElicitationAnswer("decline")

    def file_access(self) -> ClientFileAccess:
        return ClientFileAccess()

    async def read_text_file(self, session_id: str, path: str) -> str:
        raise ClientFileError(CLIENT_GONE)

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        raise ClientFileError(CLIENT_GONE)


Handler = Callable[[Any], Awaitable[Any]]


class SharingServer(CodyServer):
    """A connection's pygls server: the daemon's handlers, with the attach/detach rules of
    the module docstring wrapped around the methods that open, close and delete sessions
    (which ones: `Method.session` in cody_protocol.methods)."""

    def __init__(self, attachments: Attachments, manager: SessionManager) -> None:
        super().__init__()
        self.attachments = attachments
        self.manager = manager
        self.link = SharedSessionLink(self.protocol, attachments)
        self.link.lineage_of = manager.lineage_of
        self.resume_live: Callable[[str], Awaitable[Any]] | None = None
        """Answers `session/resume` of a session that is running a turn (set by the app)."""

    def feature(self, feature_name: str, options: Any | None = None) -> Callable[[Any], Any]:
        register = super().feature(feature_name, options)

        def wrap(fn: Handler) -> Any:
            return register(self._hooked(feature_name, fn))

        return wrap

    def _hooked(self, method: str, fn: Handler) -> Handler:
        link = self.link
        attachments = self.attachments

        entry = methods.METHODS.get(method)
        use = entry.session if entry is not None else None  # the table's facts, not a list

        async def params_only(params: Any) -> Any:
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            if not isinstance(session_id, str):
                return await fn(params)
            if use == "loads":
                token = _PRIVATE_TO.set(link)
                try:
                    result = await fn(params)
                finally:
                    _PRIVATE_TO.reset(token)
                attachments.attach(session_id, link)
                return result
            if use == "resumes":
                if self.resume_live is not None and self._busy(session_id):
                    result = await self.resume_live(session_id)
                else:
                    result = await fn(params)
                attachments.attach(session_id, link)
                return result
            if use == "closes":
                others = [other for other in attachments.links(session_id) if other is not link]
                attachments.detach(session_id, link)
                if others and self._live(session_id):
                    return {}  # still open for the other connections
                return await fn(params)
            if use == "runs" and self._live(session_id):
                attachments.attach(session_id, link)
            result = await fn(params)
            if use == "deletes":
                attachments.forget(session_id)
            return result

        async def attach_result(params: Any) -> Any:
            result = await fn(params)
            session_id = result.get("sessionId") if isinstance(result, dict) else None
            if isinstance(session_id, str):
                attachments.attach(session_id, link)
            return result

        handler = attach_result if use == "creates" else params_only
        handler.__name__ = getattr(fn, "__name__", "handler")
        return handler

    def _live(self, session_id: str) -> bool:
        try:
            self.manager.get(session_id)
        except NotFound:
            return False
        return True

    def _busy(self, session_id: str) -> bool:
        try:
            return self.manager.get(session_id).busy
        except NotFound:
            return False

    async def disconnect(self) -> None:
        """The connection is gone (or said `shutdown`): see the module docstring."""
        rejected = self.link.reject_pending()
        if rejected:
            logger.info("a client left with %d request(s) pending: rejected", rejected)
        for session_id in self.attachments.sessions_of(self.link):
            if self.attachments.detach(session_id, self.link) and self._live(session_id):
                try:
                    await self.manager.close(session_id)
                except NotFound:
                    pass
