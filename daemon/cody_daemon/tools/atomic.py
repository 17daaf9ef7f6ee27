"""Atomic file writes shared by the edit tools (writeFile, applyPatch).

Readers see the old bytes or the new ones, never a mix: the data goes to a temp file in the
target's directory, is fsynced, and replaces the target with `os.replace`.

A crash leaves no litter (issue 8.11): on Linux the temp file is created *unnamed*
(`O_TMPFILE`), so a kill -9 while it is written or synced leaves nothing in the workspace;
it gets a name only for the instant between `linkat` and `rename`. Where `O_TMPFILE` is not
available (other systems, some file systems) a named `.<name>.<random>.tmp` is used, and it
is removed on any error the process survives.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

__all__ = ["write_atomic"]


_CREATE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)  # Windows: never translate newlines
)
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_NO_TMPFILE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT}
"""errnos meaning "this kernel or file system cannot make unnamed files here"."""


def write_atomic(
    path: Path, data: bytes, mode: int | None = None, owner: tuple[int, int] | None = None
) -> None:
    """Write `data` via a temp file beside `path` and `os.replace`.

    A new file gets the default mode (0o666 less the umask, applied by the kernel).
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = _open_unnamed(path.parent)
    named = fd is None
    if fd is None:
        fd = os.open(tmp, _CREATE_FLAGS, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                if hasattr(os, "fchmod"):
                    os.fchmod(handle.fileno(), mode)
                else:  # pragma: no cover - Windows before Python 3.13
                    os.chmod(tmp, mode)
            if owner is not None and hasattr(os, "fchown"):
                with contextlib.suppress(OSError):
                    os.fchown(handle.fileno(), *owner)
            os.fsync(handle.fileno())
            if not named:  # the file gets its name only now, right before the rename
                _link_unnamed(handle.fileno(), tmp)
                named = True
        os.replace(tmp, path)
    except BaseException:
        if named:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def _open_unnamed(directory: Path) -> int | None:
    """An unnamed file in `directory` (Linux `O_TMPFILE`), or None where there is none."""
    if not _O_TMPFILE or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory, os.O_WRONLY | _O_TMPFILE | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno in _NO_TMPFILE:
            return None
        raise


def _link_unnamed(fd: int, name: Path) -> None:
    """Give an `O_TMPFILE` file a name: linkat(/proc/self/fd/N, AT_SYMLINK_FOLLOW).

    (`os.link(src, dst)` without a dir fd calls plain link(2), which does not follow the
    /proc magic link; with `src_dir_fd` it calls linkat(2) with AT_SYMLINK_FOLLOW.)
    """
    proc_fds = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(str(fd), name, src_dir_fd=proc_fds, follow_symlinks=True)
    finally:
        os.close(proc_fds)
