"""The history operations the engine offers: list, read a page, read everything (import).

All of them block on file I/O and parsing; the engine runs them in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InvalidParams, Issue
from .discovery import HistoryIndex, SessionFile
from .lines import SessionFileReader
from .model import Msg, SourceInfo, sort_key
from .paging import Cursor, iter_chunks, read_page
from .parsers import AGENT_OF, detect_format, new_parser

__all__ = [
    "DEFAULT_PAGE",
    "FileScan",
    "LIST_PAGE",
    "list_sessions",
    "read_all",
    "read_messages",
    "resolve",
]

DEFAULT_PAGE = 200
LIST_PAGE = 200


def resolve(
    index: HistoryIndex, agent: str | None, session_id: str | None, path: str | None
) -> SessionFile:
    """The session file named by id (searched in the agents' folders) or by path (any file,
    its format detected from its content)."""
    if session_id is not None:
        return index.find(agent, session_id)
    assert path is not None
    with SessionFileReader.open(Path(path)) as reader:
        found = detect_format(reader)
    if agent is not None and AGENT_OF[found] != agent:
        raise InvalidParams(
            f"{path} holds a {AGENT_OF[found]} session ({found}), not a {agent} one.",
            [Issue(key="agent", message=f"the file is {found}", value=agent)],
        )
    return SessionFile(AGENT_OF[found], found, Path(path))


def list_sessions(
    index: HistoryIndex,
    agent: str | None,
    cwd: str | None,
    cursor: str | None,
    query: str | None = None,
) -> dict[str, Any]:
    """One page of sessions, most recently updated first; with `query`, only those whose
    title, directory, id or agent contain each of its words (case-insensitive)."""
    start = 0
    if cursor:
        try:
            start = int(cursor)
        except ValueError:
            raise InvalidParams(
                "Invalid cursor; pass the nextCursor of the previous _cody/history/list answer.",
                [
                    Issue(
                        key="cursor",
                        message="not a cursor from _cody/history/list",
                        value=cursor[:80],
                    )
                ],
            ) from None
    wanted = os.path.realpath(cwd) if cwd is not None else None
    words = query.casefold().split() if query else []
    infos = []
    for entry in index.files(agent, cwd):
        info = index.summarize(entry)
        if info is None:
            continue
        if wanted is not None and os.path.realpath(str(info.get("cwd", ""))) != wanted:
            continue
        if words and not _matches(info, words):
            continue
        infos.append(info)
    infos.sort(key=lambda i: (sort_key(i.get("updatedAt")) or 0.0, i["sessionId"]), reverse=True)
    page = infos[start : start + LIST_PAGE]
    result: dict[str, Any] = {"sessions": page}
    if start + LIST_PAGE < len(infos):
        result["nextCursor"] = str(start + LIST_PAGE)
    return result


def _matches(info: dict[str, Any], words: list[str]) -> bool:
    haystack = " ".join(
        str(info.get(key) or "") for key in ("title", "cwd", "sessionId", "agent")
    ).casefold()
    return all(word in haystack for word in words)


def read_messages(
    index: HistoryIndex,
    entry: SessionFile,
    cursor_text: str | None,
    limit: int | None,
    *,
    include_original: bool,
) -> dict[str, Any]:
    """One page of unified messages (wire dicts); the first page also carries the listing."""
    cursor = Cursor.decode(cursor_text) if cursor_text else None
    with SessionFileReader.open(entry.path) as reader:
        parser = new_parser(entry.format)
        page = read_page(reader, parser, cursor, limit)
    if page.total is not None:
        index.remember_count(page.identity, page.total)
    source = SourceInfo(
        entry.agent, entry.format, str(entry.path), parser.session_id or _session_id(index, entry)
    )
    result: dict[str, Any] = {
        "messages": [m.to_wire(source, include_original=include_original) for m in page.messages],
        "skippedLines": page.skipped_lines,
    }
    if page.next_cursor is not None:
        result["nextCursor"] = page.next_cursor.encode()
    if cursor is None:
        info = index.summarize(entry)
        if info is not None:
            result["session"] = info
    return result


def _session_id(index: HistoryIndex, entry: SessionFile) -> str | None:
    info = index.summarize(entry)
    return str(info["sessionId"]) if info else None


class FileScan:
    """Every message of a file, streamed chunk by chunk without their raw lines (for import:
    memory holds what the import keeps, not the file). After `messages()` is exhausted,
    `skipped_lines`, `session_id` and `cwd` describe the file."""

    def __init__(self, entry: SessionFile) -> None:
        self.entry = entry
        self.skipped_lines = 0
        self.session_id: str | None = None
        self.cwd: str | None = None

    def messages(self) -> Iterator[Msg]:
        with SessionFileReader.open(self.entry.path) as reader:
            parser = new_parser(self.entry.format)
            for chunk in iter_chunks(reader, parser, Cursor()):
                self.skipped_lines += chunk.skipped
                for msg in chunk.messages:
                    msg.original = None
                    msg.extra_lines = []
                    yield msg
        self.session_id, self.cwd = parser.session_id, parser.cwd


def read_all(entry: SessionFile) -> tuple[list[Msg], int, str | None, str | None]:
    """Every message of a file, its skipped-line count, session id and cwd."""
    scan = FileScan(entry)
    messages = list(scan.messages())
    return messages, scan.skipped_lines, scan.session_id, scan.cwd
