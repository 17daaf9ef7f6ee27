"""Spawning the daemon as a child process and talking to it over its stdio.

stderr is drained continuously (a chatty daemon must never block on a full pipe); only its
last `STDERR_TAIL_LINES` lines are kept, to explain an unexpected exit. Closing sends `exit`,
then kills the process after a grace period.

Finding the daemon (the client library does not depend on it): `$CODY_DAEMON` (a command line),
else `cody_daemon` importable by this interpreter, else `cody-daemon` on PATH.

A daemon already started with `subprocess.Popen` (`launch` does so for `exec` before asyncio is
even imported) is taken over by `DaemonProcess.adopt`: its pipes become asyncio streams and
its exit is awaited through a pidfd, so the rest of the client cannot tell the difference.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Protocol

from .connection import Connection, Framing
from .daemon_command import DaemonNotFound, daemon_command
from .process_start import spawn_options, start_daemon_process

__all__ = [
    "STDERR_TAIL_LINES",
    "DaemonNotFound",
    "DaemonProcess",
    "daemon_command",
    "start_daemon_process",
]

STDERR_TAIL_LINES = 200
READ_LIMIT = 256 * 1024 * 1024
"""The longest line (ndjson frame) a stream of the daemon's takes."""


class ChildProcess(Protocol):
    """What the client uses of its daemon's process (`asyncio.subprocess.Process` has it)."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...
    @property
    def stdout(self) -> asyncio.StreamReader | None: ...
    @property
    def stderr(self) -> asyncio.StreamReader | None: ...
    async def wait(self) -> int: ...
    def send_signal(self, sig: int) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


class AdoptedProcess:
    """A `subprocess.Popen` child seen through asyncio streams (see `DaemonProcess.adopt`)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        self._popen = popen
        self.stdin: asyncio.StreamWriter | None = stdin
        self.stdout: asyncio.StreamReader | None = stdout
        self.stderr: asyncio.StreamReader | None = stderr

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        if self._popen.poll() is None:
            try:
                pidfd = os.pidfd_open(self._popen.pid)
            except (AttributeError, OSError):  # no pidfd (old kernel): a thread waits
                return await asyncio.to_thread(self._popen.wait)
            loop = asyncio.get_running_loop()
            ended: asyncio.Future[None] = loop.create_future()

            def readable() -> None:
                if not ended.done():
                    ended.set_result(None)

            loop.add_reader(pidfd, readable)
            try:
                await ended
            finally:
                loop.remove_reader(pidfd)
                os.close(pidfd)
        return self._popen.wait()

    def send_signal(self, sig: int) -> None:
        if self._popen.poll() is None:
            self._popen.send_signal(sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


async def _stream_reader(pipe: IO[bytes]) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


async def _stream_writer(pipe: IO[bytes]) -> asyncio.StreamWriter:
    loop = asyncio.get_running_loop()
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop))
    transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    return asyncio.StreamWriter(transport, protocol, None, loop)


class DaemonProcess:
    def __init__(self, process: ChildProcess, connection: Connection) -> None:
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
        return cls._attach(process, framing, on_stderr)

    @classmethod
    async def adopt(
        cls,
        popen: subprocess.Popen[bytes],
        *,
        framing: Framing = "lsp",
        on_stderr: Callable[[str], None] | None = None,
    ) -> DaemonProcess:
        """Take over a daemon started by `start_daemon_process` (its pipes and its exit)."""
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        process = AdoptedProcess(
            popen,
            await _stream_writer(popen.stdin),
            await _stream_reader(popen.stdout),
            await _stream_reader(popen.stderr),
        )
        return cls._attach(process, framing, on_stderr)

    @classmethod
    def _attach(
        cls,
        process: ChildProcess,
        framing: Framing,
        on_stderr: Callable[[str], None] | None,
    ) -> DaemonProcess:
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
    return await asyncio.create_subprocess_exec(*argv, limit=READ_LIMIT, **spawn_options(env, cwd))
