"""Spawning the daemon as a child process and talking to it over its stdio.

stderr is drained continuously (a chatty daemon must never block on a full pipe,
PYGLS_NOTES.md 2.6); closing sends `exit`, then kills the process after a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from .connection import Connection, Framing

__all__ = ["DaemonProcess", "daemon_command"]


def daemon_command() -> list[str]:
    """How to start the daemon: `$CODY_DAEMON` (a shell-split command) or this interpreter."""
    override = os.environ.get("CODY_DAEMON")
    if override:
        import shlex

        return shlex.split(override)
    return [sys.executable, "-m", "cody_daemon"]


class DaemonProcess:
    def __init__(self, process: asyncio.subprocess.Process, connection: Connection) -> None:
        self.process = process
        self.connection = connection
        self.stderr_lines: list[str] = []
        self._stderr_task: asyncio.Task[None] | None = None
        self.on_stderr: Callable[[str], None] | None = None

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        framing: Framing = "lsp",
        on_stderr: Callable[[str], None] | None = None,
    ) -> DaemonProcess:
        process = await asyncio.create_subprocess_exec(
            *(command or daemon_command()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            limit=256 * 1024 * 1024,
            # Its own session: a terminal's Ctrl-C goes to the client (which cancels the turn),
            # not to the daemon. The daemon still exits when the client goes away (stdin EOF).
            start_new_session=True,
        )
        assert process.stdin is not None and process.stdout is not None
        connection = Connection(process.stdout, process.stdin, framing=framing)
        daemon = cls(process, connection)
        daemon.on_stderr = on_stderr
        daemon._stderr_task = asyncio.create_task(daemon._drain_stderr())
        connection.start()
        return daemon

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while True:
            line = await self.process.stderr.readline()
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.stderr_lines.append(text)
            if self.on_stderr is not None:
                self.on_stderr(text)

    async def close(self, *, grace_s: float = 5.0) -> int | None:
        """Send `exit` and close stdin; kill the daemon if it has not exited after `grace_s`."""
        if self.process.returncode is None:
            with contextlib.suppress(Exception):
                self.connection.notify("exit")
                assert self.process.stdin is not None
                await self.process.stdin.drain()
                self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), grace_s)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        await self.connection.aclose()
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._stderr_task, 1.0)
        return self.process.returncode
