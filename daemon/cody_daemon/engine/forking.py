"""`session/fork` (and `/fork`): a new native session with another session's history up to
one of its user messages, and the context items that were sent with that history.

Invariants: the source, live or stored, is only read (its file and lock are untouched); a
user message number outside the source is -32602 and creates nothing; a context item is
copied only when the history item it follows is copied, so the fork sends the model what the
source sent with that history; the fork is native whatever config.toml chooses (the copied
history is Cody's, no agent CLI has a thread for it) and keeps the source's provider, model,
approval policy and sandbox mode when the source is live.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cody_protocol.session import CodySessionMeta, McpServer

from ..core.history import HistoryItem, item_key
from ..errors import InvalidParams, Issue
from ..store.reader import read_session
from ..store.store import SessionStore
from .context_items import ContextEntry, record
from .live_sessions import LiveSessions
from .opening import SessionOpener
from .session import Session
from .setting_changes import apply_persisted

__all__ = ["cut_history", "fork_session"]


async def fork_session(
    opener: SessionOpener,
    live: LiveSessions,
    store: SessionStore,
    *,
    session_id: str,
    cwd: str,
    at_message: int | None,
    mcp_servers: Sequence[McpServer] = (),
) -> Session:
    """A new session with the history of `session_id` up to user message `at_message`
    (all of it when None), and the context items sent with that history."""
    source = live.live(session_id)
    if source is not None:
        source_items = list(source.history)
        source_context = list(source.context_items)
    else:
        stored = read_session(store.find(session_id))
        source_items = stored.items
        source_context = [
            entry for entry in map(ContextEntry.from_event, stored.context) if entry is not None
        ]
    settings_source = source.settings.persisted() if source is not None else None
    _check_at_message(session_id, source_items, at_message)
    items = cut_history(source_items, at_message)
    session = await opener.new_session(
        cwd,
        CodySessionMeta(backend="native"),
        mcp_servers,
        read_docs=False,
        start_source="resume",
    )
    if settings_source is not None:
        apply_persisted(session, settings_source)
    session.file.append("event", {"kind": "forked", "from": session_id, "atMessage": at_message})
    kept = {item_key(item) for item in items}
    context = [e for e in source_context if e.after is None or e.after in kept]
    if not any(entry.kind == "project_docs" for entry in context):
        await opener.read_project_docs(session)  # the source had none recorded
    for entry in context:  # the fork sends what the source sent with this history
        record(session, entry)
    for item in items:
        session.history.append(item)
        session.file.append("response_item", item.payload())
    return session


def cut_history(items: list[HistoryItem], at_message: int | None) -> list[HistoryItem]:
    """`items` before user message `at_message` (counted from 0); all of them when None."""
    if at_message is None:
        return items
    seen = -1
    for index, item in enumerate(items):
        if _is_user_message(item):
            seen += 1
            if seen == at_message + 1:
                return items[:index]
    return items


def _check_at_message(session_id: str, items: list[HistoryItem], at_message: int | None) -> None:
    users = sum(1 for item in items if _is_user_message(item))
    if at_message is None or 0 <= at_message < users:
        return
    has = (
        f"has {users} user message{'s' if users != 1 else ''}, numbered 0 to {users - 1}"
        if users
        else "has no user message yet"
    )
    raise InvalidParams(
        f"There is no user message {at_message} to fork at: session {session_id} {has}.",
        [Issue(key="atMessage", message="no such user message", value=at_message, source="params")],
    )


def _is_user_message(item: Any) -> bool:
    return getattr(item, "type", None) == "message" and getattr(item, "role", None) == "user"
