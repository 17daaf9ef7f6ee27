"""engine/context_items.py and engine/session_context.py: where context items go in what
the model is sent (compaction included), what a session file may hold, and that the
permissions text follows the facts."""

from __future__ import annotations

from typing import Any

from cody_daemon.core.history import HistoryItem, MessageItem, TextPart, item_key, user_message
from cody_daemon.engine.compaction import Compaction, model_history
from cody_daemon.engine.context_items import (
    ContextEntry,
    project_docs_entry,
    session_context_entry,
    splice,
)
from cody_daemon.engine.session_context import PermissionFacts, permissions_text


def assistant(item_id: str, text: str) -> MessageItem:
    return MessageItem(
        id=item_id, role="assistant", content=[TextPart(type="output_text", text=text)]
    )


def texts(items: list[HistoryItem]) -> list[str]:
    return [item.text for item in items if isinstance(item, MessageItem)]


def conversation() -> tuple[list[HistoryItem], list[ContextEntry]]:
    history: list[HistoryItem] = []
    entries = [
        project_docs_entry(
            history, "DOCS", [{"path": "/r/AGENTS.md", "bytes": 4, "truncated": False}]
        ),
        session_context_entry(history, "perm-A", "CTX-A"),
    ]
    history += [user_message("u1", "one"), assistant("a1", "first")]
    entries.append(session_context_entry(history, "perm-B", "CTX-B"))
    history += [user_message("u2", "two"), assistant("a2", "second")]
    return history, entries


def test_items_sit_where_they_were_added_and_never_move() -> None:
    history, entries = conversation()
    assert texts(splice(history, entries)) == [
        "DOCS",
        "CTX-A",
        "one",
        "first",
        "CTX-B",
        "two",
        "second",
    ]


def test_after_a_compaction_the_docs_and_the_latest_permissions_lead() -> None:
    history, entries = conversation()
    compaction = Compaction(summary="S", summarized_through=item_key(history[2]), item_id="s1")
    view = model_history(history, compaction, 10_000, entries)
    assert texts(view)[:2] == ["DOCS", "CTX-B"], "the older permissions are history"
    assert "CTX-A" not in texts(view)
    assert texts(view)[2].endswith("S") and texts(view)[-1] == "second"


def test_a_recorded_entry_round_trips_and_garbage_is_refused() -> None:
    history, entries = conversation()
    for entry in entries:
        assert ContextEntry.from_event(entry.event()) == entry
    bad: list[dict[str, Any]] = [
        {"kind": "context", "context": "other", "after": None},
        {"kind": "context", "context": "project_docs", "after": 3},
        {"kind": "context", "context": "session_context", "after": None, "item": {"x": 1}},
        {
            "kind": "context",
            "context": "session_context",
            "after": None,
            "item": {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"},
        },
    ]
    assert [ContextEntry.from_event(payload) for payload in bad] == [None] * len(bad)
    damaged = project_docs_entry(history, "", []).event() | {
        "docs": [{"path": "/a", "bytes": "many"}, "x", {"path": "/b", "bytes": 2}]
    }
    parsed = ContextEntry.from_event(damaged)
    assert parsed is not None
    assert parsed.docs == ({"path": "/b", "bytes": 2, "truncated": False},)


def test_the_permissions_text_follows_the_facts_only() -> None:
    facts = PermissionFacts(
        sandbox_mode="workspace-write",
        approval_policy="on-request",
        writable_roots=("/w", "/tmp"),
    )
    assert permissions_text(facts) == permissions_text(facts)
    text = permissions_text(facts)
    assert "`/w` and `/tmp`" in text and "cannot be run outside the sandbox" in text
    escalating = permissions_text(
        PermissionFacts(
            sandbox_mode="workspace-write",
            approval_policy="on-request",
            writable_roots=("/w",),
            can_escalate=True,
        )
    )
    assert '"escalate": true' in escalating and "`justification`" in escalating
    networked = permissions_text(
        PermissionFacts(
            sandbox_mode="workspace-write", approval_policy="never", network_access=True
        )
    )
    assert "Commands have network access." in networked and "ENOTFOUND" not in networked
