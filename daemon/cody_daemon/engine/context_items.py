"""Context items: what Cody tells the model besides the system prompt, kept in the session.

Six kinds, each a message the model receives between the history items:
- `project_docs`: the project instructions (engine/project_docs.py), a user message, read
  when the session is created (or, for a session from before Cody read them, when it is
  first opened again) and never re-read: resume and fork send the same text;
- `session_context`: the environment and the permissions (engine/permissions.py), a
  developer message, added at the start of a turn whenever the permissions text differs from
  the last one sent (the first turn, a changed sandbox or approval policy);
- `agent`: a child session's role and its agent profile's instructions
  (engine/subagents/), a user message (a profile may come from a cloned repository), recorded
  when the child is created;
- `answer_check`: a user message telling the model why its final answer did not validate
  against the turn's output schema (engine/final_answer.py), after that answer;
- `skills`: the skills the model may use (engine/skills_context.py), a developer message,
  added at the start of a turn whenever the list differs from the last one sent;
- `hook`: what a hook gave the model (SessionStart and UserPromptSubmit context, PostToolUse
  notes, a Stop hook's reason to go on: engine/hooks.py), a developer message.

Invariants:
- an item, once sent, is never changed or moved while the history it follows is sent
  verbatim: new items are appended after the last history item, so the prefix of every
  request (system prompt, tools, earlier items) stays byte-stable and cached;
- each item is recorded in the session file (an `event` line of kind `context`, with the
  `item_key` of the history item it follows, or none) before any request carries it;
- items are never part of `Session.history`: replays, titles, forks' message numbers and
  history exports see only the conversation;
- when the item an entry follows is not in the view (compacted away, or a stored anchor that
  no longer exists), the entry goes to the front, and of those only the latest of each kind
  is kept (the latest permissions still apply; older ones are history), except `hook`
  entries, which belong to their moment and are dropped with it (the summary covers them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import ValidationError

from ..core.history import HISTORY_ITEM, HistoryItem, MessageItem, TextPart, item_key
from ..ids import new_id

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "ContextEntry",
    "ContextKind",
    "answer_check_entry",
    "latest",
    "hook_entry",
    "agent_entry",
    "project_docs_entry",
    "record",
    "session_context_entry",
    "skills_entry",
    "splice",
]

ContextKind = Literal["project_docs", "session_context", "agent", "answer_check", "skills", "hook"]
_KINDS: tuple[ContextKind, ...] = (
    "project_docs",
    "session_context",
    "agent",
    "answer_check",
    "skills",
    "hook",
)
_TRANSIENT: frozenset[ContextKind] = frozenset({"hook"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextEntry:
    kind: ContextKind
    after: str | None
    """`item_key` of the history item this one follows; None: before the whole history."""
    item: MessageItem | None
    """What the model receives (None: recorded, but nothing to send, e.g. no AGENTS.md)."""
    key: str = ""
    """`session_context`, `skills`: the text it was made from; a different one means a new
    item."""
    docs: tuple[dict[str, Any], ...] = ()
    """`project_docs`: the files found (`_meta.cody.projectDocs` entries)."""

    def event(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"kind": "context", "context": self.kind, "after": self.after}
        if self.item is not None:
            payload["item"] = self.item.payload()
        if self.key:
            payload["key"] = self.key
        if self.kind == "project_docs":
            payload["docs"] = list(self.docs)
        return payload

    @classmethod
    def from_event(cls, payload: dict[str, Any]) -> ContextEntry | None:
        """The entry a session file recorded; None when the line is not a usable one (a
        damaged or foreign file: it is skipped, like any bad line)."""
        kind = payload.get("context")
        after = payload.get("after")
        if kind not in _KINDS or not (after is None or isinstance(after, str)):
            return None
        item: MessageItem | None = None
        if payload.get("item") is not None:
            try:
                parsed = HISTORY_ITEM.validate_python(payload["item"])
            except ValidationError:
                return None
            if not isinstance(parsed, MessageItem):
                return None
            item = parsed
        key = payload.get("key")
        docs = payload.get("docs")
        return cls(
            kind=cast(ContextKind, kind),
            after=after,
            item=item,
            key=key if isinstance(key, str) else "",
            docs=tuple(filter(None, map(_doc, docs))) if isinstance(docs, list) else (),
        )


def _doc(value: Any) -> dict[str, Any] | None:
    """A recorded `projectDocs` entry with the right field types, else None (skipped)."""
    if not isinstance(value, dict):
        return None
    path, size = value.get("path"), value.get("bytes")
    truncated, skipped = value.get("truncated", False), value.get("skipped")
    if not isinstance(path, str) or type(size) is not int or not isinstance(truncated, bool):
        return None
    doc: dict[str, Any] = {"path": path, "bytes": size, "truncated": truncated}
    if isinstance(skipped, str):
        doc["skipped"] = skipped
    return doc


def _anchor(history: Sequence[HistoryItem]) -> str | None:
    return item_key(history[-1]) if history else None


def _message(role: Literal["user", "developer"], text: str) -> MessageItem:
    return MessageItem(
        id=new_id("ctx_"), role=role, content=[TextPart(type="input_text", text=text)]
    )


def project_docs_entry(
    history: Sequence[HistoryItem], text: str, docs: Sequence[dict[str, Any]]
) -> ContextEntry:
    """The project instructions, to follow the current end of `history`."""
    return ContextEntry(
        kind="project_docs",
        after=_anchor(history),
        item=_message("user", text) if text else None,
        docs=tuple(docs),
    )


def session_context_entry(history: Sequence[HistoryItem], key: str, text: str) -> ContextEntry:
    """Environment and permissions (`key`: the permissions text), after `history`'s end."""
    return ContextEntry(
        kind="session_context", after=_anchor(history), item=_message("developer", text), key=key
    )


def agent_entry(history: Sequence[HistoryItem], text: str) -> ContextEntry:
    """A child session's role and agent instructions, after `history`'s end."""
    return ContextEntry(kind="agent", after=_anchor(history), item=_message("user", text))


def answer_check_entry(history: Sequence[HistoryItem], text: str) -> ContextEntry:
    """Why the answer at the end of `history` did not validate, and what to do."""
    return ContextEntry(kind="answer_check", after=_anchor(history), item=_message("user", text))


def skills_entry(history: Sequence[HistoryItem], key: str, text: str) -> ContextEntry:
    """The skills the model may use (`key`: what decides whether the list changed)."""
    return ContextEntry(
        kind="skills", after=_anchor(history), item=_message("developer", text), key=key
    )


def hook_entry(history: Sequence[HistoryItem], text: str) -> ContextEntry:
    """What hooks gave the model, after `history`'s end."""
    return ContextEntry(kind="hook", after=_anchor(history), item=_message("developer", text))


def record(session: Session, entry: ContextEntry) -> None:
    """Write `entry` to the session file, then make it part of the session."""
    session.file.append("event", entry.event())
    session.context_items.append(entry)


def latest(entries: Sequence[ContextEntry], kind: ContextKind) -> ContextEntry | None:
    return next((entry for entry in reversed(entries) if entry.kind == kind), None)


def splice(view: Sequence[HistoryItem], entries: Sequence[ContextEntry]) -> list[HistoryItem]:
    """`view` (what the model is sent of the history) with the context items in place."""
    if not entries:
        return list(view)
    keys = {item_key(item) for item in view}
    front = [
        e
        for e in entries
        if (e.after is None or e.after not in keys)
        and (e.after is None or e.kind not in _TRANSIENT)
    ]
    last_of_kind = {entry.kind: index for index, entry in enumerate(front)}
    out: list[HistoryItem] = [
        e.item for i, e in enumerate(front) if last_of_kind[e.kind] == i and e.item is not None
    ]
    following: dict[str, list[MessageItem]] = {}
    for entry in entries:
        if entry.after is not None and entry.after in keys and entry.item is not None:
            following.setdefault(entry.after, []).append(entry.item)
    for item in view:
        out.append(item)
        out.extend(following.get(item_key(item), ()))
    return out
