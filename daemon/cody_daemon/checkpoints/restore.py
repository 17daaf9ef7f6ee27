"""Writing a snapshot's files back into the workspace, and only there.

The paths come from our own snapshots, but the workspace may have changed under them (a
symlink swapped in for a directory) and a store could be tampered with, so every path is
checked and every write is made relative to directory descriptors:

- a path must be relative, made of plain components (no `..`, `.`, empty or NUL), and never
  inside `.git`, `.cody`, any git directory or Cody's own directories
  (`policy.protected.is_protected_path`; `.git`/`.cody` also in any letter case);
- the walk from the workspace root opens each directory with `O_NOFOLLOW`: a symlink (or a
  file) where a directory is expected stops that path, which is reported as failed and left
  alone; nothing is ever written or removed through a symlink;
- a file is written to a temp name in its own directory, given its mode, fsynced and renamed
  over the target (readers see the old or the new file); a symlink is made under a temp name
  and renamed likewise; a removed file's directories are removed when they become empty;
- modes: the executable bit as the snapshot records it; a file that exists keeps its other
  permission bits, a file made again gets the usual 0666/0777 less the umask.

Runs in a worker thread (blocking I/O); blobs are read through one `git cat-file --batch`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

from ..policy.protected import is_protected_path
from .changes import ALLOWED_MODES, Change
from .git import CheckpointError, Git

__all__ = ["RestoreOutcome", "path_problem", "present_in_tree", "restore_changes"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FORBIDDEN_NAMES = frozenset({".git", ".cody"})


@dataclass
class RestoreOutcome:
    restored: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


class _Blocked(Exception):
    """This path cannot be restored safely (the message says why)."""


def path_problem(path: str) -> str | None:
    """Why `path` (from a snapshot) may never be written, or None."""
    if not path or "\0" in path or path.startswith("/"):
        return "not a relative path"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "not a plain path"
    if any(part.lower() in _FORBIDDEN_NAMES for part in parts):
        return "inside .git or .cody, which a rewind never touches"
    return None


def present_in_tree(work_tree: Path, path: str) -> bool:
    """Whether `path` is on disk under `work_tree` itself: every directory on the way a real
    directory (a symlink to elsewhere does not count), the entry itself of any kind."""
    current = work_tree
    parts = path.split("/")
    try:
        for name in parts[:-1]:
            current = current / name
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        os.lstat(current / parts[-1])
    except (OSError, ValueError):
        return False
    return True


def restore_changes(
    git: Git, work_tree: Path, changes: Iterable[Change], protected: tuple[Path, ...]
) -> RestoreOutcome:
    """Apply `changes` (from the state now to the state wanted: `new_*` is what to write,
    `deleted` means remove) under `work_tree`; see the module docstring."""
    outcome = RestoreOutcome()
    wanted = list(changes)
    removals = sorted(
        (c for c in wanted if c.change == "deleted"), key=lambda c: -c.path.count("/")
    )
    writes = sorted((c for c in wanted if c.change != "deleted"), key=lambda c: c.path)
    root_fd = os.open(work_tree, _DIR_FLAGS)
    reader = _BlobReader(git) if writes else None
    try:
        for change in removals:
            _attempt(outcome, change.path, work_tree, protected, partial(_remove, root_fd, change))
        umask = _umask()
        for change in writes:
            assert reader is not None
            _attempt(
                outcome,
                change.path,
                work_tree,
                protected,
                partial(_write, root_fd, change, reader, umask),
            )
    finally:
        os.close(root_fd)
        if reader is not None:
            reader.close()
    return outcome


def _attempt(
    outcome: RestoreOutcome,
    path: str,
    work_tree: Path,
    protected: tuple[Path, ...],
    run: Callable[[], None],
) -> None:
    problem = path_problem(path) or is_protected_path(work_tree / path, work_tree, protected)
    if problem is not None:
        outcome.failed.append((path, problem))
        return
    try:
        run()
    except _Blocked as exc:
        outcome.failed.append((path, str(exc)))
    except OSError as exc:
        outcome.failed.append((path, exc.strerror or exc.__class__.__name__))
    else:
        outcome.restored.append(path)


def _open_parent(root_fd: int, parts: list[str], *, create: bool) -> int:
    """An fd of the directory holding `parts[-1]`, walked without following a symlink."""
    fd = os.dup(root_fd)
    try:
        for name in parts[:-1]:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o777, dir_fd=fd)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _Blocked(
                        f"{name} is a symlink or a file where a directory is expected "
                        "(not followed)"
                    ) from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _remove(root_fd: int, change: Change) -> None:
    parts = change.path.split("/")
    try:
        parent = _open_parent(root_fd, parts, create=False)
    except FileNotFoundError:
        return  # already gone
    try:
        try:
            info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            raise _Blocked("a directory is there now")
        os.unlink(parts[-1], dir_fd=parent)
    finally:
        os.close(parent)
    _prune_empty_dirs(root_fd, parts[:-1])


def _prune_empty_dirs(root_fd: int, dirs: list[str]) -> None:
    """Remove the now-empty directories of a removed file, deepest first."""
    while dirs:
        try:
            holder = _open_parent(root_fd, dirs, create=False)  # the directory holding dirs[-1]
        except (OSError, _Blocked):
            return
        try:
            os.rmdir(dirs[-1], dir_fd=holder)
        except OSError:
            return  # not empty (or not ours to remove): stop
        finally:
            os.close(holder)
        dirs = dirs[:-1]


def _write(root_fd: int, change: Change, reader: _BlobReader, umask: int) -> None:
    assert change.new_mode is not None and change.new_blob is not None
    if change.new_mode not in ALLOWED_MODES:
        raise _Blocked(f"not a file or symlink in the checkpoint (mode {change.new_mode})")
    parts = change.path.split("/")
    data = reader.read(change.new_blob)
    parent = _open_parent(root_fd, parts, create=True)
    name = parts[-1]
    temp = f".{name[:100]}.cody-rewind.{secrets.token_hex(6)}.tmp"
    try:
        existing: os.stat_result | None
        try:
            existing = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            try:
                os.rmdir(name, dir_fd=parent)
            except OSError:
                raise _Blocked("a directory with other files is in the way") from None
            existing = None
        if change.new_mode == "120000":
            os.symlink(os.fsdecode(data), temp, dir_fd=parent)
        else:
            _write_file(parent, temp, data, _mode_for(change.new_mode, existing, umask))
        try:
            os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
    finally:
        os.close(parent)


def _write_file(parent: int, temp: str, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=parent)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=parent)
        raise
    os.close(fd)


def _mode_for(git_mode: str, existing: os.stat_result | None, umask: int) -> int:
    executable = git_mode == "100755"
    if existing is None or not stat.S_ISREG(existing.st_mode):
        return (0o777 if executable else 0o666) & ~umask
    bits = stat.S_IMODE(existing.st_mode)
    if executable:
        return bits | ((bits & 0o444) >> 2)  # x wherever r is, as git does
    return bits & ~0o111


def _umask() -> int:
    """The process umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


class _BlobReader:
    """Blob contents through one `git cat-file --batch` process."""

    def __init__(self, git: Git) -> None:
        self._process: subprocess.Popen[bytes] = git.popen("cat-file", "--batch")

    def read(self, blob: str) -> bytes:
        stdin, stdout = self._pipes()
        stdin.write(blob.encode("ascii") + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            raise _Blocked("the checkpoint store does not have this file's content")
        size = int(header[2])
        data = stdout.read(size)
        stdout.read(1)  # the newline after the content
        if len(data) != size:
            raise CheckpointError("git cat-file ended early")
        return data

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        return stdin, stdout

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
