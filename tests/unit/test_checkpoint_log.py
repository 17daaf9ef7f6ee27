"""store/checkpoint_log.py: the fold a live session and a reloaded one share. A conversation
rewind keeps the history it leaves (for redo), marks where it happened, repairs an
unanswered call, and a damaged event costs only itself."""

from __future__ import annotations

from typing import Any

from cody_daemon.core.history import FunctionCallItem, FunctionCallOutputItem, HistoryItem
from cody_daemon.core.history import user_message as user
from cody_daemon.store.checkpoint_log import CheckpointLog, last_message_id

A = "a" * 40
B = "b" * 40


def checkpoint(cid: str, message_id: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "checkpoint",
        "checkpointId": cid,
        "messageId": message_id,
        "before": A,
        **extra,
    }


def test_a_conversation_rewind_and_its_redo() -> None:
    log = CheckpointLog()
    history: list[HistoryItem] = [user("m1", "one")]
    history = log.apply(checkpoint("c1", "m1", turn=1), history)
    history.append(user("m2", "two"))
    history = log.apply(checkpoint("c2", "m2", turn=2), history)
    history.append(user("m3", "three"))
    full = history

    history = log.apply({"kind": "checkpoint", "checkpointId": "r1", "reason": "rewind"}, history)
    history = log.apply(
        {"kind": "rewind", "checkpointId": "c2", "restore": "both", "note": "rewound"}, history
    )

    assert [last_message_id(history)] == ["m1"] and len(history) == 1
    assert full is not history and len(full) == 3, "the history left is kept as it was"
    assert log.marks == [(1, "rewound")]
    history.append(user("m4", "four"))
    history = log.apply(
        {"kind": "rewind", "checkpointId": "r1", "restore": "conversation"}, history
    )
    assert [getattr(item, "id", None) for item in history] == ["m1", "m2", "m3"]
    assert log.marks == [], "a redo without a note leaves no mark past the shared start"


def test_files_rewinds_leave_the_conversation_and_damaged_events_cost_themselves() -> None:
    log = CheckpointLog()
    history: list[HistoryItem] = [user("m1", "one")]
    history = log.apply(checkpoint("c1", "m1"), history)
    same = log.apply({"kind": "rewind", "checkpointId": "c1", "restore": "files"}, history)
    assert same is history
    for bad in (
        {"kind": "checkpoint"},
        {"kind": "checkpoint", "checkpointId": 7},
        {"kind": "checkpoint_end", "checkpointId": "nope", "after": B},
        {"kind": "checkpoint_end", "checkpointId": "c1", "after": "not-a-commit", "files": "x"},
        {"kind": "rewind", "checkpointId": "missing", "restore": "both"},
    ):
        history = log.apply(bad, history)
    assert list(log.entries) == ["c1"]
    entry = log.entries["c1"]
    assert entry.after is None and entry.files == []
    assert log.unfinished() == [entry], "no readable end: closed at the next snapshot"


def test_a_rewound_conversation_never_ends_on_an_unanswered_call() -> None:
    log = CheckpointLog()
    history: list[HistoryItem] = [
        user("m1", "one"),
        FunctionCallItem(call_id="c", name="exec", arguments="{}"),
    ]
    history = log.apply({"kind": "checkpoint", "checkpointId": "r", "reason": "rewind"}, history)
    restored = log.apply({"kind": "rewind", "checkpointId": "r", "restore": "both"}, history)
    assert isinstance(restored[-1], FunctionCallOutputItem) and restored[-1].status == "failed"
