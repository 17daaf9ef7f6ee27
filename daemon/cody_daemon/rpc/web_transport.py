"""One WebSocket connection as the daemon's frame source and byte sink: each JSON-RPC message
is one text frame, both ways (docs/web.md, "The protocol").

The WebSocket protocol itself is the `websockets` library's; this module only adapts one
connection to what `serve_frames` (rpc/server.py) and the link (rpc/link.py) already use:

- `WebSocketFrames.read()` gives each text message's bytes; a binary message is a
  `FrameError` (answered -32700, the connection goes on); the end of the connection is None.
- `WebSocketSink` keeps `ByteSink`'s contract: `write()` never blocks and never raises (it
  queues one message; a task sends the queue in order); `buffered()` counts the queue and the
  socket's buffer; above `HIGH_WATER` the sink is paused (`wait_writable()` waits until it is
  read down to a quarter, `stalled_for()` tells the stall watchdog for how long), so a page
  that stops reading holds its own turns back and is dropped like any other client.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from .framing import FrameError, Framing
from .transport import HIGH_WATER, ByteSink

__all__ = ["WebSocketFrames", "WebSocketSink"]


class WebSocketFrames:
    """The messages of one WebSocket, as `serve_frames` reads them."""

    framing: Framing | None = "websocket"

    def __init__(
        self, connection: ServerConnection, on_input: Callable[[], None] | None = None
    ) -> None:
        self._connection = connection
        self._on_input = on_input

    async def read(self) -> bytes | FrameError | None:
        try:
            message = await self._connection.recv()
        except ConnectionClosed:
            return None
        if self._on_input is not None:
            self._on_input()
        if isinstance(message, bytes):
            return FrameError("a binary frame; send each JSON-RPC message as one text frame")
        return message.encode()


class WebSocketSink(ByteSink):
    """Messages to one WebSocket, sent in order by one task (see the module docstring)."""

    def __init__(self, connection: ServerConnection) -> None:
        super().__init__(None, None, None)
        self._connection = connection
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writable = asyncio.Event()
        self._writable.set()
        self._paused_since: float | None = None
        self._pump = asyncio.ensure_future(self._send_queue())

    def write(self, data: bytes) -> None:
        if self.broken:
            return
        self._queue.append(data)
        self._queued += len(data)
        self._idle.clear()
        self._wake.set()
        self._level_changed()

    def _socket_buffered(self) -> int:
        transport = self._connection.transport
        if transport is None or transport.is_closing():
            return 0
        return transport.get_write_buffer_size()

    def buffered(self) -> int:
        return self._queued + self._socket_buffered()

    def _level_changed(self) -> None:
        size = self.buffered()
        if size > HIGH_WATER:
            if self._paused_since is None:
                self._paused_since = time.monotonic()
                self._writable.clear()
        elif size <= HIGH_WATER // 4 and self._paused_since is not None:
            self._paused_since = None
            self._writable.set()

    async def _send_queue(self) -> None:
        try:
            while True:
                if not self._queue:
                    self._idle.set()
                    self._level_changed()
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                data = self._queue.popleft()
                self._queued -= len(data)
                await self._connection.send(data, text=True)
                self._level_changed()
        except (ConnectionClosed, OSError, RuntimeError):
            self._give_up()

    def _give_up(self) -> None:
        """Nothing more can be sent: discard the queue and release every waiter."""
        self.broken = True
        self._queue.clear()
        self._queued = 0
        self._paused_since = None
        self._idle.set()
        self._writable.set()

    def stalled_for(self) -> float:
        if self._paused_since is None or self.broken:
            return 0.0
        return time.monotonic() - self._paused_since

    async def drain(self) -> None:
        if not self.broken:
            await self._idle.wait()

    async def wait_writable(self) -> None:
        if self.buffered() > HIGH_WATER:
            await self._writable.wait()

    def drop(self) -> None:
        self.dropped = True
        self._give_up()
        self._pump.cancel()
        transport = self._connection.transport
        if transport is not None:
            transport.abort()

    async def close(self) -> None:
        if not self.broken:
            await self.drain()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump
        self.broken = True
        with contextlib.suppress(Exception):
            await self._connection.close()
