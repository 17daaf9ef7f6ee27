"""`_cody/history/*` and `_cody/session/history`: params validated, the engine's
HistoryService called (rpc reaches the history package only through the engine)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .handlers import parse
from .session_handlers import session_state

if TYPE_CHECKING:
    from ..engine.history import HistoryService
    from .context import HandlerContext

__all__ = ["HISTORY_METHODS", "history_handlers"]

HISTORY_METHODS = tuple(
    method.name
    for method in methods.METHODS.values()
    if method.params is not None and method.params.startswith("history:")
)
"""The methods served here: those whose params are a `cody_protocol.history` model."""


def history_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """The history methods' handlers (registered by rpc/handlers.py); their models and the
    engine load on the first history request."""
    services: list[HistoryService] = []

    def history() -> HistoryService:
        """Built on the first history request (it needs the engine; startup does not)."""
        if not services:
            from ..engine.history import HistoryService

            services.append(HistoryService(app.deps, app.manager))
        return services[0]

    async def history_list(params: Any) -> Any:
        from cody_protocol.history import HistoryListParams

        parsed = parse(HistoryListParams, params)
        return await history().list(parsed.agent, parsed.cwd, parsed.cursor, parsed.query)

    async def history_read(params: Any) -> Any:
        from cody_protocol.history import HistoryReadParams

        parsed = parse(HistoryReadParams, params)
        return await history().read(
            parsed.agent,
            parsed.session_id,
            parsed.path,
            cursor=parsed.cursor,
            limit=parsed.limit,
            include_original=parsed.include_original,
        )

    async def session_history(params: Any) -> Any:
        from cody_protocol.history import SessionHistoryParams

        parsed = parse(SessionHistoryParams, params)
        return await history().session_history(
            parsed.session_id, parsed.cursor, parsed.limit, parsed.include_original
        )

    async def history_import(params: Any) -> Any:
        from cody_protocol.history import HistoryImportParams, HistoryImportResult

        parsed = parse(HistoryImportParams, params)
        meta = parsed.meta.cody if parsed.meta is not None else None
        outcome = await history().import_session(
            parsed.agent, parsed.session_id, parsed.path, parsed.cwd, meta
        )
        return HistoryImportResult.model_validate(
            {
                "sessionId": outcome.session.id,
                "imported": outcome.stats(),
                **session_state(app, outcome.session),
            }
        )

    return {
        methods.CODY_HISTORY_LIST: history_list,
        methods.CODY_HISTORY_READ: history_read,
        methods.CODY_SESSION_HISTORY: session_history,
        methods.CODY_HISTORY_IMPORT: history_import,
    }
