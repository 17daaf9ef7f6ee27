"""A session's checkpoints and rewinds, folded from its file's `event` lines.

Three events (docs/checkpoints.md, "In the session file"):
- `checkpoint {checkpointId, reason: "turn" | "rewind", turn, turnId, time, prompt,
  messageId, before, notCovered, error?, after?, files?}`: the workspace before a turn
  (`before`, a snapshot commit; null with `error` when none could be taken) or before a
  rewind (the state being left, so that a rewind can be undone); `after` and `files` are
  there at once when nothing could have changed in between;
- `checkpoint_end {checkpointId, after, files: [{path, change}], notCovered, interrupted?,
  before?}`: the workspace after that turn or rewind; `interrupted`: the turn did not end (a
  crash), so who changed what in between is not known; `before`: the snapshot of a turn that
  changed nothing, when it completed after the turn ended (the line then follows the turn);
- `rewind {checkpointId, restore, redoCheckpointId, restored, conflicts, failed,
  conversationAt, forced}`: a rewind to `checkpointId`; when it restored the conversation,
  the history from then on is the one that checkpoint saw.

The same `CheckpointLog` folds the file on load (store/reader.py) and is updated by the live
session after each event is appended (engine/checkpoints.py, engine/rewind.py), so a
reloaded session has exactly the checkpoints and conversation the live one had.

Invariants:
- the file keeps everything: a conversation rewind adds a line, it never removes one, and
  every checkpoint (also of a turn the conversation no longer holds) keeps its conversation;
  a conversation is kept as (list, length) without copying: a rewind makes a new list for
  the session and leaves the old one as it was;
- unreadable fields cost their checkpoint only (a checkpoint without a readable id or
  `before` commit is skipped or kept without files to restore);
- `marks` says where the conversation was rewound (history positions), for the replay.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.history import FunctionCallItem, FunctionCallOutputItem, HistoryItem, MessageItem

__all__ = ["CheckpointEntry", "CheckpointLog", "FileChange", "last_message_id"]

_COMMIT = re.compile(r"[0-9a-f]{40}")
_CHANGES = ("added", "modified", "deleted")
PROMPT_CHARS = 200


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    change: Literal["added", "modified", "deleted"]


@dataclass(slots=True)
class CheckpointEntry:
    checkpoint_id: str
    reason: Literal["turn", "rewind"]
    time: str
    prompt: str
    turn: int | None
    turn_id: str | None
    before: str | None
    """The snapshot commit of the workspace at this checkpoint (None: none was taken)."""
    error: str | None = None
    after: str | None = None
    """The snapshot after the turn or rewind (None while it runs, or after a crash)."""
    files: list[FileChange] = field(default_factory=list)
    not_covered: list[dict[str, str]] = field(default_factory=list)
    interrupted: bool = False
    conversation: tuple[list[HistoryItem], int] | None = None
    """The history at this checkpoint: a list and how many of its items."""


@dataclass
class CheckpointLog:
    entries: dict[str, CheckpointEntry] = field(default_factory=dict)
    marks: list[tuple[int, str]] = field(default_factory=list)
    """(history position, note) of each conversation rewind the history now holds."""

    # -- folding ----------------------------------------------------------------------------

    def apply(self, payload: dict[str, Any], history: list[HistoryItem]) -> list[HistoryItem]:
        """Fold one event into the log; returns the history from then on (a new list
        after a conversation rewind, else `history` itself)."""
        kind = payload.get("kind")
        if kind == "checkpoint":
            self._checkpoint(payload, history)
        elif kind == "checkpoint_end":
            self._end(payload)
        elif kind == "rewind":
            return self._rewind(payload, history)
        return history

    def _checkpoint(self, payload: dict[str, Any], history: list[HistoryItem]) -> None:
        checkpoint_id = payload.get("checkpointId")
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            return
        reason: Literal["turn", "rewind"] = (
            "rewind" if payload.get("reason") == "rewind" else "turn"
        )
        message_id = _text(payload.get("messageId"))
        if reason == "turn":
            cut = _index_of_message(history, message_id)
            conversation = (history, cut) if cut is not None else None
        else:
            conversation = (history, len(history))
        turn = payload.get("turn")
        entry = CheckpointEntry(
            checkpoint_id=checkpoint_id,
            reason=reason,
            time=_text(payload.get("time")) or "",
            prompt=(_text(payload.get("prompt")) or "")[:PROMPT_CHARS],
            turn=turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
            turn_id=_text(payload.get("turnId")),
            before=_commit(payload.get("before")),
            error=_text(payload.get("error")),
            not_covered=_not_covered(payload.get("notCovered")),
            conversation=conversation,
        )
        self.entries[checkpoint_id] = entry
        if "after" in payload:
            self._end(payload)

    def _end(self, payload: dict[str, Any]) -> None:
        entry = self.entries.get(_text(payload.get("checkpointId")) or "")
        if entry is None:
            return
        if entry.before is None and "before" in payload:  # a snapshot done after its turn
            entry.before = _commit(payload.get("before"))
        entry.after = _commit(payload.get("after"))
        entry.files = _files(payload.get("files"))
        entry.interrupted = payload.get("interrupted") is True
        more = _not_covered(payload.get("notCovered"))
        if more:
            entry.not_covered = more

    def _rewind(self, payload: dict[str, Any], history: list[HistoryItem]) -> list[HistoryItem]:
        if payload.get("restore") not in ("conversation", "both"):
            return history
        target = self.entries.get(_text(payload.get("checkpointId")) or "")
        if target is None or target.conversation is None:
            return history
        items, length = target.conversation
        restored = with_outputs(items[:length])
        shared = 0
        while shared < min(len(restored), len(history)) and restored[shared] is history[shared]:
            shared += 1
        # A mark stays only where the history before and after it is still the same.
        self.marks = [mark for mark in self.marks if mark[0] < shared]
        note = _text(payload.get("note"))
        if note:
            self.marks.append((len(restored), note))
        return restored

    # -- reading ----------------------------------------------------------------------------

    def newest_first(self) -> list[CheckpointEntry]:
        return list(reversed(self.entries.values()))

    def get(self, checkpoint_id: str) -> CheckpointEntry | None:
        return self.entries.get(checkpoint_id)

    def last_commit(self) -> str | None:
        """The newest snapshot commit (the parent of the next one)."""
        for entry in reversed(self.entries.values()):
            if entry.after is not None:
                return entry.after
            if entry.before is not None:
                return entry.before
        return None

    def unfinished(self) -> list[CheckpointEntry]:
        """Checkpoints whose turn never recorded its end (a crash): oldest first."""
        return [e for e in self.entries.values() if e.before is not None and e.after is None]

    def since(self, checkpoint_id: str) -> list[CheckpointEntry]:
        """That checkpoint and every later one, oldest first."""
        entries = list(self.entries.values())
        for index, entry in enumerate(entries):
            if entry.checkpoint_id == checkpoint_id:
                return entries[index:]
        return []


def last_message_id(history: Sequence[HistoryItem]) -> str | None:
    """`conversationAt`: the id of the last message a history keeps."""
    for item in reversed(history):
        if isinstance(item, MessageItem):
            return item.id
    return None


def with_outputs(items: list[HistoryItem]) -> list[HistoryItem]:
    """`items`, with an interrupted output after any call that has none (a provider
    refuses a call without its output)."""
    answered = {item.call_id for item in items if isinstance(item, FunctionCallOutputItem)}
    if all(item.call_id in answered for item in items if isinstance(item, FunctionCallItem)):
        return items
    repaired: list[HistoryItem] = []
    for item in items:
        repaired.append(item)
        if isinstance(item, FunctionCallItem) and item.call_id not in answered:
            repaired.append(
                FunctionCallOutputItem(
                    call_id=item.call_id, output='{"error": "interrupted"}', status="failed"
                )
            )
    return repaired


def _index_of_message(history: Sequence[HistoryItem], message_id: str | None) -> int | None:
    if message_id is None:
        return None
    for index in range(len(history) - 1, -1, -1):
        item = history[index]
        if isinstance(item, MessageItem) and item.id == message_id:
            return index
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _commit(value: Any) -> str | None:
    return value if isinstance(value, str) and _COMMIT.fullmatch(value) else None


def _files(value: Any) -> list[FileChange]:
    if not isinstance(value, list):
        return []
    return [
        FileChange(entry["path"], entry["change"])
        for entry in value
        if isinstance(entry, dict)
        and isinstance(entry.get("path"), str)
        and entry.get("change") in _CHANGES
    ]


def _not_covered(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list):
        return []
    return [
        {"path": entry["path"], "why": entry["why"]}
        for entry in value
        if isinstance(entry, dict)
        and isinstance(entry.get("path"), str)
        and isinstance(entry.get("why"), str)
    ]
