"""The bounded buffers a command's output goes into.

- `OutputBuffer`: the first `head_limit` and the last `tail_limit` bytes of everything (what
  `exec` returns for a command it waited for).
- `OutputRing`: the latest `capacity` bytes, by absolute offset (what `readOutput` reads from
  a process that outlives its call: each read starts where the previous one ended).

Invariants: memory stays bounded whatever is appended (`OutputBuffer` below
`head_limit + 2 * tail_limit`, `OutputRing` below `capacity + one chunk`); appending costs
O(chunk), never O(buffer); bytes dropped are counted and said, never silently lost.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["HEAD_BYTES", "RING_BYTES", "TAIL_BYTES", "OutputBuffer", "OutputRing", "RingRead"]

HEAD_BYTES = 32 * 1024
TAIL_BYTES = 32 * 1024
RING_BYTES = 1024 * 1024
"""Output kept per process that outlives its call (the oldest is dropped beyond it)."""


class OutputBuffer:
    """Keeps the first `head_limit` and the last `tail_limit` bytes of a stream.

    Memory stays below `head_limit + 2 * tail_limit` bytes whatever is appended.
    """

    def __init__(self, head_limit: int = HEAD_BYTES, tail_limit: int = TAIL_BYTES) -> None:
        self.head_limit = head_limit
        self.tail_limit = tail_limit
        self.total = 0
        self._head = bytearray()
        self._tail = bytearray()

    def append(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self.tail_limit:
                del self._tail[: -self.tail_limit]

    @property
    def truncated(self) -> bool:
        return self.total > self.head_limit + self.tail_limit

    def text(self) -> str:
        """The kept output, with a `[... N bytes omitted ...]` line where bytes were dropped."""
        if not self.truncated:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        tail = bytes(self._tail[-self.tail_limit :])
        omitted = self.total - len(self._head) - len(tail)
        head_text = bytes(self._head).decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        return f"{head_text}\n[... {omitted} bytes omitted ...]\n{tail_text}"


@dataclass(frozen=True, slots=True)
class RingRead:
    data: bytes
    """The bytes read (what is still kept of the range asked for)."""
    dropped: int
    """Bytes of the range asked for that the ring no longer had (oldest dropped first)."""
    end: int
    """The offset the next read starts at."""


class OutputRing:
    """The latest `capacity` bytes of a stream, addressed by absolute offset."""

    def __init__(self, capacity: int = RING_BYTES) -> None:
        self.capacity = capacity
        self.total = 0
        """Bytes ever appended (the offset the next byte gets)."""
        self._chunks: deque[bytes] = deque()
        self._start = 0
        """The offset of the first kept byte."""
        self._kept = 0

    @property
    def start(self) -> int:
        return self._start

    def append(self, data: bytes) -> None:
        if not data:
            return
        if len(data) > self.capacity:
            skip = len(data) - self.capacity
            self.total += skip
            self._chunks.clear()
            self._kept = 0
            self._start = self.total
            data = data[skip:]
        self._chunks.append(bytes(data))
        self._kept += len(data)
        self.total += len(data)
        while self._kept > self.capacity:
            first = self._chunks[0]
            excess = self._kept - self.capacity
            if len(first) <= excess:
                self._chunks.popleft()
                self._kept -= len(first)
                self._start += len(first)
            else:
                self._chunks[0] = first[excess:]
                self._kept -= excess
                self._start += excess

    def read(self, offset: int, limit: int | None = None) -> RingRead:
        """The bytes from `offset` on (at most `limit` of the latest ones when given: the
        older ones of the range count as dropped)."""
        offset = max(0, min(offset, self.total))
        dropped = max(0, self._start - offset)
        begin = max(offset, self._start)
        if limit is not None and self.total - begin > limit:
            dropped += self.total - limit - begin
            begin = self.total - limit
        skip = begin - self._start
        parts: list[bytes] = []
        for chunk in self._chunks:
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            parts.append(chunk[skip:] if skip else chunk)
            skip = 0
        return RingRead(b"".join(parts), dropped, self.total)
