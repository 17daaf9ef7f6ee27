"""StreamedItem: streamed text goes to history at once and to the session file coalesced."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.core.history import HistoryItem, MessageItem, ReasoningItem, user_message
from cody_daemon.engine.streamed import SegmentCadence, StreamedItem
from cody_daemon.store.reader import read_session
from cody_daemon.store.session_file import SessionFile

DELTAS = ["Hel", "lo", ", ", "wö", "rld", "! ", "🎉", "\n", "done."]
FULL = "".join(DELTAS)
FOREVER = 1e9


@pytest.fixture
def session(tmp_path: Path) -> SessionFile:
    handle = SessionFile.create(tmp_path / "s.jsonl")
    handle.append("session_meta", {"id": "s1", "cwd": "/w", "created": "c", "settings": {}})
    return handle


def segments(path: Path) -> list[dict[str, Any]]:
    """The `response_item` payloads written so far."""
    lines = [json.loads(raw) for raw in path.read_bytes().splitlines()]
    return [line["payload"] for line in lines if line["type"] == "response_item"]


def segment_text(payload: dict[str, Any]) -> str:
    parts = payload.get("content") or payload.get("summary") or []
    return "".join(part["text"] for part in parts)


def test_each_delta_is_a_segment_with_zero_interval(session: SessionFile) -> None:
    history: list[HistoryItem] = []
    item = StreamedItem("message", history, session, interval_s=0)
    for delta in DELTAS:
        item.add(delta)
    item.finish()
    session.close()

    (message,) = history
    assert isinstance(message, MessageItem)
    assert (message.role, message.text) == ("assistant", FULL)
    written = segments(session.path)
    assert len(written) <= len(DELTAS) + 1
    assert {p["id"] for p in written} == {message.id}
    assert "".join(segment_text(p) for p in written) == FULL
    assert read_session(session.path).items == [message]


def test_large_interval_writes_first_delta_and_the_rest_at_finish(session: SessionFile) -> None:
    history: list[HistoryItem] = []
    item = StreamedItem("message", history, session, interval_s=FOREVER)
    for delta in DELTAS * 20:
        item.add(delta)
    before_finish = segments(session.path)
    assert len(before_finish) <= 1, "coalesced: nothing more within one interval"
    item.finish()
    session.close()

    written = segments(session.path)
    assert len(written) <= 2
    assert "".join(segment_text(p) for p in written) == FULL * 20
    (message,) = history
    assert isinstance(message, MessageItem)
    assert message.text == FULL * 20
    (read_back,) = read_session(session.path).items
    assert read_back == message


def test_segments_are_at_most_one_per_interval(session: SessionFile) -> None:
    interval = 0.03
    history: list[HistoryItem] = []
    item = StreamedItem("message", history, session, interval_s=interval)
    started = time.monotonic()
    deltas = 0
    while time.monotonic() - started < 0.15:
        item.add(f"d{deltas} ")
        deltas += 1
        time.sleep(0.002)
    elapsed = time.monotonic() - started
    item.finish()
    session.close()

    written = segments(session.path)
    assert len(written) <= elapsed / interval + 2
    expected = "".join(f"d{n} " for n in range(deltas))
    assert "".join(segment_text(p) for p in written) == expected
    assert read_session(session.path).items[0] == history[0]


def test_items_keep_the_order_in_which_they_started(session: SessionFile) -> None:
    """Reasoning and text stream at once; history and the file both keep start order."""
    history: list[HistoryItem] = [user_message("msg_u", "q")]
    thought = StreamedItem("reasoning", history, session)  # the real interval
    message = StreamedItem("message", history, session)
    thought.add("")  # empty deltas do not start an item
    assert (thought.started, len(history)) == (False, 1)

    message.add("Ans")
    thought.add("Think")
    assert (message.started, thought.started) == (True, True)
    message.add("wer")
    thought.add("ing")
    assert [type(i).__name__ for i in history] == ["MessageItem", "MessageItem", "ReasoningItem"]
    thought.finish()  # the engine finishes the thought first
    message.finish()
    session.close()

    answer, thinking = history[1], history[2]
    assert isinstance(answer, MessageItem) and answer.text == "Answer"
    assert isinstance(thinking, ReasoningItem) and thinking.text == "Thinking"
    assert read_session(session.path).items == history[1:]


def test_finish_without_deltas_writes_nothing(session: SessionFile) -> None:
    history: list[HistoryItem] = []
    item = StreamedItem("message", history, session)
    item.finish()
    session.close()
    assert history == []
    assert segments(session.path) == []


def test_reasoning_opaque_fields_land_on_the_last_segment(session: SessionFile) -> None:
    history: list[HistoryItem] = []
    item = StreamedItem("reasoning", history, session, interval_s=0)
    item.add("Step one. ")
    item.set_opaque(encrypted_content="gAAAA-ENC", signature=None, provider="openai")
    item.add("Step two.")
    item.finish()
    session.close()

    written = segments(session.path)
    assert len(written) >= 2
    for payload in written[:-1]:
        assert "encrypted_content" not in payload and "provider" not in payload
    assert written[-1]["encrypted_content"] == "gAAAA-ENC"
    assert written[-1]["provider"] == "openai"
    assert "signature" not in written[-1]
    assert "".join(segment_text(p) for p in written) == "Step one. Step two."

    (reasoning,) = history
    assert isinstance(reasoning, ReasoningItem)
    assert reasoning.text == "Step one. Step two."
    assert (reasoning.encrypted_content, reasoning.provider) == ("gAAAA-ENC", "openai")
    assert read_session(session.path).items == [reasoning]


def test_anthropic_signature_is_kept(session: SessionFile) -> None:
    history: list[HistoryItem] = []
    item = StreamedItem("reasoning", history, session, interval_s=FOREVER)
    item.add("thinking")
    item.set_opaque(encrypted_content=None, signature="SIG==", provider="anthropic")
    item.finish()
    session.close()
    (read_back,) = read_session(session.path).items
    assert isinstance(read_back, ReasoningItem)
    assert (read_back.text, read_back.signature, read_back.provider) == (
        "thinking",
        "SIG==",
        "anthropic",
    )
    assert read_back.encrypted_content is None


def test_reasoning_with_only_opaque_data_is_recorded(session: SessionFile) -> None:
    history: list[HistoryItem] = []
    item = StreamedItem("reasoning", history, session)
    item.set_opaque(encrypted_content="ENC", signature=None, provider="openai")
    assert item.started
    item.finish()
    session.close()

    (reasoning,) = history
    assert isinstance(reasoning, ReasoningItem)
    assert (reasoning.text, reasoning.encrypted_content) == ("", "ENC")
    assert read_session(session.path).items == [reasoning]


def test_set_opaque_with_nothing_does_not_start_an_item(session: SessionFile) -> None:
    history: list[HistoryItem] = []
    item = StreamedItem("reasoning", history, session)
    item.set_opaque(encrypted_content=None, signature=None, provider=None)
    item.finish()
    session.close()
    assert history == []
    assert segments(session.path) == []


# --- emit: the file first, then the client (issue 8.11) -------------------------------------


def saved_text(path: Path) -> str:
    return "".join(segment_text(p) for p in segments(path))


async def test_text_is_sent_only_after_it_is_in_the_file(session: SessionFile) -> None:
    sent: list[tuple[str, str]] = []
    history: list[HistoryItem] = []

    def emit(text: str) -> None:
        sent.append((text, saved_text(session.path)))  # what the file held when it was sent

    item = StreamedItem("message", history, session, interval_s=0.02, emit=emit)
    for delta in DELTAS * 10:
        item.add(delta)
    await asyncio.sleep(0.05)  # the model pauses: the cadence timer sends what is pending
    assert "".join(text for text, _ in sent) == FULL * 10, "sent within one interval"
    item.add("tail")
    item.finish()
    session.close()
    shown = ""
    for text, in_file in sent:
        shown += text
        assert in_file.startswith(shown), "never ahead of the file"
    assert shown == FULL * 10 + "tail" == saved_text(session.path)


async def test_a_shared_cadence_keeps_items_in_stream_order(session: SessionFile) -> None:
    cadence = SegmentCadence(0.02)
    sent: list[str] = []
    history: list[HistoryItem] = []
    message = StreamedItem("message", history, session, emit=sent.append, cadence=cadence)
    thought = StreamedItem("reasoning", history, session, emit=sent.append, cadence=cadence)
    message.add("A1 ")  # written and sent at once
    message.add("A2 ")  # pending
    thought.add("T1 ")  # the pending message text goes first
    thought.add("T2 ")
    message.add("A3 ")
    await asyncio.sleep(0.05)
    thought.finish()
    message.finish()
    session.close()
    assert "".join(sent) == "A1 A2 T1 T2 A3 "


async def test_a_failed_write_in_the_timer_surfaces_at_the_next_step(session: SessionFile) -> None:
    """The timer cannot raise into the turn; the turn gets the error at its next delta."""
    history: list[HistoryItem] = []
    item = StreamedItem("message", history, session, interval_s=0.02, emit=lambda _: None)
    item.add("first ")
    item.add("pending")
    session.close()  # any write now fails
    await asyncio.sleep(0.05)
    with pytest.raises(RuntimeError, match="closed"):  # a full disk: StorageError, same path
        item.add("more")
