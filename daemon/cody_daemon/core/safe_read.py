"""Opening files the daemon did not write itself, without hanging or reading without end.

Session files, the providers cache, config files (the user's and a project's), login files
and other agents' sessions live in directories anyone with the user's rights (a script, a
cloned repository's config, another program) may have filled: a FIFO named like a session
file blocks `open()` until a writer comes (the whole daemon stops when that happens on the
event loop), and a symlink to `/dev/zero` never ends. Every such file is opened here.

Invariants:
- only regular files are opened: the path is `stat`ed first (symlinks followed, so a link to
  a regular file works), and a FIFO, socket, device or directory is refused *without being
  opened* (opening some devices has effects); the open itself adds `O_NONBLOCK` and the
  result is checked again with `fstat` (the path may have been swapped in between); then the
  fd is made blocking again (reads of a regular file never wait for another process);
- `read_regular` never reads more than `limit` bytes: a larger file is refused, not read;
- `read_head(..., root=...)` (a repository's own files: commands, skills, `@path`) reads a
  file only when its real path lies inside `root`; a symlink out of it is refused without its
  target being opened, and the real path is opened with `O_NOFOLLOW` (a symlink swapped in
  since is refused too);
- the refusals are `OSError`s (`NotRegularFile`, `FileTooLarge`, `OutsideRoot`) whose
  `strerror` says what was found, so callers that already treat `OSError` as "cannot read"
  need nothing new.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

__all__ = [
    "CONFIG_FILE_LIMIT",
    "JSON_FILE_LIMIT",
    "FileTooLarge",
    "NotRegularFile",
    "OutsideRoot",
    "inside",
    "open_regular",
    "read_head",
    "read_regular",
    "read_regular_text",
]

CONFIG_FILE_LIMIT: Final = 4 * 1024 * 1024
"""A config file (TOML) larger than this is refused: real ones are a few KiB."""
JSON_FILE_LIMIT: Final = 4 * 1024 * 1024
"""A login file or a cache (JSON) larger than this is refused."""

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The path names a FIFO, a socket, a device or a directory."""


class FileTooLarge(OSError):
    """The file is larger than the reader's limit."""


class OutsideRoot(OSError):
    """The file's real path (a symlink's target) lies outside the directory it must be in."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refuse(path: str | os.PathLike[str], mode: int) -> NotRegularFile:
    kind = _kind(mode)
    reason = kind if kind == "not a regular file" else f"{kind}, not a regular file"
    return NotRegularFile(errno.EINVAL, reason, os.fspath(path))


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> int:
    """An fd on the regular file at `path` (see the module invariants); the caller closes it.
    FileNotFoundError and the other open(2) errors pass through."""
    before = os.stat(path)
    if not stat.S_ISREG(before.st_mode):
        raise _refuse(path, before.st_mode)
    fd = os.open(path, flags | os.O_NONBLOCK | _CLOEXEC)
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode):
            raise _refuse(path, after.st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole content of the regular file at `path`, at most `limit` bytes (else
    FileTooLarge, after reading no more than `limit + 1` bytes)."""
    fd = open_regular(path)
    with open(fd, "rb", closefd=True) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(
            errno.EFBIG, f"larger than {limit:,} bytes, so it is not read", os.fspath(path)
        )
    return data


def read_regular_text(path: Path | str, limit: int) -> str:
    """`read_regular` decoded as UTF-8 (UnicodeDecodeError, a ValueError, when it is not)."""
    return read_regular(path, limit).decode("utf-8")


def inside(real_path: str, real_root: str) -> bool:
    """Whether `real_path` is `real_root` or below it (both already real paths)."""
    return real_path == real_root or real_path.startswith(real_root.rstrip(os.sep) + os.sep)


def read_head(path: str | os.PathLike[str], limit: int, *, root: str | None = None) -> bytes:
    """At most the first `limit` bytes of the regular file at `path` (a longer file is not an
    error: the caller sees `limit` bytes). With `root` (a real path), the file's real path must
    lie inside it (else `OutsideRoot`, the target never opened)."""
    target = os.fspath(path)
    flags = os.O_RDONLY
    if root is not None:
        real = os.path.realpath(target)
        if not inside(real, root):
            why = (
                "a symlink to a file outside the project (not followed)"
                if os.path.islink(target)
                else "outside the project"
            )
            raise OutsideRoot(errno.EACCES, why, target)
        target, flags = real, flags | os.O_NOFOLLOW
    fd = open_regular(target, flags)
    chunks: list[bytes] = []
    try:
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)
