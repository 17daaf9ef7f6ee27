"""`_cody/session/processes` and `_cody/process/kill`: a session's processes, for clients
(`/ps` in cody-client, the editors' lists).

The engine does the work (SessionManager.processes / kill_process); an unknown session is
-32002 and an unknown process -32602 naming the session's processes, as for any method.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .handlers import parse

if TYPE_CHECKING:
    from .context import HandlerContext

__all__ = ["process_handlers"]


def process_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """The handlers of the two methods (registered by rpc/handlers.py)."""

    async def session_processes(params: Any) -> Any:
        from cody_protocol.processes import SessionProcessesParams, SessionProcessesResult

        parsed = parse(SessionProcessesParams, params)
        listed, limit = app.manager.processes(parsed.session_id)
        return SessionProcessesResult(processes=listed, limit=limit)

    async def process_kill(params: Any) -> Any:
        from cody_protocol.processes import KillProcessParams, KillProcessResult

        parsed = parse(KillProcessParams, params)
        info, was_running = await app.manager.kill_process(parsed.session_id, parsed.process_id)
        return KillProcessResult(
            process=info, outcome="stopped" if was_running else "already ended"
        )

    return {
        methods.CODY_SESSION_PROCESSES: session_processes,
        methods.CODY_PROCESS_KILL: process_kill,
    }
