"""The daemon's stdio channel, with stdout reserved for protocol frames.

`guard_stdio()` duplicates fds 0 and 1 for the protocol, then points fd 1 at stderr and fd 0
at /dev/null, and sets `sys.stdout = sys.stderr`: a stray `print()` or a child process that
inherits fd 1 can no longer corrupt the frame stream (docs/architecture.md, "pygls pitfalls").

Reading and writing use asyncio pipe transports when the fds are pipes/sockets/ttys, and fall
back to a reader thread / blocking writes for regular files (e.g. `cody-daemon < input`).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO, SupportsIndex

__all__ = [
    "HIGH_WATER",
    "READ_LIMIT",
    "ByteSink",
    "InputReader",
    "StdioChannel",
    "WriteFlow",
    "guard_stdio",
    "open_channel",
]

READ_LIMIT = 1 << 20
"""Input buffered before the pipe is paused (FrameReader keeps its own, bounded buffer)."""
HIGH_WATER = 1 << 20
"""Output buffered for the client before producers wait (the bound of issue 8.11)."""


class InputReader(asyncio.StreamReader):
    """A StreamReader that calls `on_input` as bytes arrive, before any frame is parsed from
    them (the warm-up pauses at once: rpc/warm_up.py)."""

    on_input: Callable[[], None] | None = None

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        super().feed_data(data)
        if self.on_input is not None:
            self.on_input()


@dataclass(frozen=True, slots=True)
class StdioChannel:
    read_fd: int
    write_fd: int


def guard_stdio() -> StdioChannel:
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return StdioChannel(read_fd=read_fd, write_fd=write_fd)


class WriteFlow(asyncio.streams.FlowControlMixin):
    """Flow control that also remembers since when the client has not been taking output."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self.paused_since: float | None = None

    def pause_writing(self) -> None:
        self.paused_since = time.monotonic()
        super().pause_writing()

    def resume_writing(self) -> None:
        self.paused_since = None
        super().resume_writing()


class ByteSink:
    """Non-blocking writes to the client with a bounded buffer (issue 8.11).

    Invariants: `write` never blocks and never raises. Above `HIGH_WATER` buffered bytes the
    sink is *paused*: producers that can wait (turns, session replay) `wait_writable()`
    until the client has read it down to a quarter of that. A client that leaves the sink
    paused for `stall_timeout_s` is dropped (`drop()`): the transport is aborted, later
    writes are discarded and every waiter is released, so nothing waits on it forever.
    """

    def __init__(
        self, writer: asyncio.StreamWriter | None, raw: BinaryIO | None, flow: WriteFlow | None
    ) -> None:
        self._writer = writer
        self._raw = raw
        self._flow = flow
        self.broken = False
        self.dropped = False

    def write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            if self._writer is not None:
                self._writer.write(data)
            elif self._raw is not None:
                self._raw.write(data)
                self._raw.flush()
        except (BrokenPipeError, ConnectionResetError, OSError, RuntimeError):
            self.broken = True

    def buffered(self) -> int:
        if self._writer is None or self._writer.transport.is_closing():
            return 0
        return self._writer.transport.get_write_buffer_size()

    def stalled_for(self) -> float:
        """Seconds the buffer has been over the bound without the client reading it down."""
        if self._flow is None or self._flow.paused_since is None or self.broken:
            return 0.0
        return time.monotonic() - self._flow.paused_since

    async def drain(self) -> None:
        if self._writer is None or self.broken:
            return
        try:
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.broken = True

    async def wait_writable(self) -> None:
        """Return at once while the buffer is under the bound; else wait until drained."""
        if self.buffered() > HIGH_WATER:
            await self.drain()

    def drop(self) -> None:
        """Give up on a client that stopped reading: discard its output, release waiters."""
        self.dropped = True
        self.broken = True
        if self._writer is not None:
            self._writer.transport.abort()

    async def close(self) -> None:
        if self._writer is not None:
            if not self.broken:
                await self.drain()
            self._writer.close()
        elif self._raw is not None:
            try:
                self._raw.close()
            except OSError:
                pass


def _is_pipe_like(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def open_channel(channel: StdioChannel, first: bytes = b"") -> tuple[InputReader, ByteSink]:
    """The channel's reader and sink; `first`: bytes read from it before (rpc/first_answer.py),
    which the reader returns before anything the pipe still holds (given before the pipe is
    read at all: its end of input must come after them)."""
    loop = asyncio.get_running_loop()
    reader = InputReader(limit=READ_LIMIT)
    if first:
        reader.feed_data(first)
    read_file = os.fdopen(channel.read_fd, "rb", buffering=0)
    if _is_pipe_like(channel.read_fd) and not os.isatty(channel.read_fd):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_file)
    else:
        _start_reader_thread(loop, reader, read_file)
    write_file = os.fdopen(channel.write_fd, "wb", buffering=0)
    if _is_pipe_like(channel.write_fd) and not os.isatty(channel.write_fd):
        flow = WriteFlow(loop)
        transport, _ = await loop.connect_write_pipe(lambda: flow, write_file)
        writer = asyncio.StreamWriter(transport, flow, None, loop)
        transport.set_write_buffer_limits(high=HIGH_WATER)
        return reader, ByteSink(writer, None, flow)
    return reader, ByteSink(None, write_file, None)


def _start_reader_thread(
    loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, source: BinaryIO
) -> None:
    def pump() -> None:
        try:
            while True:
                chunk = source.read(65536)
                if not chunk:
                    break
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except (OSError, ValueError):
            pass
        finally:
            try:
                loop.call_soon_threadsafe(reader.feed_eof)
            except RuntimeError:
                pass

    threading.Thread(target=pump, name="cody-stdin", daemon=True).start()
