"""Spawning the daemon as a child process and talking to it over its stdio.

stderr is drained continuously (a chatty daemon must never block on a full pipe); only its
last `STDERR_TAIL_LINES` lines are kept, to explain an unexpected exit. Closing sends `exit`,
then kills the process after a grace period.

Finding the daemon (the client library does not depend on it): `$CODY_DAEMON` (a command line),
else `cody_daemon` importable by this interpreter, else `cody-daemon` on PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import shutil
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from .connection import Connection, Framing

__all__ = ["STDERR_TAIL_LINES", "DaemonNotFound", "DaemonProcess", "daemon_command"]

STDERR_TAIL_LINES = 200


class DaemonNotFound(Exception):
    """No daemon to start: neither `$CODY_DAEMON`, nor `cody_daemon`, nor `cody-daemon` on PATH."""


def daemon_command() -> list[str]:
    """How to start the daemon: `$CODY_DAEMON`, this interpreter's `cody_daemon`, or PATH."""
    override = os.environ.get("CODY_DAEMON")
    if override:
        import shlex

        return shlex.split(override)
    if importlib.util.find_spec("cody_daemon") is not None:
        return [sys.executable, "-m", "cody_daemon"]
    on_path = shutil.which("cody-daemon")
    if on_path is not None:
        return [on_path]
    raise DaemonNotFound(
        "Cody's daemon is not installed: install it next to the client "
        "(`uv tool install cody-client[daemon]` or `pip install cody-daemon`), put "
        "`cody-daemon` on PATH, or set CODY_DAEMON to the command that starts it."
    )


class DaemonProcess:
    def __init__(self, process: asyncio.subprocess.Process, connection: Connection) -> None:
        self.process = process
        self.connection = connection
        self.stderr_lines: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        """The daemon's last stderr lines (bounded), for explaining an unexpected exit."""
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
        argv = list(command or daemon_command())
        try:
            process = await _start(argv, env=env, cwd=cwd)
        except (FileNotFoundError, PermissionError) as exc:
            raise DaemonNotFound(
                f"could not start the daemon ({' '.join(argv)}): {exc.strerror or exc}"
            ) from None
        assert process.stdin is not None and process.stdout is not None
        connection = Connection(process.stdout, process.stdin, framing=framing)
        daemon = cls(process, connection)
        daemon.on_stderr = on_stderr
        daemon._stderr_task = asyncio.create_task(daemon._drain_stderr())
        connection.describe_eof = daemon.describe_exit
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
                try:
                    self.on_stderr(text)
                except Exception:  # a caller's bug must not stop the draining
                    logging.getLogger(__name__).exception("on_stderr raised")

    def describe_exit(self) -> str:
        """'the daemon closed the connection', with its exit code and last stderr when known."""
        text = "the daemon closed the connection"
        code = self.process.returncode
        if code is not None:
            text += f" (exit code {code})"
        tail = [line for line in list(self.stderr_lines)[-5:] if line.strip()]
        if tail:
            text += "; its last messages:\n  " + "\n  ".join(tail)
        return text

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


async def _start(
    argv: Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
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
