"""Session files: line format, read-back, crash repair, locking and the session store.

Real files in `tmp_path`; the flock tests also use a real second process, because a lock is
held per open file description and the daemon that holds it is usually another process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
    SummaryPart,
    TextPart,
    user_message,
)
from cody_daemon.errors import InvalidParams, NotFound, SessionBusy
from cody_daemon.store.reader import INTERRUPTED_OUTPUT, read_session
from cody_daemon.store.session_file import SessionFile
from cody_daemon.store.store import SessionStore

SESSION_ID = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


# --- helpers -------------------------------------------------------------------------------


def meta(session_id: str = SESSION_ID, cwd: str = "/work/proj", **settings: Any) -> dict[str, Any]:
    return {
        "id": session_id,
        "cwd": cwd,
        "created": "2026-03-04T05:06:07Z",
        "cliVersion": "0.1.0",
        "settings": settings or {"model": "gpt-5", "approval_policy": "on-request"},
    }


def new_file(path: Path, **settings: Any) -> SessionFile:
    handle = SessionFile.create(path)
    handle.append("session_meta", meta(**settings))
    return handle


def write_items(path: Path, items: list[HistoryItem]) -> None:
    handle = new_file(path)
    try:
        for item in items:
            handle.append("response_item", item.payload())
    finally:
        handle.close()


def assistant(item_id: str, text: str) -> MessageItem:
    return MessageItem(
        id=item_id, role="assistant", content=[TextPart(type="output_text", text=text)]
    )


def raw_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def append_raw(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


SAMPLE_ITEMS: list[HistoryItem] = [
    user_message("msg_1", "list the files please"),
    ReasoningItem(
        id="rs_1",
        summary=[SummaryPart(text="The user wants a listing.")],
        encrypted_content="gAAAA-opaque",
        provider="openai",
    ),
    assistant("msg_2", "Let me look. ✓ ünïcode"),
    FunctionCallItem(call_id="call_1", name="listDir", arguments='{"dirPath": "."}'),
    FunctionCallOutputItem(
        call_id="call_1", output="/work/proj/\n  a.txt", raw_output={"entries": 1}
    ),
    FunctionCallItem(call_id="call_2", name="exec", arguments='{"command": "false"'),
    FunctionCallOutputItem(call_id="call_2", output="Exit code: 1", status="failed"),
    assistant("msg_3", "Done."),
]


# --- line format ---------------------------------------------------------------------------


def test_every_line_is_a_timestamped_json_object_ending_in_newline(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = new_file(path)
    handle.append("turn_context", {"turnId": "t1", "model": "gpt-5"})
    handle.append("response_item", user_message("msg_1", "hi\nthere").payload())
    handle.append("event", {"kind": "turn_end", "turnId": "t1"})
    handle.close()

    lines = raw_lines(path)
    assert len(lines) == 4
    types = []
    for raw in lines:
        assert raw.endswith(b"\n")
        assert raw.count(b"\n") == 1, "a newline inside the text must be escaped"
        line = json.loads(raw)
        assert set(line) == {"timestamp", "type", "payload"}
        assert TIMESTAMP.match(line["timestamp"]), line["timestamp"]
        types.append(line["type"])
    assert types == ["session_meta", "turn_context", "response_item", "event"]
    assert json.loads(lines[2])["payload"]["content"][0]["text"] == "hi\nthere"


def test_session_file_is_private_to_the_user(tmp_path: Path) -> None:
    handle = new_file(tmp_path / "s.jsonl")
    handle.close()
    assert (tmp_path / "s.jsonl").stat().st_mode & 0o777 == 0o600


def test_create_refuses_to_overwrite_an_existing_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(path, SAMPLE_ITEMS)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        SessionFile.create(path)
    assert path.read_bytes() == before


def test_append_after_close_fails_loudly(tmp_path: Path) -> None:
    handle = new_file(tmp_path / "s.jsonl")
    handle.close()
    assert handle.closed
    with pytest.raises(RuntimeError, match="closed"):
        handle.append("event", {"kind": "turn_end"})


async def test_sync_and_close_keep_everything_written(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = new_file(path)
    handle.append("response_item", SAMPLE_ITEMS[0].payload())
    await handle.sync()
    await handle.sync()  # nothing new: a no-op
    handle.close()
    handle.close()  # idempotent
    assert read_session(path).items == [SAMPLE_ITEMS[0]]


# --- read back -----------------------------------------------------------------------------


def test_written_history_reads_back_identically(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = new_file(path, model="gpt-5", approval_policy="never")
    handle.append("turn_context", {"turnId": "t1"})
    for item in SAMPLE_ITEMS[:5]:
        handle.append("response_item", item.payload())
    handle.append("event", {"kind": "turn_end", "turnId": "t1"})
    handle.append("turn_context", {"turnId": "t2"})
    for item in SAMPLE_ITEMS[5:]:
        handle.append("response_item", item.payload())
    handle.close()

    record = read_session(path)
    assert record.session_id == SESSION_ID
    assert record.cwd == "/work/proj"
    assert record.created == "2026-03-04T05:06:07Z"
    assert record.settings == {"model": "gpt-5", "approval_policy": "never"}
    assert record.items == SAMPLE_ITEMS
    assert record.turns == 2
    assert record.path == path
    assert (record.skipped_lines, record.torn_tail, record.interrupted_calls) == (0, False, [])
    reasoning = record.items[1]
    assert isinstance(reasoning, ReasoningItem)
    assert (reasoning.encrypted_content, reasoning.provider) == ("gAAAA-opaque", "openai")


def test_torn_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(path, SAMPLE_ITEMS)
    size = path.stat().st_size
    last_len = len(raw_lines(path)[-1])
    os.truncate(path, size - last_len // 2)  # a crash halfway through the last write

    record = read_session(path)
    assert record.items == SAMPLE_ITEMS[:-1]
    assert record.torn_tail is True
    assert record.skipped_lines == 0


def test_torn_line_that_still_parses_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(path, SAMPLE_ITEMS)
    os.truncate(path, path.stat().st_size - 1)  # only the newline was lost
    assert read_session(path).items == SAMPLE_ITEMS


def test_corrupt_middle_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = new_file(path)
    handle.append("response_item", SAMPLE_ITEMS[0].payload())
    handle.close()
    append_raw(path, b'{"timestamp": "x", "type": "response_item", "pay\n')  # not JSON
    append_raw(path, b"[1, 2, 3]\n")  # JSON, not a line object
    append_raw(path, b'{"timestamp": "x", "type": "event", "payload": "nope"}\n')
    append_raw(path, b'{"timestamp": "x", "type": "response_item", "payload": {"type": "x"}}\n')
    append_raw(path, b'{"type": "response_item", "payload": {"type": "message", "id": "m"}}\n')
    append_raw(path, b"\n   \n")  # blank lines are not errors
    handle = SessionFile.open_existing(path)
    handle.append("response_item", SAMPLE_ITEMS[2].payload())
    handle.close()

    record = read_session(path)
    assert record.items == [SAMPLE_ITEMS[0], SAMPLE_ITEMS[2]]
    assert record.skipped_lines == 5
    assert record.torn_tail is False


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "gone.jsonl"
    with pytest.raises(NotFound, match="does not exist") as info:
        read_session(path)
    assert str(path) in info.value.message


def test_empty_file_is_not_found_not_a_fresh_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(NotFound, match="empty or has no readable session_meta") as info:
        read_session(path)
    assert str(path) in info.value.message


def test_blank_only_file_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n\n  \n")
    with pytest.raises(NotFound, match="session_meta"):
        read_session(path)


def test_first_line_of_another_type_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = SessionFile.create(path)
    handle.append("response_item", SAMPLE_ITEMS[0].payload())
    handle.close()
    with pytest.raises(NotFound, match="does not start with a session_meta line"):
        read_session(path)


def test_unreadable_first_line_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"this is not json\n")
    with pytest.raises(NotFound, match="first line is not a session_meta record"):
        read_session(path)


def test_torn_session_meta_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = new_file(path)
    handle.close()
    os.truncate(path, 20)
    with pytest.raises(NotFound, match="session_meta"):
        read_session(path)


def test_directory_instead_of_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="cannot be read"):
        read_session(tmp_path)


# --- streamed segments ---------------------------------------------------------------------


def test_message_segments_with_one_id_concatenate(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(
        path,
        [
            user_message("msg_u", "hello"),
            assistant("msg_a", "Hel"),
            assistant("msg_a", "lo, "),
            assistant("msg_a", ""),
            assistant("msg_a", "wörld"),
            assistant("msg_b", "second"),
        ],
    )
    record = read_session(path)
    assert [type(i).__name__ for i in record.items] == ["MessageItem"] * 3
    first = record.items[1]
    assert isinstance(first, MessageItem)
    assert (first.id, first.text, first.role) == ("msg_a", "Hello, wörld", "assistant")
    assert len(first.content) == 1
    assert record.items[2] == assistant("msg_b", "second")


def test_interleaved_reasoning_and_message_segments_merge_by_id(tmp_path: Path) -> None:
    """The engine streams thought and text at once, so their segments interleave."""
    path = tmp_path / "s.jsonl"
    write_items(
        path,
        [
            user_message("msg_u", "q"),
            ReasoningItem(id="rs_1", summary=[SummaryPart(text="Think")]),
            assistant("msg_a", "An"),
            ReasoningItem(id="rs_1", summary=[SummaryPart(text="ing…")]),
            assistant("msg_a", "swer"),
            ReasoningItem(
                id="rs_1",
                summary=[SummaryPart(text=" done")],
                encrypted_content="ENC",
                signature="SIG",
                provider="anthropic",
            ),
        ],
    )
    record = read_session(path)
    assert len(record.items) == 3
    reasoning, message = record.items[1], record.items[2]
    assert isinstance(reasoning, ReasoningItem)
    assert reasoning.text == "Thinking… done"
    assert (reasoning.encrypted_content, reasoning.signature, reasoning.provider) == (
        "ENC",
        "SIG",
        "anthropic",
    )
    assert isinstance(message, MessageItem)
    assert message.text == "Answer"


def test_reasoning_with_only_opaque_data_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(
        path,
        [
            ReasoningItem(id="rs_1", summary=[SummaryPart(text="")]),
            ReasoningItem(id="rs_1", summary=[], encrypted_content="ENC", provider="openai"),
        ],
    )
    (item,) = read_session(path).items
    assert isinstance(item, ReasoningItem)
    assert (item.text, item.encrypted_content, item.provider) == ("", "ENC", "openai")


# --- interrupted calls ---------------------------------------------------------------------


def test_call_without_output_is_closed_right_after_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    call = FunctionCallItem(call_id="call_x", name="exec", arguments='{"command": "sleep 9"}')
    write_items(path, [*SAMPLE_ITEMS[:5], call, assistant("msg_9", "later text")])

    record = read_session(path)
    assert record.interrupted_calls == ["call_x"]
    index = record.items.index(call)
    repair = record.items[index + 1]
    assert repair == FunctionCallOutputItem(
        call_id="call_x", output=INTERRUPTED_OUTPUT, status="failed"
    )
    assert json.loads(repair.output) == {"error": "interrupted"}
    assert record.items[index + 2] == assistant("msg_9", "later text")
    calls = [i.call_id for i in record.items if isinstance(i, FunctionCallItem)]
    outputs = [i.call_id for i in record.items if isinstance(i, FunctionCallOutputItem)]
    assert sorted(calls) == sorted(outputs), "every call has exactly one output"


def test_persisted_repair_is_not_repeated_on_the_next_load(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    call = FunctionCallItem(call_id="call_x", name="exec", arguments="{}")
    write_items(path, [user_message("m", "run it"), call])
    first = read_session(path)
    assert first.interrupted_calls == ["call_x"]

    handle = SessionFile.open_existing(path)  # what a resume does
    handle.ensure_newline()
    for item in first.items:
        if isinstance(item, FunctionCallOutputItem) and item.call_id in first.interrupted_calls:
            handle.append("response_item", item.payload())
    handle.close()

    second = read_session(path)
    assert second.interrupted_calls == []
    assert second.items == first.items


# --- events and title ----------------------------------------------------------------------


def test_config_usage_and_title_events(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = new_file(path, model="gpt-5", approval_policy="on-request", sandbox_mode="read-only")
    handle.append("event", {"kind": "config", "settings": {"model": "o3"}})
    handle.append("event", {"kind": "config", "settings": {"approval_policy": "never"}})
    handle.append("event", {"kind": "usage", "total": {"inputTokens": 10, "outputTokens": 2}})
    handle.append(
        "event",
        {"kind": "usage", "last": {"inputTokens": 5}, "total": {"inputTokens": 15.0, "x": "y"}},
    )
    handle.append("event", {"kind": "approval", "decision": "allow_once", "reason": "user"})
    handle.close()

    record = read_session(path)
    assert record.settings == {
        "model": "o3",
        "approval_policy": "never",
        "sandbox_mode": "read-only",
    }
    assert record.usage_total == {"inputTokens": 15}
    assert record.items == []
    assert record.title is None


def test_session_grants_restore_under_the_new_and_the_old_decision_names(tmp_path: Path) -> None:
    """The engine records `allow_session` / `reject_session`; the wire kinds
    (`allow_always` / `reject_always`) restore the session's grants and rejections too."""
    path = tmp_path / "s.jsonl"
    handle = new_file(path)
    for decision, key in (
        ("allow_session", ["exec", "echo", "old"]),
        ("allow_always", ["exec", "echo", "new"]),
        ("reject_session", ["exec", "rm", "old"]),
        ("reject_always", ["exec", "rm", "new"]),
        ("allow_once", ["exec", "echo", "once"]),
    ):
        handle.append(
            "event", {"kind": "approval", "decision": decision, "reason": "user", "grantKey": key}
        )
    handle.close()

    record = read_session(path)
    assert record.granted == {("exec", "echo", "old"), ("exec", "echo", "new")}
    assert record.rejected == {("exec", "rm", "old"), ("exec", "rm", "new")}


def test_title_is_the_first_user_text(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(
        path,
        [
            assistant("msg_0", "not a user"),
            user_message("msg_1", "  Fix   the\nbuild  "),
            user_message("msg_2", "something else"),
        ],
    )
    assert read_session(path).title == "Fix the build"


def test_long_title_is_cut_at_80_characters_with_an_ellipsis(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    text = "refactor " * 30
    write_items(path, [user_message("msg_1", text)])
    title = read_session(path).title
    assert title is not None
    assert len(title) <= 80
    assert title.endswith("…")
    assert "\n" not in title
    assert title.startswith("refactor refactor")


def test_exactly_80_characters_are_not_cut(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    text = "x" * 80
    write_items(path, [user_message("msg_1", text)])
    assert read_session(path).title == text


def test_title_event_overrides_the_first_user_text(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    handle = new_file(path)
    handle.append("response_item", user_message("msg_1", "first words").payload())
    handle.append("event", {"kind": "title", "title": "Renamed"})
    handle.close()
    assert read_session(path).title == "Renamed"


# --- locking -------------------------------------------------------------------------------


def test_second_open_in_this_process_is_busy(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    first = new_file(path)
    with pytest.raises(SessionBusy, match="in use by another Cody daemon") as info:
        SessionFile.open_existing(path)
    assert path.name in info.value.message
    first.close()

    again = SessionFile.open_existing(path)
    with pytest.raises(SessionBusy):
        SessionFile.open_existing(path)
    again.close()
    SessionFile.open_existing(path).close()


def test_busy_open_does_not_write_or_leak(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    holder = new_file(path)
    before = path.read_bytes()
    for _ in range(50):
        with pytest.raises(SessionBusy):
            SessionFile.open_existing(path)
    assert path.read_bytes() == before
    holder.close()


def test_open_existing_of_missing_file_does_not_create_it(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(FileNotFoundError):
        SessionFile.open_existing(path)
    assert not path.exists()


_HOLDER = """
import sys
from pathlib import Path
from cody_daemon.store.session_file import SessionFile
handle = SessionFile.open_existing(Path(sys.argv[1]))
print("locked", flush=True)
sys.stdin.read()
handle.close()
"""


@contextmanager
def held_by_other_process(path: Path) -> Iterator[None]:
    """Another process opens and locks `path` until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_file_locked_by_another_process_is_busy(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(path, SAMPLE_ITEMS[:1])
    with held_by_other_process(path), pytest.raises(SessionBusy, match="close the session"):
        SessionFile.open_existing(path)
    # the lock goes with the other process
    SessionFile.open_existing(path).close()


# --- crash repair: ensure_newline ----------------------------------------------------------


def test_ensure_newline_lets_a_crashed_session_continue(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(path, SAMPLE_ITEMS[:3])
    append_raw(path, b'{"timestamp": "2026-01-01T00:00:00.000Z", "type": "respon')  # crash
    assert read_session(path).torn_tail is True

    handle = SessionFile.open_existing(path)
    handle.ensure_newline()
    handle.append("response_item", SAMPLE_ITEMS[3].payload())
    handle.close()

    record = read_session(path)
    assert record.items[:4] == SAMPLE_ITEMS[:4]
    assert record.interrupted_calls == ["call_1"]  # the new call has no output yet
    assert record.skipped_lines == 1  # the old torn line, now a terminated bad line
    assert record.torn_tail is False
    assert raw_lines(path)[-1].startswith(b'{"timestamp"')


def test_ensure_newline_leaves_a_clean_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_items(path, SAMPLE_ITEMS)
    before = path.read_bytes()
    handle = SessionFile.open_existing(path)
    handle.ensure_newline()
    handle.close()
    assert path.read_bytes() == before

    empty = tmp_path / "empty.jsonl"
    handle = SessionFile.create(empty)
    handle.ensure_newline()
    handle.close()
    assert empty.read_bytes() == b""


# --- the store -----------------------------------------------------------------------------


def test_new_path_layout(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    created = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
    assert store.new_path("abc-123", created) == (
        tmp_path / "sessions/2026/03/04/rollout-2026-03-04T05-06-07-abc-123.jsonl"
    )


def test_new_path_uses_utc_dates(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    created = datetime(2026, 12, 31, 23, 30, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert store.new_path("s", created) == (
        tmp_path / "sessions/2027/01/01/rollout-2027-01-01T04-30-00-s.jsonl"
    )


def make_session(
    store: SessionStore,
    session_id: str,
    *,
    cwd: str = "/work/proj",
    first_prompt: str | None = None,
    created: datetime | None = None,
    mtime: float | None = None,
) -> Path:
    handle = store.create(session_id, created or datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC))
    handle.append("session_meta", meta(session_id, cwd))
    handle.append("turn_context", {"turnId": "t"})
    if first_prompt is not None:
        handle.append("response_item", user_message("msg_" + session_id, first_prompt).payload())
        handle.append("response_item", assistant("msg_a" + session_id, "ok").payload())
    handle.close()
    if mtime is not None:
        os.utime(handle.path, (mtime, mtime))
    return handle.path


def test_create_then_find_from_a_fresh_store(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    path = make_session(SessionStore(sessions), SESSION_ID, first_prompt="hi")
    assert path == SessionStore(sessions).new_path(
        SESSION_ID, datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    )
    assert SessionStore(sessions).find(SESSION_ID) == path
    assert read_session(path).session_id == SESSION_ID


def test_find_unknown_id_says_how_to_list_sessions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    make_session(store, SESSION_ID)
    with pytest.raises(NotFound, match="session/list") as info:
        store.find("0190a1b2-c3d4-7e5f-8a9b-ffffffffffff")
    assert "0190a1b2-c3d4-7e5f-8a9b-ffffffffffff" in info.value.message


def test_find_after_the_file_was_removed_is_not_found(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    path = make_session(store, SESSION_ID)
    assert store.find(SESSION_ID) == path
    path.unlink()
    with pytest.raises(NotFound):
        store.find(SESSION_ID)


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "*", "x.jsonl", "a b", "..", "x\x00"])
def test_invalid_session_id_is_invalid_params(tmp_path: Path, bad: str) -> None:
    store = SessionStore(tmp_path / "sessions")
    make_session(store, SESSION_ID)
    with pytest.raises(InvalidParams, match="Invalid session id") as info:
        store.find(bad)
    assert [issue.key for issue in info.value.issues] == ["sessionId"]
    with pytest.raises(InvalidParams):
        store.delete(bad)
    assert store.find(SESSION_ID).exists()


def test_suffix_of_another_id_does_not_find_or_delete_that_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    path = make_session(store, SESSION_ID, first_prompt="precious work")
    suffix = SESSION_ID.rsplit("-", 1)[1]  # "0c1d2e3f4a5b": a valid, different id
    try:
        with pytest.raises(NotFound):
            SessionStore(tmp_path / "sessions").delete(suffix)
    finally:
        assert path.exists(), "another session's file was deleted"


def test_list_is_newest_first_with_titles_and_cwd_filter(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    store = SessionStore(sessions)
    proj_a, proj_b = tmp_path / "a", tmp_path / "b"
    proj_a.mkdir()
    proj_b.mkdir()
    base = 1_800_000_000.0
    make_session(store, "s-old", cwd=str(proj_a), first_prompt="old task", mtime=base)
    make_session(
        store,
        "s-new",
        cwd=str(proj_a),
        first_prompt="new task " + "y" * 100,
        created=datetime(2026, 1, 1, tzinfo=UTC),  # created earlier, written later
        mtime=base + 3600,
    )
    make_session(store, "s-b", cwd=str(proj_b), first_prompt="other project", mtime=base + 60)
    make_session(store, "s-untitled", cwd=str(proj_b), mtime=base + 120)

    listed = SessionStore(sessions).list()
    assert [s.session_id for s in listed] == ["s-new", "s-untitled", "s-b", "s-old"]
    by_id = {s.session_id: s for s in listed}
    assert by_id["s-old"].title == "old task"
    assert by_id["s-untitled"].title is None
    new_title = by_id["s-new"].title
    assert new_title is not None and len(new_title) <= 80 and new_title.endswith("…")
    assert by_id["s-new"].updated_at == datetime.fromtimestamp(base + 3600, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert by_id["s-b"].cwd == str(proj_b)
    assert by_id["s-b"].path == SessionStore(sessions).find("s-b")

    only_a = SessionStore(sessions).list(cwd=str(proj_a))
    assert [s.session_id for s in only_a] == ["s-new", "s-old"]
    # the same directory spelled differently still matches
    assert [s.session_id for s in store.list(cwd=str(proj_a / ".." / "a"))] == ["s-new", "s-old"]
    assert store.list(cwd=str(tmp_path / "elsewhere")) == []


def test_list_skips_unreadable_files_and_empty_store(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    assert SessionStore(sessions).list() == []
    store = SessionStore(sessions)
    make_session(store, "s-good", first_prompt="fine")
    day = sessions / "2026" / "03" / "04"
    (day / "rollout-2026-03-04T00-00-00-s-empty.jsonl").write_bytes(b"")
    (day / "rollout-2026-03-04T00-00-01-s-junk.jsonl").write_bytes(b"\x00\xff junk\n")
    assert [s.session_id for s in store.list()] == ["s-good"]


def test_delete_removes_the_file(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    path = make_session(store, SESSION_ID, first_prompt="bye")
    keep = make_session(store, "other")
    store.delete(SESSION_ID)
    assert not path.exists()
    assert keep.exists()
    with pytest.raises(NotFound):
        store.find(SESSION_ID)
    assert [s.session_id for s in store.list()] == ["other"]
    with pytest.raises(NotFound):
        store.delete(SESSION_ID)


def test_delete_refuses_while_another_process_holds_the_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    path = make_session(store, SESSION_ID, first_prompt="in use")
    before = path.read_bytes()
    with held_by_other_process(path), pytest.raises(SessionBusy):
        store.delete(SESSION_ID)
    assert path.read_bytes() == before
    store.delete(SESSION_ID)
    assert not path.exists()


def test_delete_refuses_while_this_daemon_has_it_open(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    handle = store.create(SESSION_ID, datetime.now(UTC))
    handle.append("session_meta", meta())
    with pytest.raises(SessionBusy):
        store.delete(SESSION_ID)
    assert handle.path.exists()
    handle.close()


# --- size ----------------------------------------------------------------------------------


def test_ten_thousand_items_read_back(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    handle = new_file(path)
    for n in range(2500):
        handle.append("response_item", user_message(f"msg_u{n}", f"prompt {n}").payload())
        handle.append(
            "response_item",
            FunctionCallItem(call_id=f"c{n}", name="exec", arguments='{"command":"ls"}').payload(),
        )
        handle.append(
            "response_item", FunctionCallOutputItem(call_id=f"c{n}", output="ok").payload()
        )
        handle.append("response_item", assistant(f"msg_a{n}", f"answer {n}").payload())
    handle.close()

    record = read_session(path)
    assert len(record.items) == 10_000
    assert record.interrupted_calls == []
    assert record.title == "prompt 0"
    last = record.items[-1]
    assert isinstance(last, MessageItem) and last.text == "answer 2499"
