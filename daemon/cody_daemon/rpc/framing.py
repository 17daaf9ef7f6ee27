"""Message framing on the daemon's stdin/stdout (docs/protocol.md, "Transport").

Two framings, detected from the first non-blank byte the client sends (`{` or `[`: NDJSON,
anything else: Content-Length) and then used for every message in both directions:

- `lsp`: `Content-Length: N\r\n` (other headers ignored, any case, `\n` tolerated), a blank
  line, then N bytes of JSON.
- `ndjson`: one JSON value per line; `\r\n` and blank lines are tolerated.

Resync (issue 8.8): the reader never trusts a frame to leave the stream aligned.

- Bytes that are not part of a frame (a stray print, the rest of a body whose declared length
  was too small) are skipped up to the next `Content-Length` header, *wherever it starts*
  (also in the middle of a line), and reported as one `FrameError` per run.
- A header block whose Content-Length is missing, negative, not a number, duplicated with
  different values, or over the limit is a `FrameError`; its body is then skipped as above.
- A declared length that is too large cannot swallow the next frame: a complete
  `Content-Length: ...` header line (ending in a raw newline, without a `"` in it) cannot occur
  inside valid JSON, because a JSON string cannot hold a raw newline. So when one starts
  inside the declared body, the body ends there and the next frame starts at that header.
- NDJSON: a line that starts with something other than `{`/`[` but holds a `{` later is
  split: the prefix is a `FrameError`, the rest is the message. An over-long line is a
  `FrameError` and is skipped to its newline without being buffered.

Memory stays bounded by the largest allowed frame: skipped bytes and over-long lines are
dropped as they arrive. The reader never raises on bad input: it yields `FrameError` for
things worth answering with -32700 and `None` at end of input.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MAX_FRAME_BYTES",
    "MAX_HEADER_BYTES",
    "FrameError",
    "FrameReader",
    "Framing",
    "FramingMode",
    "encode_frame",
]

Framing = Literal["lsp", "ndjson", "websocket"]
"""`websocket`: one message per WebSocket text frame (rpc/web_transport.py), nothing added."""
FramingMode = Literal["auto", "lsp", "ndjson"]

MAX_FRAME_BYTES = 256 * 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024
_CHUNK = 1 << 16

_HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"content-length[ \t]*:[^\r\n\"]*\r?\n", re.IGNORECASE)
"""A complete Content-Length header line: impossible inside a valid JSON body."""
_HEADER_LINE_PREFIX = re.compile(
    rb"c(?:o(?:n(?:t(?:e(?:n(?:t(?:-(?:l(?:e(?:n(?:g(?:t(?:h(?:[ \t]*(?::[^\r\n\"]*\r?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?",
    re.IGNORECASE,
)
"""What the stream may end with while a header line is still arriving."""
_HEADER_LIKE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+[ \t]*:[^\r\n]*\r?\n")
"""Any header line (`Name: value`); those right before a Content-Length belong to its block."""
_GLUED_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_BLANK_LINE = re.compile(rb"\r?\n[ \t]*\r?\n")
_HEADER_TAIL_KEEP = 64
"""Bytes kept at the end of skipped input: they may be the start of the next header."""


@dataclass(frozen=True, slots=True)
class FrameError:
    message: str


def encode_frame(body: bytes, framing: Framing) -> bytes:
    if framing == "lsp":
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    if framing == "websocket":
        return body
    return body + b"\n"


class FrameReader:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        mode: FramingMode = "auto",
        *,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        max_header_bytes: int = MAX_HEADER_BYTES,
    ) -> None:
        self._reader = reader
        self.framing: Framing | None = None if mode == "auto" else mode
        self._max_frame = max_frame_bytes
        self._max_header = max_header_bytes
        self._buf = bytearray()
        self._pos = 0
        self._eof = False
        self._ready: deque[bytes | FrameError] = deque()
        self._skipped = 0
        """Non-blank bytes skipped since the last frame (reported before the next one)."""
        self._quiet_skip = False
        """The next skip is the body of a frame already reported as bad: don't report it."""

    # -- buffer ---------------------------------------------------------------------------

    async def _fill(self) -> bool:
        """Read more input; False at end of input."""
        if self._eof:
            return False
        try:
            chunk = await self._reader.read(_CHUNK)
        except (ConnectionError, OSError, ValueError):
            chunk = b""
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _compact(self) -> None:
        """Drop consumed input (only where no buffer offsets are held)."""
        if self._pos and (self._pos == len(self._buf) or self._pos > (1 << 20)):
            del self._buf[: self._pos]
            self._pos = 0

    def _take(self, end: int) -> bytes:
        data = bytes(self._buf[self._pos : end])
        self._pos = end
        return data

    def _skip_to(self, end: int) -> None:
        """Drop input up to `end`, counting what is not whitespace."""
        if end > self._pos:
            if bytes(self._buf[self._pos : end]).strip():
                self._skipped += end - self._pos
            self._pos = end

    def _report_skipped(self) -> FrameError | None:
        skipped, quiet = self._skipped, self._quiet_skip
        self._skipped = 0
        self._quiet_skip = False
        if skipped and not quiet:
            return FrameError(f"skipped {skipped} bytes without a Content-Length header")
        return None

    # -- reading --------------------------------------------------------------------------

    async def read(self) -> bytes | FrameError | None:
        """The next message body, a FrameError, or None at end of input."""
        if self._ready:
            return self._ready.popleft()
        self._compact()
        if self.framing is None and not await self._detect():
            return None
        if self.framing == "ndjson":
            return await self._read_ndjson()
        return await self._read_lsp()

    async def _detect(self) -> bool:
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in b" \t\r\n":
                self._pos += 1
            if self._pos < len(self._buf):
                self.framing = "ndjson" if self._buf[self._pos] in b"{[" else "lsp"
                return True
            if not await self._fill():
                return False

    # -- Content-Length -------------------------------------------------------------------

    async def _read_lsp(self) -> bytes | FrameError | None:
        while True:
            header = _HEADER_START.search(self._buf, self._pos)
            if header is None:
                # Keep a tail that may be the start of a header; drop the rest.
                self._skip_to(max(self._pos, len(self._buf) - _HEADER_TAIL_KEEP))
                self._compact()
                if not await self._fill():
                    return None
                continue
            if not self._header_line_is_plausible(header.start()):
                self._skip_to(header.end())  # "content-length:" inside skipped text
                continue
            self._skip_to(self._block_start(header.start()))
            block_end = _BLANK_LINE.search(self._buf, header.start())
            if block_end is None or block_end.start() - header.start() > self._max_header:
                if len(self._buf) - header.start() > self._max_header:
                    self._skip_to(header.end())
                    self._quiet_skip = False
                    return self._error("header block too long")
                if not await self._fill():
                    return None
                continue
            skipped = self._report_skipped()
            headers = bytes(self._buf[self._pos : block_end.start()])
            bad_line = _first_bad_header_line(headers)
            if bad_line is not None:
                # No blank line before the body: what follows the headers is skipped.
                self._pos += bad_line
                self._quiet_skip = True
                frame: bytes | FrameError | None = FrameError("header block without a blank line")
            else:
                self._pos = block_end.end()
                length, problem = _content_length(headers)
                frame = await self._frame_after_header(length, problem)
            if skipped is None:
                return frame
            if frame is not None:
                self._ready.append(frame)  # the skipped bytes are reported first
            return skipped

    def _header_line_is_plausible(self, header_start: int) -> bool:
        """A header glued to the end of skipped bytes counts only as `Content-Length: N`.

        (The rest of a body cut short by a too-small length may mention "content-length:"
        in a string; that must not be taken for the next frame's header.) At the start of a
        line, any Content-Length line is a header, and a bad value is reported.
        """
        if header_start == self._pos or self._buf[header_start - 1] == ord("\n"):
            return True
        match = _GLUED_HEADER.match(self._buf, header_start)
        if match is not None:
            return True
        line_end = self._buf.find(b"\n", header_start)
        return line_end == -1 and len(self._buf) - header_start < _HEADER_TAIL_KEEP

    def _block_start(self, header_start: int) -> int:
        """Where the header block holding `header_start` begins: other headers may precede it."""
        if header_start > self._pos and self._buf[header_start - 1] != ord("\n"):
            return header_start  # glued to the end of something else: that is not a header
        start = header_start
        while start > self._pos:
            previous = self._buf.rfind(b"\n", self._pos, start - 1)
            line_start = previous + 1 if previous >= self._pos else self._pos
            if not _HEADER_LIKE.fullmatch(self._buf, line_start, start):
                break
            start = line_start
        return start

    async def _frame_after_header(
        self, length: int | None, problem: str | None
    ) -> bytes | FrameError | None:
        if problem is None and length is not None and length > self._max_frame:
            problem = f"message of {length} bytes exceeds the limit of {self._max_frame}"
        if problem is not None or length is None:
            self._quiet_skip = True  # its body is skipped up to the next header
            return FrameError(problem or "missing Content-Length header")
        return await self._read_body(length)

    async def _read_body(self, length: int) -> bytes | None:
        start = self._pos
        scanned = start
        while True:
            end = start + length
            # A complete header line inside the declared body: the length was too large.
            next_header = _HEADER_LINE.search(self._buf, max(start, scanned - _HEADER_TAIL_KEEP))
            if next_header is not None and next_header.start() < end:
                return self._take(next_header.start())
            scanned = len(self._buf)
            if len(self._buf) >= end and not self._header_may_be_arriving(start, end):
                return self._take(end)
            if not await self._fill():
                if len(self._buf) >= end:
                    return self._take(end)
                return None

    def _header_may_be_arriving(self, start: int, end: int) -> bool:
        """Does the input end with the start of a header line that began inside the body?"""
        tail_from = max(start, end - _HEADER_TAIL_KEEP)
        if len(self._buf) - tail_from > 2 * _HEADER_TAIL_KEEP:
            return False
        for candidate in range(tail_from, end):
            if self._buf[candidate] in b"cC":
                match = _HEADER_LINE_PREFIX.match(self._buf, candidate)
                if match is not None and match.end() == len(self._buf):
                    return True
        return False

    def _error(self, message: str) -> FrameError:
        skipped = self._report_skipped()
        if skipped is not None:
            self._ready.append(FrameError(message))
            return skipped
        return FrameError(message)

    # -- NDJSON ---------------------------------------------------------------------------

    async def _read_ndjson(self) -> bytes | FrameError | None:
        scan_from = self._pos
        while True:
            newline = self._buf.find(b"\n", scan_from)
            if newline == -1:
                if len(self._buf) - self._pos > self._max_frame:
                    return await self._discard_line()
                scan_from = len(self._buf)
                if not await self._fill():
                    line = self._take(len(self._buf)).strip()
                    return self._ndjson_message(line) if line else None
                continue
            if newline - self._pos > self._max_frame:
                self._pos = newline + 1
                return FrameError("message line too long")
            line = self._take(newline + 1).strip()
            scan_from = self._pos
            if line:
                return self._ndjson_message(line)

    def _ndjson_message(self, line: bytes) -> bytes | FrameError:
        if line[:1] in (b"{", b"["):
            return line
        brace = line.find(b"{")
        if brace <= 0:
            return line  # not JSON: the dispatcher answers -32700
        self._ready.append(line[brace:])
        return FrameError(f"skipped {brace} bytes before a message")

    async def _discard_line(self) -> FrameError | None:
        """Drop an over-long line up to its newline, without buffering it."""
        while True:
            newline = self._buf.find(b"\n", self._pos)
            if newline != -1:
                self._pos = newline + 1
                return FrameError("message line too long")
            self._pos = len(self._buf)
            self._compact()
            if not await self._fill():
                return FrameError("message line too long")


def _first_bad_header_line(headers: bytes) -> int | None:
    """The offset of the first line in a header block that is not `Name: value`."""
    offset = 0
    for line in headers.split(b"\n"):
        if not _HEADER_LIKE.fullmatch(line.rstrip(b"\r") + b"\n"):
            return offset
        offset += len(line) + 1
    return None


def _content_length(headers: bytes) -> tuple[int | None, str | None]:
    """The Content-Length of a header block, or a problem that makes the frame unusable."""
    values: list[bytes] = []
    for line in headers.splitlines():
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"content-length":
            values.append(value.strip())
    if not values:
        return None, "missing Content-Length header"
    if len(set(values)) > 1:
        return None, "conflicting Content-Length headers"
    value = values[0]
    if not value.isdigit():
        shown = value[:20].decode("ascii", "replace")
        return None, f"invalid Content-Length {shown!r}"
    return int(value), None
