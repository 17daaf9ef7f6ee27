"""`session/prompt`, `session/cancel`, `_cody/session/compact`, `_cody/session/steer` and
`_cody/files/search`: running turns, talking to a running turn, finding files.

A prompt's answer carries the turn's usage, cost, final answer and what the session's
children used; `session/cancel` is a notification, so invalid params are logged, not
answered.

Steering goes through the engine (`SessionManager.steer`, engine/steering.py); a session
without a running native turn answers -32011 (`NoTurnRunning`), so a client sends the
message as a prompt instead. The file search is the model's `fileSearch` (the same
candidates and ranking, tools/file_search.py) in the session's directory, for a client's
`@path` completion.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .errors import RpcError
from .handlers import parse

if TYPE_CHECKING:
    from .context import HandlerContext

__all__ = ["turn_handlers"]

logger = logging.getLogger(__name__)


def _children_totals(app: HandlerContext, session_id: str) -> Any:
    """What the session's children used (`_meta.cody.subagents`), once it has any."""
    session = app.manager.live(session_id)
    if session is None or not session.children.sessions:
        return None
    from cody_protocol.prompt import SubagentTotals

    totals = session.children
    return SubagentTotals(
        usage=totals.usage, cost=totals.cost_usd or None, sessions=totals.sessions
    )


def turn_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """The handlers (registered by rpc/handlers.py)."""

    async def session_prompt(params: Any) -> Any:
        from cody_protocol.prompt import (
            CodyPromptMeta,
            PromptMeta,
            PromptParams,
            PromptResult,
            TokenUsage,
            TurnCost,
            TurnUsage,
        )

        parsed = parse(PromptParams, params)
        cody = parsed.meta.cody if parsed.meta is not None else None
        if cody is not None and cody.dry_run:
            report = await app.manager.dry_run(parsed.session_id, parsed.prompt)
            zero = TokenUsage()
            return PromptResult(
                stop_reason="end_turn",
                meta=PromptMeta(
                    cody=CodyPromptMeta(
                        turn_id="dry-run",
                        usage=TurnUsage(last=zero, turn=zero, total=zero),
                        dry_run=report,
                    )
                ),
            )
        outcome = await app.manager.prompt(
            parsed.session_id,
            parsed.prompt,
            app.link,
            queue=cody is not None and cody.queue,
            output_schema=cody.output_schema if cody is not None else None,
        )
        children = _children_totals(app, parsed.session_id)
        return PromptResult(
            stop_reason=outcome.stop_reason,  # type: ignore[arg-type]
            usage=outcome.turn,
            meta=PromptMeta(
                cody=CodyPromptMeta(
                    turn_id=outcome.turn_id,
                    usage=TurnUsage(last=outcome.last, turn=outcome.turn, total=outcome.total),
                    cost=(
                        TurnCost(last=outcome.cost[0], turn=outcome.cost[1], total=outcome.cost[2])
                        if outcome.cost is not None
                        else None
                    ),
                    subagents=children,
                    output=outcome.output,
                )
            ),
        )

    async def session_cancel(params: Any) -> None:
        from cody_protocol.prompt import CancelParams

        try:
            parsed = parse(CancelParams, params)
        except RpcError:
            logger.info("ignoring session/cancel with invalid params")
            return
        app.manager.cancel(parsed.session_id)

    async def session_compact(params: Any) -> Any:
        from cody_protocol.extensions import CompactSessionParams, CompactSessionResult

        parsed = parse(CompactSessionParams, params)
        result = await app.manager.compact(parsed.session_id, app.link)
        if result is None:
            return CompactSessionResult(
                compacted=False, reason="nothing to summarise yet (no earlier messages)"
            )
        return CompactSessionResult(
            compacted=True,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            summarized_items=result.summarized_items,
            kept_items=result.kept_items,
        )

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

    return {
        methods.SESSION_PROMPT: session_prompt,
        methods.SESSION_CANCEL: session_cancel,
        methods.CODY_SESSION_COMPACT: session_compact,
        methods.CODY_SESSION_STEER: session_steer,
        methods.CODY_FILES_SEARCH: files_search,
    }
