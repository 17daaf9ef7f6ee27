"""One session's processes (`ProcessTable`; the daemon's `ProcessHost`, tools/processes/host.py,
holds every session's table, the launcher and the limits).

Invariants:
- Every command `exec` runs is in its session's table while it runs (listed by
  `_cody/session/processes`, stoppable by `_cody/process/kill`); a command that outlives its
  call (`background`, or still running after `yieldMs`) stays, with its output, until the
  session ends; at most `KEPT_EXITED` ended ones are kept (the oldest is dropped).
- Limits: at most `per_session` processes that outlive their call run per session and `total`
  in the daemon; starting one more fails with a message naming them (a command the call
  waits for is not limited: the turn runs one at a time).
- `close` (the session's end) and `ProcessHost.close` (the daemon's exit) stop every process:
  SIGTERM to everything it started, SIGKILL after the grace time. `stop_turn` stops the
  processes a cancelled turn started that are not `background`.
- A session's sandboxed commands share one network namespace when the sandbox keeps them off
  the network: a launcher runs in it (`network_launcher`), started under bubblewrap
  `--unshare-net`, so a server one command starts is reachable by the next and by nothing
  outside. When that cannot be made, each command gets a namespace of its own (the reason is
  kept and said).
- Processes outliving their call stream their output to the table's `listener` (the engine
  turns it into the exec call's live output), up to `BACKGROUND_STREAM_BYTES` each.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ...policy.secrets import SecretGuard
from .launcher_client import Launcher, LauncherError, SpawnRequest
from .process import LiveFeed, ManagedProcess, ProcessFacts
from .stdio import CommandStdio

if TYPE_CHECKING:
    from .host import ProcessHost

__all__ = [
    "BACKGROUND_STREAM_BYTES",
    "KEPT_EXITED",
    "STOP_GRACE_S",
    "ProcessLimitError",
    "ProcessListener",
    "ProcessNotFound",
    "ProcessTable",
]

log = logging.getLogger(__name__)

KEPT_EXITED = 8
BACKGROUND_STREAM_BYTES = 1024 * 1024
"""Live output streamed per process that outlives its call (its output is still kept)."""
STOP_GRACE_S = 2.0
NETWORK_IDLE_S = 300.0
"""A session's network launcher ends after this long without a running process (the
namespace holds nothing then; the next sandboxed command starts a new one)."""


class ProcessNotFound(LookupError):
    """No process with that id in the session."""


class ProcessLimitError(Exception):
    """Starting one more process that outlives its call would pass a limit."""


class ProcessListener(Protocol):
    """Where a process that outlives its call reports (the engine: live output, its end)."""

    def output(self, process: ManagedProcess, text: str) -> None: ...

    def ended(self, process: ManagedProcess) -> None: ...


class ProcessTable:
    """One session's processes (see the module docstring)."""

    def __init__(self, host: ProcessHost, session_id: str) -> None:
        self.host = host
        self.session_id = session_id
        self.listener: ProcessListener | None = None
        self._processes: dict[int, ManagedProcess] = {}
        self._kept: set[int] = set()
        self._next_id = 1
        self._network: Launcher | None = None
        self._network_task: asyncio.Task[Launcher | None] | None = None
        self.network_problem: str | None = None
        """Why the session's sandboxed commands cannot share a network namespace."""
        self._closed = False
        self._chores: set[asyncio.Future[object]] = set()
        self._idle: asyncio.TimerHandle | None = None
        self.started_any = False
        """A command ran in this session (its next turns prepare the launcher ahead)."""

    # -- listing --------------------------------------------------------------------------

    def listed(self) -> list[ManagedProcess]:
        return sorted(self._processes.values(), key=lambda p: p.id)

    def kept(self) -> list[ManagedProcess]:
        return [self._processes[i] for i in sorted(self._kept) if i in self._processes]

    def get(self, process_id: int) -> ManagedProcess:
        process = self._processes.get(process_id)
        if process is None:
            known = ", ".join(str(p.id) for p in self.listed()) or "none"
            raise ProcessNotFound(
                f"there is no process {process_id} in this session (its processes: {known})"
            )
        return process

    # -- starting -------------------------------------------------------------------------

    def check_room(self) -> None:
        """Raise ProcessLimitError when one more process may not outlive its call."""
        mine = [p for p in self.listed() if p.running and p.facts.may_outlive]
        if len(mine) >= self.host.per_session:
            names = "; ".join(f"{p.id}: {p.facts.title}" for p in mine)
            raise ProcessLimitError(
                f"this session already runs {len(mine)} processes that outlive their calls "
                f"(the limit is {self.host.per_session}): {names}. Stop one with killProcess "
                "first, or run the command without background/yieldMs."
            )
        everywhere = self.host.kept_running()
        if len(everywhere) >= self.host.total:
            raise ProcessLimitError(
                f"the daemon already runs {len(everywhere)} processes that outlive their calls "
                f"for its sessions (the limit is {self.host.total}). Stop one with "
                "killProcess first, or run the command without background/yieldMs."
            )

    async def network_launcher(self, prefix: Sequence[str] | None) -> Launcher | None:
        """The launcher inside the session's own network namespace (started under `prefix`,
        bubblewrap `--unshare-net`, on first use); None when it cannot be made
        (`network_problem` says why)."""
        if self._network is not None and self._network.alive:
            return self._network
        if prefix is None:
            self.network_problem = "bubblewrap is not available"
            return None
        if self.network_problem is not None and self._network is None:
            return None
        if self._network_task is None or self._network_task.done():
            self._network_task = asyncio.ensure_future(self._start_network(list(prefix)))
        self._network = await asyncio.shield(self._network_task)
        return self._network

    async def _start_network(self, prefix: list[str]) -> Launcher | None:
        try:
            return await Launcher.start(prefix, label="session network launcher")
        except LauncherError as exc:
            self.network_problem = str(exc)
            log.warning("session %s: %s", self.session_id, exc)
            return None

    def track(self, chore: asyncio.Future[object]) -> None:
        """Keep a background preparation alive until it is done (its failure is logged)."""
        self._chores.add(chore)
        chore.add_done_callback(self._chore_done)

    def _chore_done(self, chore: asyncio.Future[object]) -> None:
        self._chores.discard(chore)
        if not chore.cancelled() and chore.exception() is not None:
            log.warning(
                "session %s: preparing for commands failed: %r", self.session_id, chore.exception()
            )

    def prepare_network(self, prefix: Sequence[str] | None) -> None:
        """Start the session's network launcher in the background, if it has none."""
        if prefix is None or self._network is not None or self.network_problem is not None:
            return
        if self._network_task is None or self._network_task.done():
            self._network_task = asyncio.ensure_future(self._start_network(list(prefix)))

    async def start(
        self,
        request: SpawnRequest,
        facts: ProcessFacts,
        *,
        launcher: Launcher,
        extra_fds: Sequence[int] = (),
        stdin: bool = False,
        guard: SecretGuard | None = None,
    ) -> ManagedProcess:
        """Start a command (its fds 0-2 a pipe or, with `request.tty`, a pseudo-terminal;
        `extra_fds` become 3, 4...); raises SpawnError or LauncherError."""
        if self.closed:
            raise LauncherError("the session has ended")
        ends = CommandStdio.make(tty=request.tty, stdin=stdin)
        try:
            started = await launcher.spawn(request, [*ends.child, *extra_fds])
        except BaseException:
            ends.close_ours()
            raise
        finally:
            ends.close_child()
        process = ManagedProcess(
            id=self._next_id,
            facts=facts,
            started=started,
            output_fd=ends.output,
            input_fd=ends.input,
            guard=guard if guard is not None else SecretGuard(),
        )
        self._next_id += 1
        self._processes[process.id] = process
        self.started_any = True
        process.on_end = self._ended
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if _ended_meanwhile(self):  # the session ended while it started
            await process.stop(STOP_GRACE_S, by="the session's end")
        return process

    @property
    def closed(self) -> bool:
        return self._closed

    def forget(self, process: ManagedProcess) -> None:
        """Drop a process whose call waited for it to end (its result said everything)."""
        if process.id not in self._kept:
            self._processes.pop(process.id, None)

    def keep(self, process: ManagedProcess) -> None:
        """The process outlives its call: it stays listed, with its output, after it ends."""
        self._kept.add(process.id)
        process.throttled = True

    def stream(self, process: ManagedProcess, live_from: int) -> None:
        """Stream its output from `live_from` on (where the call's stream ended) to the
        listener, and its end (called once the call's final update is out)."""
        listener = self.listener
        if listener is None or process.id not in self._kept:
            return
        feed = LiveFeed(
            lambda text: listener.output(process, text),
            BACKGROUND_STREAM_BYTES,
            f"live output stops after {BACKGROUND_STREAM_BYTES} bytes; readOutput shows the latest",
        )
        backlog = process.ring.read(live_from)
        if backlog.data:
            feed.feed(backlog.data)
        process.feed = feed
        process.streaming = True
        if process.ended.is_set():
            listener.ended(process)

    def _ended(self, process: ManagedProcess) -> None:
        self._drop_old_ended()
        if self.listener is not None and process.streaming:
            self.listener.ended(process)
        if self._network is not None and not any(p.running for p in self._processes.values()):
            if self._idle is not None:
                self._idle.cancel()
            self._idle = asyncio.get_running_loop().call_later(NETWORK_IDLE_S, self._end_network)

    def _end_network(self) -> None:
        """Nothing ran for `NETWORK_IDLE_S`: end the network launcher (and its namespace)."""
        self._idle = None
        launcher, self._network, self._network_task = self._network, None, None
        if launcher is not None and not any(p.running for p in self._processes.values()):
            self.track(asyncio.ensure_future(launcher.close()))
        elif launcher is not None:
            self._network = launcher

    def _drop_old_ended(self) -> None:
        ended = [p for p in self.kept() if p.ended.is_set()]
        ended.sort(key=lambda p: p.ended_at or 0.0)
        for old in ended[: max(0, len(ended) - KEPT_EXITED)]:
            self._kept.discard(old.id)
            self._processes.pop(old.id, None)

    # -- stopping -------------------------------------------------------------------------

    async def stop(self, process_id: int, *, by: str) -> ManagedProcess:
        """Stop one process (SIGTERM, then SIGKILL after the grace time) and wait for it."""
        process = self.get(process_id)
        await process.stop(STOP_GRACE_S, by=by)
        return process

    async def stop_turn(self, turn_id: str) -> list[ManagedProcess]:
        """Stop what turn `turn_id` started that is not `background` (it was cancelled)."""
        doomed = [
            p
            for p in self.listed()
            if p.running and p.facts.turn_id == turn_id and not p.facts.background
        ]
        await asyncio.gather(*(p.stop(STOP_GRACE_S, by="the turn's cancellation") for p in doomed))
        return doomed

    async def close(self) -> None:
        """Stop every process and the session's network launcher (the session's end)."""
        self._closed = True
        self.host.forget(self.session_id)
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._chores:  # a preparation in a worker thread: let it finish (it cannot be stopped)
            await asyncio.wait(list(self._chores), timeout=10)
        running = [p for p in self._processes.values() if p.running]
        await asyncio.gather(
            *(p.stop(STOP_GRACE_S, by="the session's end") for p in running),
            return_exceptions=True,
        )
        for process in self._processes.values():
            process.dispose()
        if self._network_task is not None and not self._network_task.done():
            self._network_task.cancel()
            with contextlib.suppress(BaseException):
                await self._network_task
        elif self._network_task is not None and not self._network_task.cancelled():
            self._network = self._network_task.result()
        if self._network is not None:  # ends on its own once its socket closes
            self.host.ending(self._network.close())
            self._network = None


def _ended_meanwhile(table: ProcessTable) -> bool:
    return table.closed


def started_at() -> str:
    """Now, as `_cody/session/processes` reports start times."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
