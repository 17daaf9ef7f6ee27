"""A real warm daemon with a web listener (`cody-daemon --listen ws://127.0.0.1:0`), test
clients over its WebSocket, and Debian's chromium driven by Playwright for Python.

`WebDaemon.client()` is a `tests.support.daemon.Daemon` whose connection runs over the
WebSocket (each message one text frame), so every update and approval request is validated
the same way as over stdio. `browser()` launches the system chromium (never a downloaded
one); tests that need it skip when it is missing, except under CI=true.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cody_client.connection import Connection
from websockets.asyncio.client import ClientConnection, connect

from . import stderr_report
from .daemon import DAEMON_COMMAND, CodyEnv, Daemon

CHROMIUM = os.environ.get("CODY_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=Translate,OptimizationHints,MediaRouter",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
_PAGE = re.compile(r"web page on (http://[^ ]+/) ")
_SOCKET = re.compile(r"listening on (/[^ ]+) \(pid")


class _WsWriter:
    """What `Connection` writes to, sending each NDJSON line as one text frame."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._buffer = b""
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._send())
        self.transport = ws.transport

    def write(self, data: bytes) -> None:
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            if line.strip():
                self._queue.put_nowait(line)

    async def _send(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                line = await self._queue.get()
                try:
                    await self._ws.send(line.decode())
                finally:
                    self._queue.task_done()

    async def drain(self) -> None:
        await self._queue.join()

    def close(self) -> None:
        self._task.cancel()
        self._closing = asyncio.ensure_future(self._ws.close())


class WebSocketPeer:
    """What `Daemon` needs of a daemon process, for one WebSocket connection."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        reader = asyncio.StreamReader(limit=1 << 26)
        self._pump = asyncio.ensure_future(self._read(reader))
        self.writer = _WsWriter(ws)
        self.connection = Connection(reader, self.writer, framing="ndjson")  # type: ignore[arg-type]
        self.connection.start()
        self.on_stderr: Any = None

    async def _read(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(Exception):
            async for message in self.ws:
                data = message.encode() if isinstance(message, str) else message
                reader.feed_data(data + b"\n")
        reader.feed_eof()

    async def close(self) -> None:
        await self.connection.aclose()
        with contextlib.suppress(Exception):
            await self.ws.close()

    def kill(self) -> None:
        self.ws.transport.abort()


class WebDaemon:
    def __init__(self, process: asyncio.subprocess.Process, cody_env: CodyEnv) -> None:
        self.process = process
        self.env = cody_env
        self.base_url = ""
        self.socket_path: Path | None = None
        self.stderr: list[str] = []
        stderr_report.watch(f"web daemon (pid {process.pid})", self.stderr)
        self._drain: asyncio.Future[None] | None = None

    @classmethod
    async def start(
        cls, cody_env: CodyEnv, *listen: str, extra: tuple[str, ...] = (), timeout: float = 30
    ) -> WebDaemon:
        """`listen`: the `--listen` values (default: ws://127.0.0.1:0 alone)."""
        values = listen or ("ws://127.0.0.1:0",)
        args: list[str] = []
        for value in values:
            args += ["--listen"] if value == "" else ["--listen", value]
        process = await asyncio.create_subprocess_exec(
            *DAEMON_COMMAND,
            *args,
            *extra,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=cody_env.env,
            start_new_session=True,
        )
        daemon = cls(process, cody_env)
        assert process.stderr is not None
        want_socket = "" in values
        while not daemon.base_url or (want_socket and daemon.socket_path is None):
            raw = await asyncio.wait_for(process.stderr.readline(), timeout)
            if not raw:
                raise AssertionError("the daemon did not start:\n" + "\n".join(daemon.stderr))
            line = raw.decode("utf-8", "replace").rstrip("\n")
            daemon.stderr.append(line)
            if found := _PAGE.search(line):
                daemon.base_url = found.group(1)
            if found := _SOCKET.search(line):
                daemon.socket_path = Path(found.group(1))
        daemon._drain = asyncio.ensure_future(daemon._read_stderr())
        return daemon

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    @property
    def netloc(self) -> str:
        return self.base_url.removeprefix("http://").rstrip("/")

    @property
    def ws_url(self) -> str:
        return f"ws://{self.netloc}/rpc"

    @property
    def token(self) -> str:
        return (self.env.cody_home / "web" / "token").read_text().strip()

    @property
    def page_url(self) -> str:
        return f"{self.base_url}#token={self.token}"

    async def client(self, *, initialize: bool = True) -> Daemon:
        """A client over the WebSocket, with the token as a bearer header."""
        ws = await connect(
            self.ws_url,
            additional_headers={"Authorization": f"Bearer {self.token}"},
            max_size=None,
        )
        client = Daemon(WebSocketPeer(ws), self.env)  # type: ignore[arg-type]
        if initialize:
            await client.initialize()
        return client

    async def stop(self, timeout: float = 15) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError("the web daemon did not stop on SIGTERM") from None
        if self._drain is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._drain, 2)
        return code


async def unix_client(daemon: WebDaemon, cody_env: CodyEnv) -> Daemon:
    """A client on the same daemon's unix socket (as cody-client connects), initialized."""
    from .warm_daemon import SocketPeer

    assert daemon.socket_path is not None
    reader, writer = await asyncio.open_unix_connection(str(daemon.socket_path), limit=1 << 26)
    connection = Connection(reader, writer, framing="lsp")
    connection.start()
    client = Daemon(SocketPeer(connection, writer), cody_env)  # type: ignore[arg-type]
    await client.initialize()
    return client


def require_chromium() -> str:
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {CHROMIUM} is missing (apt-get install chromium)")
    pytest.skip(f"{CHROMIUM} is missing")
    raise AssertionError("unreachable")


@contextlib.asynccontextmanager
async def browser() -> AsyncIterator[Any]:
    """Debian's chromium, headless, under Playwright (never a downloaded browser)."""
    executable = require_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()


def seed_agent_sessions(env: CodyEnv) -> dict[str, Path]:
    """A Codex and a Claude Code session (real CLI files: tests/fixtures/history) where the
    agents keep them."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "history"
    codex_day = env.root / "codex-home" / "sessions" / "2026" / "11" / "22"
    codex_day.mkdir(parents=True, exist_ok=True)
    codex = codex_day / "rollout-2026-11-22T04-01-05-01a2016a-2cc7-7713-957a-8f7d89039f89.jsonl"
    shutil.copy(fixtures / "codex" / "rollout_exec_resumed.jsonl", codex)
    project = env.root / "claude-config" / "projects" / "-home-dev-project"
    project.mkdir(parents=True, exist_ok=True)
    claude = project / "62ba3d6f-69b4-4fb2-b809-98dd28854f87.jsonl"
    shutil.copy(fixtures / "claude" / "session.jsonl", claude)
    return {"codex": codex, "claude": claude}
