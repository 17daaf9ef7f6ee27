"""A real warm daemon (`cody-daemon --listen`) and test clients on its socket.

Each client is a `tests.support.daemon.Daemon` over a unix-socket connection instead of a
child's stdio, so it validates every update and approval request the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cody_client.connection import Connection, Framing

from . import stderr_report
from .daemon import DAEMON_COMMAND, CodyEnv, Daemon


def short_runtime_dir() -> Path:
    """A 0700 XDG_RUNTIME_DIR with a short path (a socket path holds at most 107 bytes)."""
    return Path(tempfile.mkdtemp(prefix="cody-rt-", dir="/tmp"))


class SocketPeer:
    """What `Daemon` needs of a daemon process, for one socket connection."""

    def __init__(self, connection: Connection, writer: asyncio.StreamWriter) -> None:
        self.connection = connection
        self.writer = writer
        self.on_stderr: Callable[[str], None] | None = None

    async def close(self) -> None:
        await self.connection.aclose()

    def kill(self) -> None:
        """Drop the connection at once, as the kernel does for a process killed with -9."""
        self.writer.transport.abort()


class WarmDaemon:
    def __init__(self, process: asyncio.subprocess.Process, cody_env: CodyEnv, path: Path) -> None:
        self.process = process
        self.env = cody_env
        self.path = path
        self.stderr: list[str] = []
        stderr_report.watch(f"warm daemon (pid {process.pid})", self.stderr)
        self._drain = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def start(cls, cody_env: CodyEnv, *args: str, timeout: float = 30) -> WarmDaemon:
        process = await asyncio.create_subprocess_exec(
            *DAEMON_COMMAND,
            "--listen",
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=cody_env.env,
            start_new_session=True,
        )
        assert process.stderr is not None
        before: list[str] = []
        while True:
            raw = await asyncio.wait_for(process.stderr.readline(), timeout)
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if not raw:
                raise AssertionError("the warm daemon did not start:\n" + "\n".join(before))
            before.append(line)
            if "listening on " in line:
                break
        path = Path(line.split("listening on ", 1)[1].split(" (pid", 1)[0])
        daemon = cls(process, cody_env, path)
        daemon.stderr[:0] = before
        return daemon

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    async def client(self, *, framing: Framing = "lsp", initialize: bool = True) -> Daemon:
        reader, writer = await asyncio.open_unix_connection(str(self.path), limit=1 << 26)
        connection = Connection(reader, writer, framing=framing)
        connection.start()
        client = Daemon(SocketPeer(connection, writer), self.env)  # type: ignore[arg-type]
        if initialize:
            await client.initialize()
        return client

    async def stop(self, timeout: float = 15) -> int:
        """SIGTERM, as a user stopping it would; the exit code."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError("the warm daemon did not stop on SIGTERM") from None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._drain, 2)
        return code


def warm_env(cody_env: CodyEnv, runtime_dir: Path, **extra: Any) -> dict[str, str]:
    """`cody_env.env` with a short private XDG_RUNTIME_DIR (the default socket's home)."""
    os.chmod(runtime_dir, 0o700)
    cody_env.env["XDG_RUNTIME_DIR"] = str(runtime_dir)
    cody_env.env.update({key: str(value) for key, value in extra.items()})
    return cody_env.env
