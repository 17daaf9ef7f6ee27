"""The daemon's side of a launcher (launcher.py): start one, start commands through it.

Invariants:
- A launcher is spawned from the event loop's thread, which lives as long as the daemon
  (its `PR_SET_PDEATHSIG`, and bubblewrap's `--die-with-parent` for a session's network
  namespace, follow the thread that forked it, not the process).
- It gets no credential: its environment is empty; every command brings its own.
- `spawn` hands the launcher the command's descriptors and returns once the command runs
  (its pid) or failed to start (`SpawnError`, with the reason); the caller closes its own
  copies of the descriptors it passed. Nothing here blocks the event loop: sends are
  non-blocking (a launcher that stopped reading is an error, not a wait).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LAUNCHER", "Launcher", "LauncherError", "SpawnError", "SpawnRequest", "Started"]

log = logging.getLogger(__name__)

LAUNCHER = Path(__file__).with_name("launcher.py")
READY_TIMEOUT_S = 15.0
"""How long a new launcher may take to say it is ready (a loaded machine; bubblewrap)."""
STDERR_KEPT = 2048


class LauncherError(Exception):
    """The launcher could not be started, or is gone."""


class SpawnError(Exception):
    """The command could not be started (`cannot run X: No such file or directory`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SpawnRequest:
    argv: Sequence[str]
    cwd: str
    env: Mapping[str, str]
    tty: bool = False
    """fd 0 is a terminal: it becomes the command's controlling terminal."""
    grace_s: float = 2.0
    """After `term`, how long before everything left is killed."""

    def payload(self, fd_count: int) -> bytes:
        return json.dumps(
            {
                "argv": list(self.argv),
                "cwd": self.cwd,
                "env": dict(self.env),
                "tty": self.tty,
                "grace_s": self.grace_s,
                "fds": fd_count,
            }
        ).encode()


@dataclass(slots=True)
class Started:
    """A running command: its pid (in the daemon's pid namespace) and its control socket
    (`term`, `kill`; the exit arrives on it as `{"exit": CODE, "signal": N}`)."""

    pid: int
    control: socket.socket

    async def next_message(self) -> dict[str, Any] | None:
        """The reaper's next message; None when it is gone without one."""
        loop = asyncio.get_running_loop()
        try:
            data = await loop.sock_recv(self.control, 4096)
        except OSError:
            return None
        if not data:
            return None
        try:
            message = json.loads(data)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def send(self, word: bytes) -> None:
        """`term` or `kill`; ignored once the reaper is gone."""
        with contextlib.suppress(OSError):
            self.control.send(word)

    def close(self) -> None:
        self.control.close()


class Launcher:
    def __init__(
        self, process: asyncio.subprocess.Process, control: socket.socket, label: str
    ) -> None:
        self.process = process
        self.control = control
        self.label = label
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, prefix: Sequence[str] = (), *, label: str = "launcher") -> Launcher:
        """A new launcher, under `prefix` (bubblewrap for a network namespace) when given."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = await asyncio.create_subprocess_exec(
                *prefix,
                sys.executable,
                "-I",
                "-S",
                str(LAUNCHER),
                stdin=theirs.fileno(),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env={},
                start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            raise LauncherError(f"cannot start the {label}: {exc.strerror or exc}") from None
        finally:
            theirs.close()
        ours.setblocking(False)
        launcher = cls(process, ours, label)
        launcher._stderr_task = asyncio.ensure_future(launcher._drain_stderr())
        try:
            ready = await asyncio.wait_for(
                asyncio.get_running_loop().sock_recv(ours, 4096), READY_TIMEOUT_S
            )
        except (TimeoutError, OSError):
            ready = b""
        except BaseException:  # cancelled: nothing is left running
            await launcher.close()
            raise
        if not ready:
            await launcher.close()
            why = launcher.stderr_text() or "it ended before it was ready"
            raise LauncherError(f"cannot start the {label}: {why}")
        return launcher

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        if stream is None:
            return
        while line := await stream.readline():
            self._stderr += line
            del self._stderr[:-STDERR_KEPT]
            log.warning("%s: %s", self.label, line.decode("utf-8", "replace").rstrip())

    def stderr_text(self) -> str:
        return bytes(self._stderr).decode("utf-8", "replace").strip()

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and self.control.fileno() >= 0

    @property
    def pid(self) -> int:
        return self.process.pid

    async def spawn(self, request: SpawnRequest, fds: Sequence[int]) -> Started:
        """Start `request` with `fds` as its descriptors 0, 1, 2...; raises SpawnError when
        the command cannot start, LauncherError when the launcher is gone."""
        if not self.alive:
            raise LauncherError(f"the {self.label} is not running")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        payload = os.memfd_create("cody-spawn", os.MFD_CLOEXEC)
        try:
            os.write(payload, request.payload(len(fds)))
            socket.send_fds(self.control, [b"spawn"], [payload, theirs.fileno(), *fds])
        except OSError as exc:
            ours.close()
            raise LauncherError(
                f"the {self.label} does not answer: {exc.strerror or exc}"
            ) from None
        finally:
            os.close(payload)
            theirs.close()
        ours.setblocking(False)
        started = Started(pid=0, control=ours)
        try:
            first = await started.next_message()
        except BaseException:  # cancelled: closing the socket stops the command (`term`)
            started.close()
            raise
        if first is None or not isinstance(first.get("pid"), int):
            started.close()
            if first is not None and isinstance(first.get("error"), str):
                raise SpawnError(first["error"])
            raise LauncherError(f"the {self.label} ended while starting a command")
        started.pid = first["pid"]
        return started

    async def close(self) -> None:
        """End the launcher (its commands get SIGTERM from their reapers, then SIGKILL)."""
        self.control.close()
        process = self.process
        if process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_task, 1)
