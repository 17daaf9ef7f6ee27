"""One command the daemon started (`ManagedProcess`): its output, input, exit and stop.

Invariants:
- Output (stdout and stderr share one pipe, or one pseudo-terminal) is read as it comes, on
  the event loop, into a bounded ring (`OutputRing`) and, while a call waits for the command,
  a head-and-tail buffer; memory is bounded whatever the command prints. A process that
  outlived its call (`throttled`) is read at most `FLOOD_BYTES_PER_S` (then it waits on its
  pipe), so one left flooding cannot take the event loop from the daemon's other work.
- The exit is what the command's reaper reports (launcher.py), after everything the command
  started is gone; `ended` is set once the exit is known and the output read to its end.
- `terminate` is SIGTERM to everything the command started, then SIGKILL after the grace
  time; `kill` is SIGKILL at once. Both are safe to repeat and after the end.
- Live output goes to one `feed` at a time (the call's while it waits, then the session's for
  a process that outlives its call), decoded incrementally (a UTF-8 character split between
  two reads is sent whole) and cut after `limit` bytes with one note.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ...policy.secrets import SecretGuard
from .buffers import OutputBuffer, OutputRing
from .launcher_client import Started

__all__ = [
    "DRAIN_S",
    "FLOOD_BYTES_PER_S",
    "Isolation",
    "LiveFeed",
    "ManagedProcess",
    "ProcessFacts",
]

READ_CHUNK = 64 * 1024
DRAIN_S = 2.0
"""After the exit, how long the output may take to reach its end (then it is closed)."""
FLOOD_BYTES_PER_S = 16 * 1024 * 1024
"""The most output read from one process per second; beyond, it waits on its pipe."""
_FLOOD_WINDOW_S = 0.25
WRITE_TIMEOUT_S = 5.0
"""How long writing to a process's input may wait for it to read."""


Isolation = Literal["sandbox", "not-needed", "unavailable", "outside"]
"""bubblewrap; none needed (danger-full-access); none because bubblewrap is missing; or
outside the sandbox because the user let it (`escalate`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessFacts:
    """What a process is, as listed (`_cody/session/processes`) and told to the model."""

    command: str | list[str]
    """As the model gave it (a string for bash, or an argv)."""
    title: str
    """The command on one line."""
    cwd: str
    started_at: str
    """ISO 8601, UTC."""
    background: bool
    """Started with `background`: a cancelled turn leaves it running."""
    may_outlive: bool
    """Started with `background` or `yieldMs` (it counts against the limits while it runs)."""
    tty: bool
    isolation: Isolation
    turn_id: str | None
    call_id: str | None
    """The exec call that started it (its live output continues that call's)."""
    stdin: Literal["pipe", "tty", "none"] = "none"


class LiveFeed:
    """Decodes output for one receiver, up to `limit` bytes (then one note, then nothing)."""

    def __init__(self, send: Callable[[str], None], limit: int, note: str) -> None:
        self._send: Callable[[str], None] | None = send
        self._limit = limit
        self._note = note
        self._sent = 0
        self.cut = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> None:
        if self._send is None or self.cut:
            return
        room = self._limit - self._sent
        if len(data) >= room:
            data = data[:room]
            self.cut = True
        self._sent += len(data)
        text = self._decoder.decode(data, final=self.cut)
        if self.cut:
            text += f"\n[... {self._note} ...]\n"
        self._deliver(text)

    def finish(self) -> None:
        """The output ended: what is left of a character cut in two is sent (replaced)."""
        if self._send is not None and not self.cut:
            self._deliver(self._decoder.decode(b"", final=True))

    def _deliver(self, text: str) -> None:
        if text and self._send is not None:
            try:
                self._send(text)
            except Exception:  # a receiver's bug must not stop the reading
                self._send = None


@dataclass(eq=False)
class ManagedProcess:
    id: int
    facts: ProcessFacts
    started: Started
    output_fd: int
    input_fd: int | None
    guard: SecretGuard = field(default_factory=SecretGuard)
    """The credentials of the turn that started it: its output is redacted with them."""
    ring: OutputRing = field(default_factory=OutputRing)
    result: OutputBuffer | None = None
    """Head and tail of everything, while a call waits for the command (exec's result)."""
    feed: LiveFeed | None = None
    exit_code: int | None = None
    signal_number: int | None = None
    lost: bool = False
    """The reaper ended without saying how the command exited (it was killed)."""
    stopped_by: str | None = None
    """Who stopped it (`killProcess`, the user, the session's end), when someone did."""
    read_cursor: int = 0
    """Where the model's next read (`readOutput`) starts."""
    ended_at: float | None = None
    streaming: bool = False
    """Its output streams to the session's listener (it outlived its call)."""
    throttled: bool = False
    """Read at most `FLOOD_BYTES_PER_S` (it outlived its call)."""

    def __post_init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.exited = asyncio.Event()
        self.output_done = asyncio.Event()
        self.ended = asyncio.Event()
        self.changed = asyncio.Event()
        """Set at each new output and at the end (waiters clear it)."""
        self._window_start = time.monotonic()
        self._window_bytes = 0
        self._paused: asyncio.TimerHandle | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._stopping: asyncio.Future[None] | None = None
        os.set_blocking(self.output_fd, False)
        self._loop.add_reader(self.output_fd, self._readable)
        self._watch = asyncio.ensure_future(self._watch_exit())
        self.on_end: Callable[[ManagedProcess], None] | None = None

    # -- state ----------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.started.pid

    @property
    def running(self) -> bool:
        return not self.exited.is_set()

    @property
    def signal_name(self) -> str | None:
        if self.signal_number is None:
            return None
        try:
            return signal.Signals(self.signal_number).name
        except ValueError:
            return f"signal {self.signal_number}"

    def status_text(self) -> str:
        """`running`, `exited with code 0`, `killed by SIGTERM (exit code 143)`..."""
        if self.running:
            return "running"
        if self.lost:
            return "ended (its exit status was lost)"
        name = self.signal_name
        if name is not None:
            return f"killed by {name} (exit code {self.exit_code})"
        return f"exited with code {self.exit_code}"

    # -- output ---------------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            data = os.read(self.output_fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:  # EIO: a terminal whose other side is closed is at its end
            if exc.errno not in (errno.EIO, errno.EBADF):
                raise
            data = b""
        if not data:
            self._close_output()
            return
        self.ring.append(data)
        if self.result is not None:
            self.result.append(data)
        if self.feed is not None:
            self.feed.feed(data)
        self.changed.set()
        self._throttle(len(data))

    def _throttle(self, size: int) -> None:
        if not self.throttled:
            return
        now = time.monotonic()
        if now - self._window_start >= _FLOOD_WINDOW_S:
            self._window_start, self._window_bytes = now, 0
        self._window_bytes += size
        if self._window_bytes >= FLOOD_BYTES_PER_S * _FLOOD_WINDOW_S:
            self._loop.remove_reader(self.output_fd)
            delay = max(0.0, self._window_start + _FLOOD_WINDOW_S - now)
            self._paused = self._loop.call_later(delay, self._resume)

    def _resume(self) -> None:
        self._paused = None
        if not self.output_done.is_set():
            self._window_start, self._window_bytes = time.monotonic(), 0
            self._loop.add_reader(self.output_fd, self._readable)

    def _close_output(self) -> None:
        if self.output_done.is_set():
            return
        if self._paused is not None:
            self._paused.cancel()
            self._paused = None
        self._loop.remove_reader(self.output_fd)
        with contextlib.suppress(OSError):
            os.close(self.output_fd)
        if self.feed is not None:
            self.feed.finish()
        self.output_done.set()
        self._maybe_ended()

    # -- exit -----------------------------------------------------------------------------

    async def _watch_exit(self) -> None:
        try:
            message = await self.started.next_message()
        finally:
            self.started.close()
        if message is not None and isinstance(message.get("exit"), int):
            self.exit_code = message["exit"]
            number = message.get("signal")
            self.signal_number = number if isinstance(number, int) else None
        else:
            self.lost = True
            self.exit_code = 128 + signal.SIGKILL
        self.ended_at = time.monotonic()
        self.exited.set()
        self.close_input()
        if not self.output_done.is_set():
            try:
                await asyncio.wait_for(self.output_done.wait(), DRAIN_S)
            except TimeoutError:  # something outside the command still holds the pipe
                self._close_output()
        self._maybe_ended()

    def _maybe_ended(self) -> None:
        if self.exited.is_set() and self.output_done.is_set() and not self.ended.is_set():
            self.ended.set()
            self.changed.set()
            if self.on_end is not None:
                self.on_end(self)

    async def wait_exit(self, timeout_s: float | None) -> bool:
        """Whether the command ended (exit known, output read) within `timeout_s`."""
        if timeout_s is None:
            await self.ended.wait()
            return True
        try:
            await asyncio.wait_for(self.ended.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def terminate(self, by: str | None = None) -> None:
        """SIGTERM to everything the command started; SIGKILL to what is left after the
        grace time (its reaper does both)."""
        if self.running:
            self.stopped_by = self.stopped_by or by
            self.started.send(b"term")

    def kill(self, by: str | None = None) -> None:
        if self.running:
            self.stopped_by = self.stopped_by or by
            self.started.send(b"kill")

    async def stop(self, grace_s: float, by: str | None = None) -> None:
        """`terminate`, wait for the end (its grace time and a margin), `kill` if need be."""
        self.terminate(by)
        if not await self.wait_exit(grace_s + DRAIN_S):
            self.kill(by)
            await self.wait_exit(DRAIN_S)
        self.dispose()

    def stop_later(self, delay_s: float, grace_s: float, by: str) -> None:
        """`stop` it `delay_s` from now if it still runs then (its `timeoutMs`)."""

        def stop() -> None:
            if self.running:
                self._stopping = asyncio.ensure_future(self.stop(grace_s, by=by))

        self._deadline = self._loop.call_later(max(0.0, delay_s), stop)

    def dispose(self) -> None:
        """Release everything (the process is gone, or given up on)."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._close_output()
        self.close_input()
        if not self._watch.done():
            self._watch.cancel()
            self.started.close()

    # -- input ----------------------------------------------------------------------------

    def close_input(self) -> None:
        fd, self.input_fd = self.input_fd, None
        if fd is not None and fd != self.output_fd:
            with contextlib.suppress(OSError):
                os.close(fd)

    async def write(self, data: bytes, timeout_s: float = WRITE_TIMEOUT_S) -> int:
        """Write `data` to the process's input; how many bytes went in before `timeout_s`
        (a process that does not read its input fills the pipe)."""
        fd = self.input_fd
        if fd is None:
            return 0
        written = 0
        deadline = time.monotonic() + timeout_s
        while written < len(data):
            try:
                written += os.write(fd, data[written:])
                continue
            except BlockingIOError:
                pass
            except OSError:  # EPIPE: it closed its input or ended
                return written
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.input_fd is None:
                return written
            ready: asyncio.Future[None] = self._loop.create_future()
            self._loop.add_writer(fd, _resolve, ready)
            try:
                await asyncio.wait_for(ready, min(remaining, 0.5))
            except TimeoutError:
                pass
            finally:
                self._loop.remove_writer(fd)
        return written


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
