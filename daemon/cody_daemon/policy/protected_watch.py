"""The protected paths of a workspace, found once and kept current with inotify (Linux).

`protected.scan` walks the whole workspace, which costs seconds on a tree with a large
`node_modules` (bench/README.md); every sandboxed command needs its result. `cached_scan`
walks a workspace once, puts an inotify watch on every directory it walked (the watch is
added before the directory is listed, so no change falls between the two), and afterwards
only re-lists the directories the kernel reports changed: a call costs one `read` of the
inotify descriptor when nothing changed.

Invariants (nothing weaker than a fresh `protected.scan`):
- A result reflects every change made before the call: the kernel queues an inotify event
  inside the system call that makes the change, and each call drains the queue first.
- Any create, delete, move or write in a watched directory re-lists that directory: a new
  `.git` or `.cody` (a directory, a file, a symlink), a directory becoming a git directory
  (`HEAD` and `objects` + `refs`, or `commondir`), a new or moved-in subdirectory (walked and
  watched), a removed or moved-out one (forgotten with everything below it).
- What a `.git` file or a `.git`/`.cody` symlink points to is resolved again at every call
  (it can change without an event in the workspace).
- Whenever the watch cannot be trusted, the full scan is used: a queue overflow (the tree is
  walked again), no inotify, too many directories for the watch budget (half the user's
  `max_user_watches`, at most `MAX_WATCHES`: the user's editors need theirs too; the watches
  are released then), or a scan that hit its entry budget (incomplete: the scan's own note
  applies).
- At most `MAX_ROOTS` workspaces are watched at once (the least recently used is dropped,
  its watches released); each uses one inotify instance. Thread-safe: commands of several
  sessions plan in worker threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import protected

__all__ = ["MAX_ROOTS", "MAX_WATCHES", "cached_scan", "forget_all"]

log = logging.getLogger(__name__)

MAX_ROOTS = 4
MAX_WATCHES = 200_000

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")


class _Unwatchable(Exception):
    """The tree cannot be watched (no inotify, the watch budget): scan it every time."""


class _Libc:
    functions: tuple[object, object, object] | None = None
    looked_up = False


def _inotify() -> tuple[object, object, object]:
    if not _Libc.looked_up:
        _Libc.looked_up = True
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _Libc.functions = (
                libc.inotify_init1,
                libc.inotify_add_watch,
                libc.inotify_rm_watch,
            )
        except (OSError, AttributeError):
            _Libc.functions = None
    if _Libc.functions is None:
        raise _Unwatchable("inotify is not available")
    return _Libc.functions


def _watch_budget() -> int:
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text().strip())
    except (OSError, ValueError):
        limit = 8192
    return max(0, min(MAX_WATCHES, limit // 2))


@dataclass
class _Tree:
    """One watched workspace (see the module docstring)."""

    root: Path
    roots: tuple[Path, ...]
    fd: int
    budget: int
    root_wd: int = -1
    parent: dict[int, tuple[int, str]] = field(default_factory=dict)
    """wd -> (the parent directory's wd, name); the root's parent is -1 and its name its path."""
    kids: dict[int, dict[str, int]] = field(default_factory=dict)
    """wd -> {name: wd} of its watched subdirectories."""
    entries: dict[int, list[tuple[Path, bool]]] = field(default_factory=dict)
    """wd -> the protected entries found in that directory, for the directories that have
    some: (path, a `.git`/`.cody` file or symlink, whose target is resolved at each call).
    A git directory is its own entry."""
    sizes: dict[int, int] = field(default_factory=dict)
    """wd -> how many entries its listing had (`protected.scan`'s budget counts them)."""
    count: int = 0
    """The sum of `sizes`."""

    def path(self, wd: int) -> Path:
        parts: list[str] = []
        while True:
            up, name = self.parent[wd]
            if up == -1:
                return Path(name, *reversed(parts))
            parts.append(name)
            wd = up

    # -- walking -----------------------------------------------------------------------

    def add(self, walk: list[tuple[Path, int, str]]) -> None:
        """Watch each directory, then list it, and walk what is below it."""
        _, add_watch, _ = _inotify()
        stack = list(walk)
        while stack:
            directory, up, base = stack.pop()
            if len(self.parent) >= self.budget:
                raise _Unwatchable(f"more than {self.budget} directories to watch")
            wd = int(add_watch(self.fd, os.fsencode(directory), _MASK))  # type: ignore[operator]
            if wd < 0:
                code = ctypes.get_errno()
                if code in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                    continue  # gone meanwhile, or unreadable (a scan skips it too)
                raise _Unwatchable(f"inotify_add_watch: {os.strerror(code)}")
            if wd in self.parent:  # the same directory under another name: watch it anew
                self.forget(wd)
                wd = int(add_watch(self.fd, os.fsencode(directory), _MASK))  # type: ignore[operator]
                if wd < 0:
                    continue
            self.parent[wd] = (up, base)
            self.kids[wd] = {}
            if up == -1:
                self.root_wd = wd
            else:
                self.kids[up][base] = wd
            found = self.list(wd, directory)
            if self.count > protected.SCAN_BUDGET:
                raise _Unwatchable("the workspace has more entries than the scan budget")
            stack.extend(found)

    def list(self, wd: int, directory: Path) -> list[tuple[Path, int, str]]:
        """(Re-)list one watched directory: its protected entries; its subdirectories that
        are not watched yet (to walk); those that are gone are forgotten."""
        try:
            found = list(os.scandir(directory))
        except OSError:
            found = []
        self.count += len(found) - self.sizes.get(wd, 0)
        self.sizes[wd] = len(found)
        names = {entry.name for entry in found}
        mine: list[tuple[Path, bool]] = []
        walk: list[tuple[Path, int, str]] = []
        if directory != self.root and protected.looks_like_git_dir(names):
            mine.append((directory, False))
            found = []  # protected whole: nothing below it is walked
        kept: set[str] = set()
        for entry in found:
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if entry.name in protected.PROTECTED_NAMES:
                mine.append((Path(entry.path), is_link or not is_dir))
                continue
            if is_dir:
                kept.add(entry.name)
                if entry.name not in self.kids[wd]:
                    walk.append((Path(entry.path), wd, entry.name))
        for name, child in list(self.kids[wd].items()):
            if name not in kept:
                self.forget(child)
        if mine:
            self.entries[wd] = mine
        else:
            self.entries.pop(wd, None)
        return walk

    def forget(self, wd: int) -> None:
        """Drop a directory and everything below it (their watches released)."""
        _, _, rm_watch = _inotify()
        stack = [wd]
        while stack:
            current = stack.pop()
            stack.extend(self.kids.pop(current, {}).values())
            up, name = self.parent.pop(current, (-2, ""))
            if up in self.kids and self.kids[up].get(name) == current:
                del self.kids[up][name]
            self.entries.pop(current, None)
            self.count -= self.sizes.pop(current, 0)
            rm_watch(self.fd, current)  # type: ignore[operator]

    # -- events ------------------------------------------------------------------------

    def drain(self) -> bool:
        """Apply every queued event; False when the tree must be walked again."""
        dirty: set[int] = set()
        while True:
            try:
                data = os.read(self.fd, 256 * 1024)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + size
                if mask & _IN_Q_OVERFLOW:
                    return False
                if wd not in self.parent:
                    continue  # a watch already forgotten
                if mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF):
                    if wd == self.root_wd:
                        return False  # the workspace itself went away or moved
                    dirty.add(self.parent[wd][0])
                    continue
                dirty.add(wd)
        # Every changed directory is listed (forgetting what left it) before anything new is
        # walked: a directory moved within the tree is forgotten, then watched again.
        walk: list[tuple[Path, int, str]] = []
        for wd in dirty:
            if wd in self.parent:
                walk += self.list(wd, self.path(wd))
        self.add([entry for entry in walk if entry[1] in self.parent])
        return True

    def result(self) -> protected.ScanResult:
        found: set[Path] = set()
        for listed in self.entries.values():
            for path, resolve in listed:
                if not resolve:
                    found.add(path)
                elif path.is_symlink():
                    self._keep(found, Path(os.path.realpath(path)))
                else:
                    found.add(path)
                    if path.name == ".git":
                        for target in protected.gitfile_targets(path):
                            self._keep(found, target)
        return protected.ScanResult(
            paths=protected.outermost(found), complete=True, entries=self.count
        )

    def _keep(self, found: set[Path], path: Path) -> None:
        if any(protected.is_within(path, root) for root in self.roots):
            found.add(path)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.trees: OrderedDict[tuple[Path, tuple[Path, ...]], _Tree | None] = OrderedDict()

    def scan(self, root: Path, roots: tuple[Path, ...]) -> protected.ScanResult:
        key = (root, roots)
        with self.lock:
            if key in self.trees:
                tree = self.trees[key]
                self.trees.move_to_end(key)
                if tree is None:
                    return protected.scan(root, roots)
                try:
                    if tree.drain():
                        return tree.result()
                except _Unwatchable as exc:
                    log.info("protected paths of %s: %s; scanning at each command", root, exc)
                    tree.close()
                    self.trees[key] = None
                    return protected.scan(root, roots)
                tree.close()
            tree = self._build(root, roots)
            self.trees[key] = tree
            while len(self.trees) > MAX_ROOTS:
                _, old = self.trees.popitem(last=False)
                if old is not None:
                    old.close()
            return tree.result() if tree is not None else protected.scan(root, roots)

    @staticmethod
    def _build(root: Path, roots: tuple[Path, ...]) -> _Tree | None:
        try:
            init, _, _ = _inotify()
            fd = int(init(_IN_NONBLOCK | _IN_CLOEXEC))  # type: ignore[operator]
            if fd < 0:
                raise _Unwatchable(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
            tree = _Tree(root, roots, fd, _watch_budget())
            try:
                tree.add([(root, -1, str(root))])
            except BaseException:
                tree.close()
                raise
        except _Unwatchable as exc:
            log.info("protected paths of %s: %s; scanning at each command", root, exc)
            return None
        return tree

    def forget_all(self) -> None:
        with self.lock:
            for tree in self.trees.values():
                if tree is not None:
                    tree.close()
            self.trees.clear()


_CACHE = _Cache()


def cached_scan(root: Path, roots: Iterable[Path]) -> protected.ScanResult:
    """What `protected.scan(root, roots)` would find, from the watched copy of the tree."""
    return _CACHE.scan(root, tuple(roots))


def forget_all() -> None:
    """Release every watch (tests; a daemon's end releases them with the process)."""
    _CACHE.forget_all()
