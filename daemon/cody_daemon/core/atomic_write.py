"""The one way the daemon replaces a file: atomically, leaving no litter.

Every writer of a whole file goes through here: the edit tools (writeFile, applyPatch), the
refresh of a login file (providers/auth_sources.py) and the provider listing kept for
`initialize` (providers/listing.py). Session files are not rewritten but
appended to (store/session_file.py).

Invariants of `write_atomic` (and so of `replace_file`):
- readers see the old content or the whole new content, never a mix or a truncated file: the
  data goes to a temp file in the target's directory (same file system), is fsynced, and then
  replaces the target in one `os.replace` (rename(2));
- no temp-file litter, whatever happens: on Linux the temp file is created *unnamed*
  (`O_TMPFILE`), so a kill -9, a full disk or any other failure while it is written or synced
  leaves nothing behind; it gets a name (`linkat`) only for the instant before the rename.
  Where `O_TMPFILE` is not available (other systems, some file systems) a named
  `.<name>.<random>.tmp` is used, and it is removed on any error the process survives
  (issue 8.11);
- the permission bits and owner asked for are on the file before it gets its name, so a file
  meant to be private (a login file, 0600) is never readable by others under any name; a
  named temp file that will get a mode is created 0600 for the same reason;
- with neither mode nor owner given, a new file gets the default mode (0o666 less the umask,
  applied by the kernel) and the daemon's owner;
- the target itself is replaced, never written through: a symlink at `path` is replaced by a
  regular file (callers that must follow links resolve the path first).

Durability of the rename itself across a power loss (an fsync of the directory) is not
promised: a crash may leave the old content, never a mix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

__all__ = ["replace_file", "write_atomic"]


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
    """Replace `path` with `data` (see the module invariants).

    `mode` (permission bits) and `owner` (uid, gid) are set on the temp file before it is
    named; an owner the process may not give is silently not given (as `chown` by a non-root
    user), and is set before the mode so that the kernel does not clear set-id bits after.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    create_mode = 0o666 if mode is None else 0o600
    fd = _open_unnamed(path.parent, create_mode)
    named = fd is None
    if fd is None:
        fd = os.open(tmp, _CREATE_FLAGS, create_mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            if owner is not None and hasattr(os, "fchown"):
                with contextlib.suppress(OSError):
                    os.fchown(handle.fileno(), *owner)
            if mode is not None:
                if hasattr(os, "fchmod"):
                    os.fchmod(handle.fileno(), mode)
                else:  # pragma: no cover - Windows before Python 3.13
                    os.chmod(tmp, mode)
            handle.write(data)
            handle.flush()
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


def replace_file(path: Path, data: bytes, *, new_file_mode: int | None = None) -> None:
    """`write_atomic` that keeps an existing file's permission bits and owner.

    A file that does not exist yet gets `new_file_mode`, or the default mode when None.
    """
    try:
        existing = path.stat()
    except FileNotFoundError:
        write_atomic(path, data, new_file_mode)
        return
    write_atomic(path, data, stat.S_IMODE(existing.st_mode), (existing.st_uid, existing.st_gid))


def _open_unnamed(directory: Path, create_mode: int) -> int | None:
    """An unnamed file in `directory` (Linux `O_TMPFILE`), or None where there is none."""
    if not _O_TMPFILE or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory, os.O_WRONLY | _O_TMPFILE | os.O_CLOEXEC, create_mode)
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
