"""A real, small file system for tests that need a full disk (issue 8.9).

`small_tmpfs(path, size)` mounts a tmpfs of `size` bytes on `path` (root only). Where
mounting is impossible the test is skipped locally, and fails under `CI=true` (CI runs as
root and can mount).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["fill_until_full", "small_tmpfs"]


@contextlib.contextmanager
def small_tmpfs(path: Path, size: int) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        message = f"cannot mount a tmpfs here: {mounted.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], check=False)


def fill_until_full(directory: Path, leave_free: int = 0) -> Path:
    """Fill the file system of `directory` with one file, then give back `leave_free` bytes."""
    filler = directory / "filler.bin"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    if leave_free:
        size = filler.stat().st_size
        os.truncate(filler, max(0, size - leave_free))
    return filler
