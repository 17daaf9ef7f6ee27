"""Message framing on the daemon's stdin/stdout (PROTOCOL.md "Transport").

Two framings, detected from the first non-blank line the client sends and then used for
every message in both directions:

- `lsp`: `Content-Length: N\r\n` (other headers ignored, any case, `\n` tolerated), a blank
  line, then N bytes of JSON. Lines without a Content-Length are skipped, so the reader
  resyncs on the next header after garbage.
- `ndjson`: one JSON value per line; `\r\n` and blank lines are tolerated.

The reader never raises on bad input: it yields `FrameError` for things worth answering
with -32700 and `None` at end of input.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["FrameError", "FrameReader", "Framing", "FramingMode", "encode_frame"]

Framing = Literal["lsp", "ndjson"]
FramingMode = Literal["auto", "lsp", "ndjson"]

MAX_FRAME_BYTES = 256 * 1024 * 1024
_CONTENT_LENGTH = re.compile(rb"^\s*content-length\s*:\s*(\d+)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FrameError:
    message: str


def encode_frame(body: bytes, framing: Framing) -> bytes:
    if framing == "lsp":
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return body + b"\n"


class FrameReader:
    def __init__(self, reader: asyncio.StreamReader, mode: FramingMode = "auto") -> None:
        self._reader = reader
        self.framing: Framing | None = None if mode == "auto" else mode

    async def read(self) -> bytes | FrameError | None:
        """The next message body, a FrameError, or None at end of input."""
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:
                return FrameError("message line too long")
            except (ConnectionError, OSError):
                return None
            if not line:
                return None
            if not line.strip():
                continue
            if self.framing is None:
                self.framing = "ndjson" if line.lstrip()[:1] in (b"{", b"[") else "lsp"
            if self.framing == "ndjson":
                return line.strip()
            return await self._read_lsp(line)

    async def _read_lsp(self, first_header: bytes) -> bytes | FrameError | None:
        length: int | None = None
        problem: str | None = None
        line = first_header
        while True:
            match = _CONTENT_LENGTH.match(line)
            if match:
                length = int(match.group(1))
            try:
                line = await self._reader.readline()
            except ValueError:
                problem = "header line too long"  # skipped; its frame is reported below
                line = b"X-Skipped: overlong\r\n"
                continue
            except (ConnectionError, OSError):
                return None
            if not line:
                return None
            if not line.strip():
                break
        if length is None:
            return FrameError(problem or "missing Content-Length header")
        if length > MAX_FRAME_BYTES or problem is not None:
            await self._discard(length)
            return FrameError(problem or f"message of {length} bytes exceeds the limit")
        try:
            return await self._reader.readexactly(length)
        except asyncio.IncompleteReadError:
            return None

    async def _discard(self, length: int) -> None:
        remaining = length
        while remaining > 0:
            chunk = await self._reader.read(min(remaining, 1 << 20))
            if not chunk:
                return
            remaining -= len(chunk)
