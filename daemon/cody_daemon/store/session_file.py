"""An open, locked, append-only session file.

Invariants:
- the file is opened with O_APPEND and every line is written with one `write()` call (looped
  only if the kernel writes short), so a crash loses at most the line being written;
- while open, the file holds an exclusive `flock`; a second daemon opening it gets
  `SessionBusy` (-32011) instead of interleaving writes;
- `sync()` fsyncs (at turn end and on close); `close()` releases the lock.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
from pathlib import Path
from typing import Any

from ..errors import SessionBusy
from .lines import LineType, encode_line

__all__ = ["SessionFile"]


class SessionFile:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._dirty = False

    @classmethod
    def create(cls, path: Path) -> SessionFile:
        """Create a new session file (its parent directories too) and lock it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        return cls._locked(path, fd)

    @classmethod
    def open_existing(cls, path: Path) -> SessionFile:
        """Open an existing session file for appending; SessionBusy if another holds it."""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        return cls._locked(path, fd)

    @classmethod
    def _locked(cls, path: Path, fd: int) -> SessionFile:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SessionBusy(
                    f"Session file {path.name} is in use by another Cody daemon; "
                    "close the session there first."
                ) from None
            raise
        return cls(path, fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def ensure_newline(self) -> None:
        """Terminate a torn last line left by a crash, so the next line starts clean."""
        if self._fd is None:
            return
        size = os.fstat(self._fd).st_size
        if size == 0:
            return
        with open(self.path, "rb") as handle:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                self._write(b"\n")

    def append(self, line_type: LineType, payload: dict[str, Any]) -> None:
        self._write(encode_line(line_type, payload))

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise RuntimeError(f"session file {self.path} is closed")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._dirty = True

    async def sync(self) -> None:
        """fsync the file (in a worker thread, so the event loop keeps serving)."""
        if self._fd is None or not self._dirty:
            return
        self._dirty = False
        await asyncio.to_thread(os.fsync, self._fd)

    def discard(self) -> None:
        """Remove the file and close it (a session never prompted is not kept). The file is
        unlinked while still locked, so no other daemon can have opened it meanwhile."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self._dirty:
                os.fsync(fd)
        finally:
            os.close(fd)  # releases the flock
