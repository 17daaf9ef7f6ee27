"""Bad input for the history readers: torn, binary, huge, deleted, special files, forged
cursors. Each gives a clear error or a skipped-lines count, never a crash or a hang."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cody_daemon.errors import InvalidParams, NotFound
from cody_daemon.history.api import read_messages, resolve
from cody_daemon.history.discovery import HistoryIndex, HistoryRoots, SessionFile
from cody_daemon.history.lines import MAX_LINE_BYTES
from cody_daemon.history.paging import Cursor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "history"
ROLLOUT = FIXTURES / "codex" / "rollout_exec_resumed.jsonl"


def index() -> HistoryIndex:
    root = Path("/nonexistent-history-root")
    return HistoryIndex(HistoryRoots(root, root, root))


def read(path: Path, cursor: str | None = None, limit: int | None = None) -> dict:
    idx = index()
    return read_messages(
        idx, resolve(idx, None, None, str(path)), cursor, limit, include_original=False
    )


def without_source(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if k != "source"} for m in messages]


def codex_entry(path: Path) -> SessionFile:
    return SessionFile("codex", "codex-rollout", path)


def test_a_file_truncated_mid_line_keeps_every_whole_line(tmp_path: Path) -> None:
    lines = ROLLOUT.read_bytes().splitlines(keepends=True)
    whole = read(ROLLOUT)["messages"]
    last_item = max(i for i, line in enumerate(lines) if b'"response_item"' in line)
    truncated = tmp_path / "rollout.jsonl"
    truncated.write_bytes(b"".join(lines[:last_item]) + lines[last_item][:80])  # a crash mid-write
    page = read(truncated)
    assert page["skippedLines"] == 1
    assert without_source(page["messages"]) == without_source(whole[:-1])


def test_a_binary_file_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 4000)
    with pytest.raises(InvalidParams, match="not a session file Cody can read"):
        read(binary)


def test_binary_garbage_inside_a_session_is_skipped_and_counted(tmp_path: Path) -> None:
    lines = ROLLOUT.read_bytes().splitlines(keepends=True)
    garbage = bytes(range(1, 256)).replace(b"\n", b"") + b"\n"
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(lines[:5]) + garbage * 3 + b"".join(lines[5:]))
    page = read(path)
    assert page["skippedLines"] == 3
    assert len(page["messages"]) == len(read(ROLLOUT)["messages"])


def test_a_ten_megabyte_line_is_skipped_or_read_but_never_fatal(tmp_path: Path) -> None:
    lines = ROLLOUT.read_bytes().splitlines(keepends=True)
    junk = b"x" * (10 * 1024 * 1024) + b"\n"
    big_output = (
        json.dumps(
            {
                "timestamp": "2026-11-22T04:01:05.788Z",
                "type": "response_item",
                "payload": {
                    "type": "function_call_output",
                    "call_id": "call_big",
                    "output": "y" * (10 * 1024 * 1024),
                },
            }
        ).encode()
        + b"\n"
    )
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(lines[:10]) + junk + big_output + b"".join(lines[10:]))
    page = read(path)
    assert page["skippedLines"] == 1  # the junk line; the big JSON line is a real message
    big = [m for m in page["messages"] if m["content"][0].get("tool_use_id") == "call_big"]
    assert len(big[0]["content"][0]["content"]) == 10 * 1024 * 1024


@pytest.mark.timeout(120)
def test_a_line_longer_than_the_limit_is_skipped_without_holding_it(tmp_path: Path) -> None:
    lines = ROLLOUT.read_bytes().splitlines(keepends=True)
    path = tmp_path / "rollout.jsonl"
    with open(path, "wb") as handle:
        handle.writelines(lines[:10])
        chunk = b"z" * (1024 * 1024)
        for _ in range(MAX_LINE_BYTES // len(chunk) + 2):
            handle.write(chunk)
        handle.write(b"\n")
        handle.writelines(lines[10:])
    page = read(path)
    assert page["skippedLines"] == 1
    assert len(page["messages"]) == len(read(ROLLOUT)["messages"])


def test_a_file_deleted_between_pages_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(ROLLOUT.read_bytes())
    first = read(path, limit=2)
    assert first["nextCursor"]
    path.unlink()
    with pytest.raises(NotFound, match="does not exist"):
        read_messages(index(), codex_entry(path), first["nextCursor"], 2, include_original=False)


def test_a_file_deleted_while_being_read_is_read_to_the_end(tmp_path: Path) -> None:
    """An open file stays readable after unlink (POSIX); the page completes."""
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(ROLLOUT.read_bytes())
    from cody_daemon.history.lines import SessionFileReader
    from cody_daemon.history.paging import read_page
    from cody_daemon.history.parsers import new_parser

    with SessionFileReader.open(path) as reader:
        lines = reader.lines()
        next(lines)
        path.unlink()
        page = read_page(reader, new_parser("codex-rollout"), None, None)
    assert len(page.messages) == len(read(ROLLOUT)["messages"])


def test_a_replaced_or_truncated_file_refuses_the_old_cursor(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(ROLLOUT.read_bytes())
    cursor = read(path, limit=8)["nextCursor"]
    os.truncate(path, 100)
    with pytest.raises(NotFound, match="shorter than when this cursor was issued"):
        read_messages(index(), codex_entry(path), cursor, 2, include_original=False)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(ROLLOUT.read_bytes())
    replacement.replace(path)
    with pytest.raises(NotFound, match="was replaced"):
        read_messages(index(), codex_entry(path), cursor, 2, include_original=False)


@pytest.mark.parametrize("cursor", ["", "not-base64!", "eyJ4IjogMX0", Cursor(offset=-5).encode()])
def test_forged_cursors_are_invalid_params(cursor: str) -> None:
    with pytest.raises(InvalidParams, match="Invalid cursor"):
        Cursor.decode(cursor)


def test_special_files_are_refused_before_any_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InvalidParams, match="not a regular file"):
        read(fifo)  # would block forever if it were opened for a plain read
    with pytest.raises(InvalidParams, match="special file|not a regular file"):
        read(Path("/dev/zero"))
    with pytest.raises(InvalidParams, match="directory"):
        read(tmp_path)
    with pytest.raises(NotFound, match="does not exist"):
        read(tmp_path / "missing.jsonl")


def test_an_empty_file_and_a_file_of_blank_lines_are_not_sessions(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n\n   \n")
    for path in (empty, blank):
        with pytest.raises(InvalidParams, match="not a session file"):
            read(path)


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "a/b", "", "x" * 200, "id with space", "*"])
def test_session_ids_that_could_escape_the_folders_are_refused(bad_id: str) -> None:
    with pytest.raises(InvalidParams, match="Invalid session id"):
        index().find(None, bad_id)


def test_agent_mismatch_on_a_path_is_explained() -> None:
    with pytest.raises(InvalidParams, match="holds a codex session"):
        resolve(index(), "claude", None, str(ROLLOUT))


def test_pages_and_chunks_are_bounded_in_bytes_and_still_give_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Huge lines cannot make one answer (or one chunk in memory) unbounded."""
    from cody_daemon.history import paging

    whole = read(ROLLOUT)["messages"]
    monkeypatch.setattr(paging, "PAGE_BYTES", 2_000)
    monkeypatch.setattr(paging, "CHUNK_BYTES", 1_500)
    pages: list[list[dict]] = []
    cursor = None
    while True:
        page = read(ROLLOUT, cursor, 1000)
        pages.append(page["messages"])
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert len(pages) > 2 and all(pages[:-1])
    assert [m for page in pages for m in page] == whole
