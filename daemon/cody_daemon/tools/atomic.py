"""Atomic file writes shared by the edit tools (writeFile, applyPatch).

Readers see the old bytes or the new ones, never a mix: the data goes to a temp file beside
the target, is fsynced, and replaces it with `os.replace`. The temp file never outlives a
failure.
"""

from __future__ import annotations

import contextlib
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


def write_atomic(
    path: Path, data: bytes, mode: int | None = None, owner: tuple[int, int] | None = None
) -> None:
    """Write `data` via a temp file beside `path` and `os.replace`.

    A new file gets the default mode (0o666 less the umask, applied by the kernel).
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
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
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
