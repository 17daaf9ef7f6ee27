"""Reading a session file page by page: chunks in timestamp order, opaque cursors.

The file is cut into *chunks*: a chunk ends before a line where a new turn starts (the
parser says where), or once it holds `CHUNK_MESSAGES` messages and nothing is half-built,
or at `CHUNK_HARD_LIMIT` messages in any case; a chunk without messages (unreadable lines)
ends once it has read `CHUNK_BYTES`. Each chunk is sorted by timestamp (stable;
a message without a timestamp keeps the time of the one before it), so messages come out in
timestamp order except across chunk edges. Memory is one chunk plus one page, whatever the
file size.

A cursor names a chunk start (byte offset, line number, the parser's small state there), how
many of that chunk's messages were already sent, and the file it belongs to, so the next page
re-reads at most one chunk. A cursor of a file that was replaced or truncated is refused.
A page reads at most about `PAGE_READ_BYTES` of the file (plus one chunk), so a file of
unreadable lines is paged through too, a page at a time (maybe an empty page with a cursor).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import InvalidParams, Issue, NotFound
from .base import Parser
from .lines import FileIdentity, SessionFileReader, decode_line
from .model import Msg, sort_key

__all__ = [
    "CHUNK_HARD_LIMIT",
    "CHUNK_MESSAGES",
    "PAGE_READ_BYTES",
    "Chunk",
    "Cursor",
    "Page",
    "iter_chunks",
    "read_page",
]

CHUNK_MESSAGES = 256
CHUNK_HARD_LIMIT = 2048
CHUNK_BYTES = 16 * 1024 * 1024
"""A chunk also ends once its lines add up to this (when settled; at 4x in any case)."""
PAGE_BYTES = 32 * 1024 * 1024
"""A page ends early (after at least one message) once its messages' lines add up to this."""
PAGE_READ_BYTES = 64 * 1024 * 1024
"""A page also ends (at a chunk end, maybe with no message) once it has read this much of the
file, so one request's reading is bounded whatever the file holds (unreadable lines count)."""


@dataclass(slots=True)
class Chunk:
    offset: int
    line: int
    state: dict[str, Any]
    """The parser's snapshot at the chunk start."""
    messages: list[Msg]
    end_offset: int
    end_line: int
    """The last line read for this chunk."""
    next_state: dict[str, Any]
    skipped: int
    eof: bool


@dataclass(slots=True)
class Cursor:
    offset: int = 0
    line: int = 1
    state: dict[str, Any] = field(default_factory=dict)
    skip: int = 0
    seen_line: int = 0
    """Lines up to here were read (and their skips reported) by earlier pages."""
    delivered: int = 0
    """Messages sent by earlier pages."""
    format: str = ""
    device: int = 0
    inode: int = 0

    def encode(self) -> str:
        data = orjson.dumps(
            {
                "o": self.offset,
                "l": self.line,
                "s": self.state,
                "k": self.skip,
                "h": self.seen_line,
                "n": self.delivered,
                "f": self.format,
                "d": self.device,
                "i": self.inode,
            }
        )
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            data = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            cursor = cls(
                offset=int(data["o"]),
                line=int(data["l"]),
                state=dict(data["s"]),
                skip=int(data["k"]),
                seen_line=int(data["h"]),
                delivered=int(data["n"]),
                format=str(data["f"]),
                device=int(data["d"]),
                inode=int(data["i"]),
            )
        except (ValueError, TypeError, KeyError, orjson.JSONDecodeError):
            raise bad_cursor(text) from None
        if cursor.offset < 0 or cursor.line < 1 or cursor.skip < 0:
            raise bad_cursor(text)
        return cursor


def bad_cursor(text: str) -> InvalidParams:
    return InvalidParams(
        "Invalid cursor; pass the nextCursor of the previous answer unchanged.",
        [Issue(key="cursor", message="not a cursor from this method", value=text[:80])],
    )


def iter_chunks(reader: SessionFileReader, parser: Parser, cursor: Cursor) -> Iterator[Chunk]:
    """The chunks from `cursor`'s chunk start to the end of the file."""
    start_offset, start_line = cursor.offset, cursor.line
    parser.restore(cursor.state)
    start_state = parser.snapshot()
    messages: list[Msg] = []
    skipped = 0
    chunk_bytes = 0
    last_line = cursor.line - 1
    last_end = cursor.offset
    raw_bytes = 0
    for line in reader.lines(cursor.offset, cursor.line):
        obj = decode_line(line.raw)
        if (
            messages and obj is not None and _cut_here(parser, obj, len(messages), chunk_bytes)
        ) or (not messages and raw_bytes >= CHUNK_BYTES):
            parser.end_chunk(messages, eof=False)
            next_state = parser.snapshot()
            yield Chunk(
                start_offset,
                start_line,
                start_state,
                _ordered(messages),
                line.offset,
                last_line,
                next_state,
                skipped,
                False,
            )
            start_offset, start_line, start_state = line.offset, line.number, next_state
            messages, skipped, chunk_bytes, raw_bytes = [], 0, 0, 0
        last_line, last_end = line.number, line.end
        raw_bytes += line.end - line.offset
        if obj is None:
            if line.raw is None or line.raw.strip():
                skipped += line.number > cursor.seen_line
            continue
        before = len(messages)
        if not parser.feed(line.number, obj, messages):
            skipped += line.number > cursor.seen_line
        chunk_bytes += line.end - line.offset
        for msg in messages[before:]:
            msg.size = line.end - line.offset
    parser.end_chunk(messages, eof=True)
    yield Chunk(
        start_offset,
        start_line,
        start_state,
        _ordered(messages),
        last_end,
        last_line,
        parser.snapshot(),
        skipped,
        True,
    )


def _cut_here(parser: Parser, obj: dict[str, Any], count: int, size: int) -> bool:
    """Whether the current chunk ends before the line `obj`."""
    if parser.boundary(obj):
        return True
    if count >= CHUNK_HARD_LIMIT or size >= 4 * CHUNK_BYTES:
        return True
    return (count >= CHUNK_MESSAGES or size >= CHUNK_BYTES) and parser.settled()


def _ordered(messages: list[Msg]) -> list[Msg]:
    """Stable timestamp order; an untimed message keeps the time of the one before it."""
    if len(messages) < 2:
        return messages
    keys: list[tuple[float, int]] = []
    current = float("-inf")
    for index, msg in enumerate(messages):
        key = sort_key(msg.timestamp)
        if key is not None:
            current = key
        keys.append((current, index))
    if all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1)):
        return messages
    order = sorted(range(len(messages)), key=keys.__getitem__)
    return [messages[i] for i in order]


@dataclass(slots=True)
class Page:
    messages: list[Msg]
    next_cursor: Cursor | None
    skipped_lines: int
    total: int | None
    """All messages of the file, when this page ended it and the reading began at its start."""
    identity: FileIdentity


def read_page(
    reader: SessionFileReader, parser: Parser, cursor: Cursor | None, limit: int | None
) -> Page:
    """One page of at most `limit` messages (all remaining ones when None) from `cursor`."""
    identity = reader.identity
    if cursor is None:
        cursor = Cursor(format=parser.format, device=identity.device, inode=identity.inode)
    elif (cursor.device, cursor.inode, cursor.format) != (
        identity.device,
        identity.inode,
        parser.format,
    ):
        raise NotFound(
            f"{reader.path} was replaced since this cursor was issued; read it again from the start."
        )
    elif cursor.offset > reader.current_size():
        raise NotFound(
            f"{reader.path} is shorter than when this cursor was issued (truncated?); "
            "read it again from the start."
        )
    out: list[Msg] = []
    skipped = 0
    skip = cursor.skip
    page_bytes = 0
    read_bytes = 0
    for chunk in iter_chunks(reader, parser, cursor):
        skipped += chunk.skipped
        read_bytes += chunk.end_offset - chunk.offset
        available = chunk.messages[skip:]
        room = len(available) if limit is None else limit - len(out)
        for index, msg in enumerate(available[:room]):
            if out and page_bytes + msg.size > PAGE_BYTES:
                room = index
                break
            page_bytes += msg.size
            out.append(msg)
        if room < len(available):
            resume = Cursor(
                chunk.offset, chunk.line, chunk.state, skip + room, chunk.end_line,
                cursor.delivered + len(out), cursor.format, cursor.device, cursor.inode,
            )  # fmt: skip
            return Page(out, resume, skipped, None, identity)
        skip = 0
        full = limit is not None and len(out) >= limit
        if (full or read_bytes >= PAGE_READ_BYTES) and not chunk.eof:
            resume = Cursor(
                chunk.end_offset, chunk.end_line + 1, chunk.next_state, 0, chunk.end_line,
                cursor.delivered + len(out), cursor.format, cursor.device, cursor.inode,
            )  # fmt: skip
            return Page(out, resume, skipped, None, identity)
    return Page(out, None, skipped, cursor.delivered + len(out), identity)
