"""Reading a session file line by line, safely: bounded memory, no hang, clear errors.

Invariants:
- only regular files are opened (core/safe_read.py: a FIFO, a device or a directory is
  refused before it is opened, so a hostile symlink cannot make a read block or never end);
- `head` reads a bounded prefix whatever the file holds (a listing never reads a huge file);
- a line is never held in memory beyond `MAX_LINE_BYTES`: a longer one is consumed in chunks,
  reported as `None` (the caller counts it as skipped) and reading goes on after it, unless it
  runs past `MAX_SKIP_BYTES` (a file of zeros, say): then reading ends there;
- the offsets and 1-based line numbers reported are exact, so a reader can resume at any line;
- the last line of the file is returned even without its newline (a torn line fails to parse
  and is counted by the caller, like any other unreadable line).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..core.safe_read import NotRegularFile, open_regular
from ..errors import InvalidParams, Issue, NotFound

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_SKIP_BYTES",
    "FileIdentity",
    "Line",
    "SessionFileReader",
    "decode_line",
]

MAX_LINE_BYTES = 32 * 1024 * 1024
"""Longer lines are skipped (Claude Code stores whole tool outputs on one line; 32 MiB is
far beyond any real one and keeps a hostile file from filling memory)."""

MAX_SKIP_BYTES = 256 * 1024 * 1024
"""An overlong line is read through (to find where the next one starts) up to this size; a
longer one ends the file for its readers (nothing after it is read)."""
MAX_HEAD_LINE_BYTES = MAX_LINE_BYTES
"""How far past its head a listing reads to finish the head's last line."""

_READ_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileIdentity:
    device: int
    inode: int
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class Line:
    offset: int
    """Byte offset of the line's first byte."""
    number: int
    """1-based line number."""
    raw: bytes | None
    """The line (newline included), or None when it was longer than MAX_LINE_BYTES."""
    end: int
    """Byte offset just past the line."""


def decode_line(raw: bytes | None) -> dict[str, Any] | None:
    """The JSON object on the line, or None (blank lines included: callers skip those)."""
    if raw is None:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


class SessionFileReader:
    """An open session file; iterate `lines(offset, number)` from any line start."""

    def __init__(self, path: Path, handle: BinaryIO, identity: FileIdentity) -> None:
        self.path = path
        self._handle = handle
        self.identity = identity

    @classmethod
    def open(cls, path: Path) -> SessionFileReader:
        """Open `path` for reading; NotFound when missing, InvalidParams when not a file."""
        try:
            fd = open_regular(path)
        except FileNotFoundError:
            raise NotFound(f"{path} does not exist (deleted or moved?).") from None
        except NotRegularFile as exc:
            raise _not_a_file(path, exc.strerror or "not a regular file") from None
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.ENODEV):
                raise _not_a_file(path, "a special file") from None
            raise NotFound(f"{path} cannot be read: {exc.strerror}.") from None
        try:
            info = os.fstat(fd)
            handle = os.fdopen(fd, "rb", buffering=_READ_CHUNK)
        except BaseException:
            os.close(fd)
            raise
        identity = FileIdentity(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        return cls(path, handle, identity)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> SessionFileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def current_size(self) -> int:
        return os.fstat(self._handle.fileno()).st_size

    def lines(self, offset: int = 0, number: int = 1, *, stop: int | None = None) -> Iterator[Line]:
        """Lines from byte `offset` (a line start) numbered from `number`, to the end of file;
        with `stop`, nothing at or past byte `stop` is read (a line it cuts ends the lines,
        unreported)."""
        handle = self._handle
        try:
            handle.seek(offset)
            while True:
                want = MAX_LINE_BYTES if stop is None else min(MAX_LINE_BYTES, stop - offset)
                raw = handle.readline(want) if want > 0 else b""
                if not raw:
                    return
                start = offset
                if not raw.endswith(b"\n") and len(raw) == want:
                    if want < MAX_LINE_BYTES:
                        return  # cut by `stop`
                    offset += len(raw)
                    while True:  # consume the rest of the overlong line, chunk by chunk
                        room = _READ_CHUNK if stop is None else min(_READ_CHUNK, stop - offset)
                        if room <= 0:
                            return
                        if offset - start >= MAX_SKIP_BYTES:
                            yield Line(start, number, None, offset)
                            return  # the rest of the file is one endless line: not read
                        rest = handle.readline(room)
                        offset += len(rest)
                        if not rest or rest.endswith(b"\n"):
                            break
                    yield Line(start, number, None, offset)
                else:
                    offset += len(raw)
                    yield Line(start, number, raw, offset)
                number += 1
        except OSError as exc:
            raise NotFound(f"{self.path} could not be read to the end: {exc.strerror}.") from None

    def head(self, max_bytes: int) -> Iterator[Line]:
        """The lines that start within the first `max_bytes` bytes, reading no further than
        `max_bytes + MAX_HEAD_LINE_BYTES` (a longer line there is reported as None, or not
        at all), whatever the file holds (a huge file without a newline included)."""
        for line in self.lines(stop=max_bytes + MAX_HEAD_LINE_BYTES):
            if line.offset >= max_bytes:
                return
            yield line

    def tail(self, max_bytes: int) -> list[bytes]:
        """The complete lines within the last `max_bytes` bytes (the first, cut one dropped)."""
        size = self.current_size()
        start = max(0, size - max_bytes)
        self._handle.seek(start)
        data = self._handle.read(size - start)
        pieces = data.split(b"\n")
        if start > 0:
            pieces = pieces[1:]
        return [piece for piece in pieces if piece.strip()]


def _not_a_file(path: Path, kind: str) -> InvalidParams:
    return InvalidParams(
        f"{path} is not a session file: {kind}.",
        [Issue(key="path", message=f"{kind}, not a regular file", value=str(path))],
    )
