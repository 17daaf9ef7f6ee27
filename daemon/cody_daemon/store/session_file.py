"""An open, locked, append-only session file.

Invariants:
- the file is opened with O_APPEND and every line is written with one `write()` call (looped
  only if the kernel writes short), so a crash loses at most the line being written;
- while open, the file holds an exclusive `flock`; a second daemon opening it gets
  `SessionBusy` (-32011) instead of interleaving writes;
- `sync()` fsyncs (at turn end and on close); `close()` releases the lock;
- a failed write (disk full, ...) raises `StorageError` and leaves no torn line: the partial
  line is truncated away, or, if even that fails, the next line starts on a fresh line
  (issue 8.9). The file is usable again as soon as the disk has room.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
from pathlib import Path
from typing import Any

from ..core.safe_read import open_regular
from ..errors import SessionBusy, StorageError
from .lines import LineType, encode_line

__all__ = ["SessionFile"]

logger = logging.getLogger(__name__)


class SessionFile:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._dirty = False
        self._size = os.fstat(fd).st_size
        """Bytes of complete lines in the file (what a failed write is truncated back to)."""
        self._torn = False
        """A failed write may have left a partial line that could not be truncated."""

    @classmethod
    def create(cls, path: Path) -> SessionFile:
        """Create a new session file (its parent directories too) and lock it."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise
        except OSError as exc:
            raise StorageError(path, exc) from None
        return cls._locked(path, fd)

    @classmethod
    def open_existing(cls, path: Path) -> SessionFile:
        """Open an existing session file for appending; SessionBusy if another holds it, a
        NotRegularFile (OSError) if it is a FIFO or a device (an open never blocks)."""
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND)
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
        reader = open_regular(self.path)
        try:
            last = os.pread(reader, 1, size - 1)
        finally:
            os.close(reader)
        if last != b"\n":
            self._write(b"\n")

    def append(self, line_type: LineType, payload: dict[str, Any]) -> None:
        """Write one line; `StorageError` if it cannot be written (then nothing of it stays)."""
        self._write(encode_line(line_type, payload))

    def _write(self, data: bytes) -> None:
        fd = self._fd
        if fd is None:
            raise RuntimeError(f"session file {self.path} is closed")
        if self._torn:
            data = b"\n" + data  # a blank line is skipped by the reader; a torn one is not
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except OSError as exc:
            self._forget_partial_write(fd)
            raise StorageError(self.path, exc) from None
        self._size += len(data)
        self._torn = False
        self._dirty = True

    def _forget_partial_write(self, fd: int) -> None:
        try:
            if os.fstat(fd).st_size != self._size:
                os.ftruncate(fd, self._size)
            return
        except OSError:
            pass
        self._torn = True
        try:
            self._size = os.fstat(fd).st_size
        except OSError:
            pass

    async def sync(self) -> None:
        """fsync the file (in a worker thread, so the event loop keeps serving)."""
        if self._fd is None or not self._dirty:
            return
        self._dirty = False
        try:
            await asyncio.to_thread(os.fsync, self._fd)
        except OSError as exc:
            self._dirty = True
            raise StorageError(self.path, exc) from None

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
        except OSError as exc:
            logger.warning("cannot sync %s on close: %s", self.path.name, exc.strerror)
        finally:
            os.close(fd)  # releases the flock
