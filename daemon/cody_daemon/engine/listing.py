"""`session/list`: pages of the stored sessions that were prompted, newest first.

Invariants: the session files are read in the scan pool, never on the event loop; a cursor
is the offset a previous answer gave, anything else is -32602; a session never prompted (a
chat's own new, untitled one) is not listed, as codex-acp lists them.
"""

from __future__ import annotations

from cody_protocol.session import CodySessionInfoMeta, ListedSessionMeta, SessionInfo

from ..errors import InvalidParams, Issue
from .deps import EngineDeps

__all__ = ["LIST_PAGE_SIZE", "list_sessions"]

LIST_PAGE_SIZE = 100


async def list_sessions(
    deps: EngineDeps, cwd: str | None, cursor: str | None
) -> tuple[list[SessionInfo], str | None]:
    """One page of stored sessions (of `cwd` when given) and the next page's cursor."""
    start = 0
    if cursor:
        try:
            start = int(cursor)
        except ValueError:
            raise InvalidParams(
                "Invalid cursor; pass the nextCursor of a previous session/list answer.",
                [Issue(key="cursor", message="not a cursor from session/list", value=cursor)],
            ) from None
    stored = await deps.scans.run(deps.store.list, cwd)
    summaries = [s for s in stored if s.has_turn]
    page = summaries[start : start + LIST_PAGE_SIZE]
    infos = [
        SessionInfo(
            session_id=s.session_id,
            cwd=s.cwd,
            title=s.title,
            updated_at=s.updated_at,
            meta=_listed_meta(s.forked_from, s.at_message, s.parent_session_id),
        )
        for s in page
    ]
    next_cursor = str(start + LIST_PAGE_SIZE) if start + LIST_PAGE_SIZE < len(summaries) else None
    return infos, next_cursor


def _listed_meta(
    forked_from: str | None, at_message: int | None, parent_session_id: str | None
) -> ListedSessionMeta | None:
    """A listed session's `_meta`: whose fork it is, whose child (subagent) it is (none for a
    session that is neither)."""
    if forked_from is None and parent_session_id is None:
        return None
    return ListedSessionMeta(
        cody=CodySessionInfoMeta(
            forked_from=forked_from, at_message=at_message, parent_session_id=parent_session_id
        )
    )
