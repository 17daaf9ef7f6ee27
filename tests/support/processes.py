"""A session's process table for tests that run tools in process (exec, readOutput...).

`session_processes()` gives a fresh table with its own launcher and stops everything at the
end (as a session's close would), so no test leaves a launcher or a command behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from cody_daemon.tools.processes.host import ProcessHost
from cody_daemon.tools.processes.table import ProcessTable

__all__ = ["session_processes"]


@contextlib.asynccontextmanager
async def session_processes(
    *, per_session: int = 8, total: int = 32
) -> AsyncIterator[ProcessTable]:
    host = ProcessHost(per_session=per_session, total=total)
    try:
        yield host.table("s")
    finally:
        await host.close()
