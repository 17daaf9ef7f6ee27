"""A JSON-RPC 2.0 connection over asyncio streams, in either of Cody's framings.

Both sides send requests: `request()` awaits an answer (a `RemoteError` on error, of the
subclass for its code: cody_client.errors), and
`on_request` registers async handlers for the daemon's requests (approvals). A handler is
cancelled when the daemon cancels its request (`$/cancelRequest` or `$/cancel_request`);
no answer is sent then. Notifications go to `on_notification` handlers in arrival order.

Invariants: nothing received is kept after it is dispatched (memory stays bounded; `observe`
lets a caller trace messages); an exception in a handler is logged and never ends the
connection; a frame the daemon garbles ends the connection with a `ConnectionClosed` that says
so (not "the daemon closed the connection").
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import orjson

from .errors import RemoteError, remote_error

__all__ = ["Connection", "ConnectionClosed", "Framing", "FramingError", "RemoteError"]

logger = logging.getLogger(__name__)

Framing = Literal["lsp", "ndjson"]
RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], None]


class ConnectionClosed(Exception):
    """The other side went away before answering (or sent something unreadable)."""


class FramingError(Exception):
    """The byte stream is not valid framing (e.g. a malformed Content-Length header)."""


class Connection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        framing: Framing = "lsp",
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.framing: Framing = framing
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._request_handlers: dict[str, RequestHandler] = {}
        self._notification_handlers: dict[str, list[NotificationHandler]] = {}
        self._incoming: dict[int | str, asyncio.Task[None]] = {}
        self._read_task: asyncio.Task[None] | None = None
        self._observers: list[Callable[[dict[str, Any]], None]] = []
        self.closed = asyncio.Event()
        self.close_reason = "the daemon closed the connection"
        """Why the connection ended; `ConnectionClosed` errors carry it."""
        self.describe_eof: Callable[[], str] | None = None
        """Called at end of stream for a better reason (e.g. the daemon's exit and last stderr)."""

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self._read_task is None:
            self._read_task = asyncio.create_task(self._read_loop(), name="cody-client-reader")

    async def aclose(self) -> None:
        if self._read_task is not None:
            self._read_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._read_task
        for task in list(self._incoming.values()):
            task.cancel()
        with contextlib.suppress(Exception):
            self._writer.close()

    # -- registration ---------------------------------------------------------------------

    def on_request(self, method: str, handler: RequestHandler) -> None:
        self._request_handlers[method] = handler

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        self._notification_handlers.setdefault(method, []).append(handler)

    def observe(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `callback` with every message received, before it is dispatched (tracing).

        Returns a function that stops observing. An observer that raises is logged and kept.
        """
        self._observers.append(callback)
        return lambda: self._observers.remove(callback)

    # -- sending --------------------------------------------------------------------------

    def _frame(self, body: bytes) -> bytes:
        if self.framing == "lsp":
            return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        return body + b"\n"

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (tests use it to send malformed frames)."""
        self._writer.write(data)

    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(self._frame(orjson.dumps(message)))

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    async def request(
        self, method: str, params: Any = None, *, msg_id: int | str | None = None
    ) -> Any:
        if self.closed.is_set():
            raise ConnectionClosed(f"{self.close_reason} (before {method})")
        request_id = msg_id if msg_id is not None else next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        try:
            await self._writer.drain()
            return await future
        finally:
            self._pending.pop(request_id, None)

    def cancel_request(self, msg_id: int | str) -> None:
        """Ask the other side to cancel one of our requests (framing-appropriate form)."""
        if self.framing == "ndjson":
            self.notify("$/cancel_request", {"requestId": msg_id})
        else:
            self.notify("$/cancelRequest", {"id": msg_id})

    # -- receiving ------------------------------------------------------------------------

    async def _read_message(self) -> bytes | None:
        if self.framing == "ndjson":
            while True:
                line = await self._reader.readline()
                if not line:
                    return None
                if line.strip():
                    return line
        length = None
        while True:
            line = await self._reader.readline()
            if not line:
                return None
            if not line.strip():
                if length is not None:
                    break
                continue
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = -1
                if length < 0:
                    raise FramingError(f"malformed Content-Length header: {line[:80]!r}")
        return await self._reader.readexactly(length)

    async def _read_loop(self) -> None:
        try:
            while True:
                try:
                    body = await self._read_message()
                except (asyncio.IncompleteReadError, ConnectionError):
                    body = None
                except FramingError as exc:
                    self.close_reason = f"the daemon sent an unreadable frame ({exc})"
                    logger.error("%s", self.close_reason)
                    return
                if body is None:
                    if self.describe_eof is not None:
                        self.close_reason = self.describe_eof()
                    return
                try:
                    message = orjson.loads(body)
                except orjson.JSONDecodeError:
                    logger.warning("ignoring an unparsable message from the daemon")
                    continue
                if isinstance(message, dict):
                    for observer in list(self._observers):
                        _call_safely(observer, message, "an observer")
                    self._dispatch(message)
        finally:
            self.closed.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed(self.close_reason))

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        msg_id = message.get("id")
        if "id" in message and (not isinstance(msg_id, int | str) or isinstance(msg_id, bool)):
            logger.warning("ignoring a message from the daemon with an invalid id")
            return
        if method is None:
            future = self._pending.get(msg_id) if msg_id is not None else None
            if future is None or future.done():
                return
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                code = error.get("code")
                future.set_exception(
                    remote_error(
                        code if isinstance(code, int) and not isinstance(code, bool) else -32603,
                        str(error.get("message", "")),
                        error.get("data"),
                    )
                )
            else:
                future.set_result(message.get("result"))
            return
        if not isinstance(method, str):
            logger.warning("ignoring a message from the daemon with an invalid method")
            return
        params = message.get("params")
        if msg_id is not None:
            self._start_incoming(msg_id, method, params)
            return
        if method in ("$/cancelRequest", "$/cancel_request"):
            key = "id" if method == "$/cancelRequest" else "requestId"
            target = params.get(key) if isinstance(params, dict) else None
            task = self._incoming.pop(target, None) if target is not None else None
            if task is not None:
                task.cancel()
        for handler in list(self._notification_handlers.get(method, [])):
            _call_safely(handler, params, f"the {method} handler")

    def _start_incoming(self, msg_id: int | str, method: str, params: Any) -> None:
        handler = self._request_handlers.get(method)

        async def run() -> None:
            if handler is None:
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": msg_id,
                        "error": {"code": -32601, "message": f"Method not found: {method}"},
                    }
                )
                return
            try:
                result = await handler(params)
            except asyncio.CancelledError:
                return
            except RemoteError as exc:
                error: dict[str, Any] = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    error["data"] = exc.data
                self.send({"jsonrpc": "2.0", "id": msg_id, "error": error})
            except Exception as exc:  # a client bug must not kill the connection
                logger.exception("handler for %s failed", method)
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": msg_id,
                        "error": {"code": -32603, "message": f"client error: {exc}"},
                    }
                )
            else:
                self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})
            finally:
                self._incoming.pop(msg_id, None)

        self._incoming[msg_id] = asyncio.create_task(run(), name=f"cody-client-{method}")


def _call_safely(callback: Callable[[Any], None], argument: Any, what: str) -> None:
    """A caller's bug is logged with its traceback; it never ends the connection."""
    try:
        callback(argument)
    except Exception:
        logger.exception("%s raised; the connection goes on", what)
