"""Serving the protocol on stdio: read frames, validate envelopes, dispatch through pygls.

The envelope checks pygls does not do live here (docs/architecture.md, "pygls pitfalls": params-less requests, lost cancels, unanswered malformed input): malformed
JSON (-32700), batches and non-requests (-32600, id null), requests before `initialize`
(-32600), both cancel forms, and `exit`. Everything that passes goes to pygls' dispatcher,
which runs the async handlers as tasks and answers unknown methods with -32601.

Exit: on stdin EOF, `exit`, or SIGTERM/SIGINT/SIGHUP, running turns are cancelled, session files are synced and
closed, and `serve` returns the process exit code (0; 1 for `exit` without `shutdown`, or
when a client that stopped reading its output was dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from cody_protocol.codes import ErrorCode
from cody_protocol.methods import CANCEL_REQUEST_ACP, CANCEL_REQUEST_LSP, EXIT, INITIALIZE, SHUTDOWN
from pygls.exceptions import JsonRpcException, PyglsError
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage
from pygls.server import JsonRPCServer

from .. import startup_gc
from .framing import FrameError, FrameReader, Framing, FramingMode
from .protocol import CodyProtocol, make_converter
from .transport import ByteSink, StdioChannel, open_channel
from .warm_up import WarmUp

if TYPE_CHECKING:
    from ..app import DaemonApp
    from .first_answer import FirstRead

__all__ = ["DEFAULT_STALL_TIMEOUT_S", "CodyServer", "FrameSource", "serve_frames", "serve_stdio"]

logger = logging.getLogger(__name__)


class FrameSource(Protocol):
    """Where one client's messages come from: `FrameReader` on a byte stream (stdio, a unix
    socket) or one WebSocket's messages (rpc/web_transport.py)."""

    @property
    def framing(self) -> Framing | None: ...

    async def read(self) -> bytes | FrameError | None: ...


class CodyServer(JsonRPCServer):
    protocol: CodyProtocol

    def __init__(self) -> None:
        super().__init__(protocol_cls=CodyProtocol, converter_factory=make_converter)

    def report_server_error(
        self, error: Exception, source: type[PyglsError] | type[JsonRpcException]
    ) -> None:
        logger.debug("pygls reported %s from %s", error.__class__.__name__, source.__name__)


class _Dispatcher:
    def __init__(self, server: CodyServer) -> None:
        self.server = server
        self.protocol = server.protocol
        self.initialize_seen = False
        self.shutdown_requested = False
        self.exit_requested = False

    def dispatch(self, body: bytes) -> None:
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            self._unacceptable(body, exc)
            return
        if isinstance(message, list):
            self.protocol.send_error(
                None, ErrorCode.INVALID_REQUEST, "Invalid request: batches are not supported"
            )
            return
        if not isinstance(message, dict):
            self.protocol.send_error(
                None, ErrorCode.INVALID_REQUEST, "Invalid request: expected a JSON object"
            )
            return
        msg_id = message.get("id")
        valid_id = msg_id is None or (
            isinstance(msg_id, str | int) and not isinstance(msg_id, bool)
        )
        reply_id = msg_id if valid_id else None
        if message.get("jsonrpc") != "2.0":
            self.protocol.send_error(
                reply_id, ErrorCode.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"'
            )
            return
        method = message.get("method")
        if method is None:
            self._response(message, valid_id)
            return
        if not isinstance(method, str) or not valid_id:
            self.protocol.send_error(
                reply_id, ErrorCode.INVALID_REQUEST, "Invalid request: bad method or id"
            )
            return
        params = message.get("params")
        if "id" in message:
            self._request(msg_id, method, params)
        else:
            self._notification(method, params)

    def _unacceptable(self, body: bytes, exc: orjson.JSONDecodeError) -> None:
        """Not JSON (-32700, id null), or JSON Cody cannot take: answered with its id.

        Valid JSON that Cody refuses (a number out of double range, a lone surrogate) still
        names its request, so the client is not left waiting. (Nesting deeper than either
        parser allows is -32700 with id null: neither can read the id.)
        """
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            self.protocol.send_error(None, ErrorCode.PARSE_ERROR, f"Parse error: {exc}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.protocol.send_error(None, ErrorCode.PARSE_ERROR, f"Parse error: {exc}")
            return
        msg_id = message.get("id")
        valid_id = _usable_id(msg_id)
        if "method" not in message:
            self._response(message, valid_id)  # e.g. an approval answer: still delivered
        elif "id" in message:
            self.protocol.send_error(
                msg_id if valid_id else None,
                ErrorCode.INVALID_REQUEST,
                f"Invalid request: JSON that Cody cannot accept: {exc}",
            )
        else:
            logger.info("ignoring a notification Cody cannot decode: %s", exc)

    def _response(self, message: dict[str, Any], valid_id: bool) -> None:
        msg_id = message.get("id")
        if "result" not in message and "error" not in message:
            if "id" in message:
                self.protocol.send_error(
                    msg_id if valid_id else None,
                    ErrorCode.INVALID_REQUEST,
                    "Invalid request: no method, result or error",
                )
            return
        if msg_id is None or not valid_id:
            # JSON-RPC never answers a response, not even a malformed one (a client's error
            # answer with id null, e.g. to a frame it could not parse): log it, go on.
            logger.warning(
                "ignoring a response from the client with id %s: %s",
                "null" if msg_id is None else "of an invalid type",
                _describe_error(message.get("error")) if "error" in message else "a result",
            )
            return
        if not self.protocol.resolve_answer(msg_id, message):
            # A late answer to a request we withdrew (approval timeout or cancel), or an id
            # that was never ours (e.g. the id of one of the client's own requests).
            logger.info("ignoring a response to id %r: no request of ours waits for it", msg_id)

    def _request(self, msg_id: Any, method: str, params: Any) -> None:
        if method == INITIALIZE:
            self.initialize_seen = True
        elif not self.initialize_seen:
            self.protocol.send_error(
                msg_id, ErrorCode.INVALID_REQUEST, "Invalid request: send initialize first"
            )
            return
        elif self.shutdown_requested and method != SHUTDOWN:
            self.protocol.send_error(
                msg_id, ErrorCode.INVALID_REQUEST, "Invalid request: the daemon is shutting down"
            )
            return
        if method == SHUTDOWN:
            self.shutdown_requested = True
        self.protocol.handle_message(
            JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)
        )

    def _notification(self, method: str, params: Any) -> None:
        if method == EXIT:
            self.exit_requested = True
            return
        if method in (CANCEL_REQUEST_LSP, CANCEL_REQUEST_ACP):
            key = "id" if method == CANCEL_REQUEST_LSP else "requestId"
            target = params.get(key) if isinstance(params, dict) else None
            if isinstance(target, str | int) and not isinstance(target, bool):
                self.protocol.cancel_incoming(target)
            return
        if not self.initialize_seen:
            logger.info("ignoring notification %s before initialize", method)
            return
        self.protocol.handle_message(
            JsonRPCNotification(method=method, jsonrpc="2.0", params=params)
        )


DEFAULT_STALL_TIMEOUT_S = 300.0
"""How long a client may leave its output unread (over the bound) before it is dropped."""


def _describe_error(error: Any) -> str:
    """An error object of the client's, for the log: its code and message, cut short."""
    if not isinstance(error, dict):
        return "an error of an invalid shape"
    code, message = error.get("code"), error.get("message")
    text = message[:200] if isinstance(message, str) else ""
    return f"error {code!r}: {text!r}"


def _usable_id(msg_id: Any) -> bool:
    """A string or integer id we can send back (a lone surrogate cannot be encoded)."""
    if isinstance(msg_id, bool) or not isinstance(msg_id, str | int):
        return False
    if isinstance(msg_id, str):
        try:
            msg_id.encode()
        except UnicodeEncodeError:
            return False
    return True


async def _drop_a_stalled_client(sink: ByteSink, timeout_s: float, stop: asyncio.Event) -> None:
    """Issue 8.11: a client that stops reading must not leave every turn waiting forever.

    Turns wait for the client at their next update once its unread output passes the bound
    (transport.HIGH_WATER); if it stays there for `timeout_s`, the client is dropped: the
    daemon logs why, cancels and persists every turn, and exits with code 1.
    """
    interval = max(0.05, min(1.0, timeout_s / 4))
    while True:
        await asyncio.sleep(interval)
        stalled = sink.stalled_for()
        if stalled > timeout_s:
            logger.error(
                "the client has not read its output for %.1f s (%d bytes unread); "
                "dropping it: running turns are cancelled and saved, the daemon exits",
                stalled,
                sink.buffered(),
            )
            sink.drop()
            stop.set()
            return


async def serve_stdio(
    app: DaemonApp,
    channel: StdioChannel,
    framing: FramingMode,
    *,
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
    warm_up: bool = True,
    first: FirstRead | None = None,
) -> int:
    """Serve until EOF or `exit`; returns the exit code. `warm_up`: load what the first
    session request needs while the client is quiet (rpc/warm_up.py). `first`: what was read
    (and maybe answered: `initialize`) before the server started (rpc/first_answer.py)."""
    server = app.server
    reader, sink = await open_channel(channel, first.data if first is not None else b"")
    server.protocol.attach(sink)
    initialized = False
    if first is not None and first.framing is not None and first.capabilities is not None:
        app.set_client_capabilities(first.capabilities)  # `initialize` was answered
        framing = server.protocol.framing = first.framing
        initialized = True
        startup_gc.resume()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
    warming = WarmUp(loop) if warm_up else None
    if warming is not None:
        reader.on_input = warming.heard
        warming.start()
    dispatcher = await serve_frames(
        server,
        FrameReader(reader, framing),
        sink,
        stop=stop,
        stall_timeout_s=stall_timeout_s,
        initialized=initialized,
    )
    if warming is not None:
        warming.stop()
    await app.shutdown()
    await asyncio.sleep(0)
    await sink.close()
    if sink.dropped:
        return 1
    if dispatcher.exit_requested and not dispatcher.shutdown_requested:
        return 1
    return 0


async def serve_frames(
    server: CodyServer,
    frames: FrameSource,
    sink: ByteSink,
    *,
    stop: asyncio.Event,
    stall_timeout_s: float,
    initialized: bool = False,
) -> _Dispatcher:
    """Read and dispatch one client's frames until EOF, `exit`, or `stop` (also set when the
    client is dropped for not reading). The caller attached `sink` and closes it.
    `initialized`: `initialize` was answered already (rpc/first_answer.py)."""
    stopped = asyncio.ensure_future(stop.wait())
    watchdog = asyncio.ensure_future(_drop_a_stalled_client(sink, stall_timeout_s, stop))
    dispatcher = _Dispatcher(server)
    dispatcher.initialize_seen = initialized
    try:
        while not dispatcher.exit_requested:
            next_frame = asyncio.ensure_future(frames.read())
            await asyncio.wait({next_frame, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not next_frame.done():
                next_frame.cancel()
                break
            frame = next_frame.result()
            if frame is None:
                break
            if frames.framing is not None:
                server.protocol.framing = frames.framing
            if isinstance(frame, FrameError):
                server.protocol.send_error(
                    None, ErrorCode.PARSE_ERROR, f"Parse error: {frame.message}"
                )
                continue
            dispatcher.dispatch(frame)
    finally:
        stopped.cancel()
        watchdog.cancel()
    return dispatcher
