"""The plumbing every mock server in tests/support shares: a real TCP listener on a free port.

`LoopbackServer` listens on `host` (127.0.0.1 unless told), serves each connection in its own
task through the subclass's `_serve`, and closes the connection after it (a client that
hangs up early is not an error). `stop()` (or leaving `async with`) cancels the connections
still open, so a test never leaks a task into the next one.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from contextlib import suppress
from typing import Any, Self

__all__ = ["LoopbackServer", "read_request_head"]


class LoopbackServer(ABC):
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        """The port listened on, once started."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @abstractmethod
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one connection (it is closed afterwards)."""

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            # OSError: a connection whose TLS handshake failed (tls_proxy.py) ends with one.
            with suppress(OSError, asyncio.CancelledError):
                await writer.wait_closed()


async def read_request_head(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str]]:
    """An HTTP/1.1 request's method, path (with its query) and headers (names lower-case);
    the body is left in `reader`."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, path, headers
