"""`_cody/history/*` and `_cody/session/history`: params validated, the engine's
HistoryService called (rpc reaches the history package only through the engine)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cody_protocol import methods
from cody_protocol.history import (
    HistoryImportParams,
    HistoryImportResult,
    HistoryListParams,
    HistoryReadParams,
    SessionHistoryParams,
)
from pygls.server import JsonRPCServer

from ..engine.history import HistoryService
from .handlers import _guard, _session_state, parse

if TYPE_CHECKING:
    from ..app import DaemonApp

__all__ = ["HISTORY_METHODS", "register_history_handlers"]

HISTORY_METHODS = (
    methods.CODY_SESSION_HISTORY,
    methods.CODY_HISTORY_LIST,
    methods.CODY_HISTORY_READ,
    methods.CODY_HISTORY_IMPORT,
)


def register_history_handlers(server: JsonRPCServer, app: DaemonApp) -> None:
    service = HistoryService(app.deps, app.manager)

    async def history_list(params: Any) -> Any:
        parsed = parse(HistoryListParams, params)
        return await service.list(parsed.agent, parsed.cwd, parsed.cursor)

    async def history_read(params: Any) -> Any:
        parsed = parse(HistoryReadParams, params)
        return await service.read(
            parsed.agent,
            parsed.session_id,
            parsed.path,
            cursor=parsed.cursor,
            limit=parsed.limit,
            include_original=parsed.include_original,
        )

    async def session_history(params: Any) -> Any:
        parsed = parse(SessionHistoryParams, params)
        return await service.session_history(
            parsed.session_id, parsed.cursor, parsed.limit, parsed.include_original
        )

    async def history_import(params: Any) -> Any:
        parsed = parse(HistoryImportParams, params)
        meta = parsed.meta.cody if parsed.meta is not None else None
        outcome = await service.import_session(
            parsed.agent, parsed.session_id, parsed.path, parsed.cwd, meta
        )
        return HistoryImportResult.model_validate(
            {
                "sessionId": outcome.session.id,
                "imported": outcome.stats(),
                **_session_state(app, outcome.session),
            }
        )

    table = {
        methods.CODY_HISTORY_LIST: history_list,
        methods.CODY_HISTORY_READ: history_read,
        methods.CODY_SESSION_HISTORY: session_history,
        methods.CODY_HISTORY_IMPORT: history_import,
    }
    for name, fn in table.items():
        server.feature(name)(_guard(name, fn))
