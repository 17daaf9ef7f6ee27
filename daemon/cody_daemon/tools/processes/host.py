"""The daemon's side of every session's processes (`ProcessHost`): its launcher, the limits,
and the sessions' tables (tools/processes/table.py).

Invariants: one launcher in the daemon's namespaces, started on first use (or ahead, while a
turn's model thinks: `prepare`) from the event loop's thread, started again when it died;
`close` (the daemon's exit) stops every session's processes, then waits for the launchers to
end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine

from .launcher_client import Launcher, LauncherError
from .process import ManagedProcess
from .table import ProcessTable

__all__ = ["PER_SESSION", "TOTAL", "ProcessHost"]

log = logging.getLogger(__name__)

PER_SESSION = 8
"""Processes that outlive their call, running at once, per session."""
TOTAL = 32
"""The same, in the whole daemon."""


class ProcessHost:
    """The daemon's launcher and limits, and every session's table."""

    def __init__(self, *, per_session: int = PER_SESSION, total: int = TOTAL) -> None:
        self.per_session = per_session
        self.total = total
        self._launcher: Launcher | None = None
        self._starting: asyncio.Task[Launcher] | None = None
        self._tables: dict[str, ProcessTable] = {}
        self._ending: set[asyncio.Task[None]] = set()

    def table(self, session_id: str) -> ProcessTable:
        """The session's table (made on first use)."""
        table = self._tables.get(session_id)
        if table is None:
            table = self._tables[session_id] = ProcessTable(self, session_id)
        return table

    def forget(self, session_id: str) -> None:
        self._tables.pop(session_id, None)

    def ending(self, closing: Coroutine[object, object, None]) -> None:
        """A session's launcher being closed: waited for at the daemon's exit, not by the
        session's close (a client may open the session again at once)."""
        task = asyncio.ensure_future(closing)
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    def kept_running(self) -> list[ManagedProcess]:
        """Running processes that may outlive their call, in every session."""
        return [
            p
            for table in self._tables.values()
            for p in table.listed()
            if p.running and p.facts.may_outlive
        ]

    async def launcher(self) -> Launcher:
        """The launcher in the daemon's own namespaces (started on first use, again if it
        died)."""
        if self._launcher is not None and self._launcher.alive:
            return self._launcher
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(Launcher.start(label="process launcher"))
        try:
            launcher = await asyncio.shield(self._starting)
        except LauncherError:
            self._starting = None
            raise
        self._launcher = launcher
        return launcher

    def prepare(self) -> None:
        """Start the launcher in the background when there is none (a turn about to run
        commands pays nothing for it later)."""
        if (self._launcher is None or not self._launcher.alive) and (
            self._starting is None or self._starting.done()
        ):
            self._starting = asyncio.ensure_future(Launcher.start(label="process launcher"))
            self._starting.add_done_callback(_ignore_failure)

    async def close(self) -> None:
        """Stop every process of every session, then the launcher (the daemon's exit)."""
        tables = list(self._tables.values())
        self._tables.clear()
        await asyncio.gather(*(table.close() for table in tables), return_exceptions=True)
        if self._ending:
            await asyncio.wait(list(self._ending), timeout=10)
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()  # Launcher.start ends what it started
            with contextlib.suppress(BaseException):
                await self._starting
        starting = self._starting
        if (
            starting is not None
            and starting.done()
            and not starting.cancelled()
            and starting.exception() is None
        ):
            self._launcher = starting.result()
        if self._launcher is not None:
            await self._launcher.close()
            self._launcher = None


def _ignore_failure(task: asyncio.Task[Launcher]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("process launcher: %s", task.exception())
