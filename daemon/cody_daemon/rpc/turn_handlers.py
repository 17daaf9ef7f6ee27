"""`_cody/session/steer` and `_cody/files/search`: talking to a running turn, finding files.

Steering goes through the engine (`SessionManager.steer`, engine/steering.py); a session
without a running native turn answers -32011 (`NoTurnRunning`), so a client sends the
message as a prompt instead. The file search is the model's `fileSearch` (the same
candidates and ranking, tools/file_search.py) in the session's directory, for a client's
`@path` completion.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .handlers import parse

if TYPE_CHECKING:
    from ..app import DaemonApp

__all__ = ["turn_handlers"]


def turn_handlers(app: DaemonApp) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """The handlers (registered by rpc/handlers.py)."""

    async def session_steer(params: Any) -> Any:
        from cody_protocol.prompt import SteerParams, SteerResult

        parsed = parse(SteerParams, params)
        turn_id = app.manager.steer(parsed.session_id, parsed.prompt)
        return SteerResult(turn_id=turn_id)

    async def files_search(params: Any) -> Any:
        from cody_protocol.extensions import FileSearchParams, FileSearchResult

        from ..engine.file_mentions import search_files

        parsed = parse(FileSearchParams, params)
        session = app.manager.get(parsed.session_id)
        paths, more = await search_files(session, parsed.query, parsed.limit)
        return FileSearchResult(paths=paths, more=more)

    return {methods.CODY_SESSION_STEER: session_steer, methods.CODY_FILES_SEARCH: files_search}
