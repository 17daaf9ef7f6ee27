"""One workspace's shadow repository: snapshots, and what changed between two of them.

A snapshot is a commit of the whole work tree as it is on disk, made through the
repository's private index so that only what changed since the last snapshot is read again
(`git ls-files -m -d -o` compares stat data; only listed paths are hashed): no full copy per
turn. Covered: every regular file and symlink that `.gitignore` does not exclude (git's rules,
the workspace's own `.gitignore` files), up to `MAX_FILE_BYTES`. Not covered, and reported
in `Snapshot.not_covered`: larger files, nested git repositories, special files (FIFOs,
sockets, devices) and unreadable files; ignored files are left out silently (there may be
thousands: `node_modules/`), and so is every `.cody` (Cody's project configuration) and
every `.git` (git never walks into one).

Invariants:
- one snapshot or restore at a time per repository: an asyncio lock in this daemon and an
  `flock` between daemons sharing the data directory;
- content is stored byte for byte: `info/attributes` unsets every converting attribute and
  driver for every path (see git.py), so no `.gitattributes` applies;
- paths come back exactly as git stores them (relative, `/`-separated, NUL-terminated,
  never quoted); a path is never trusted for writing here (restore.py checks each one);
- the repository is created whole or not at all (made in a temp directory, then renamed).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from .changes import Change, parse_raw
from .git import CheckpointError, Git, git_environment

__all__ = [
    "MAX_FILE_BYTES",
    "NotCovered",
    "ShadowRepo",
    "Snapshot",
    "is_object_id",
]

MAX_FILE_BYTES: Final = 5 * 1024 * 1024
"""Larger files are not covered (a checkpoint is a safety net for source, not a backup)."""
MAX_NEW_FILES: Final = 200_000
"""More files than this to add at once (a session in a home directory): no checkpoints for
that workspace in this daemon, rather than minutes of hashing before the first edit."""
_STALE_LOCK_S: Final = 60.0
_LOCK_POLL_S: Final = 0.05
_MARKER: Final = "cody-checkpoints"
_OBJECT_ID = re.compile(r"[0-9a-f]{40}")
_REF_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")

ATTRIBUTES: Final = (
    "* -text -eol -crlf -filter -ident -working-tree-encoding -merge -export-subst "
    "-export-ignore !diff\n"
)
"""`info/attributes`: wins over every `.gitattributes` of the workspace, for every path."""
EXCLUDES: Final = ".cody\n"
"""`info/exclude`: Cody's project configuration is never part of a checkpoint."""
CONFIG: Final = """\
[core]
\trepositoryformatversion = 0
\tbare = false
\tcompression = 1
\tlooseCompression = 1
\tuntrackedCache = true
\tfsmonitor = false
\thooksPath = /dev/null
[gc]
\tauto = 0
"""


def is_object_id(value: object) -> bool:
    return isinstance(value, str) and _OBJECT_ID.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class NotCovered:
    path: str
    why: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    commit: str
    not_covered: tuple[NotCovered, ...] = ()


@dataclass
class _Listing:
    add: list[bytes] = field(default_factory=list)
    drop: list[bytes] = field(default_factory=list)
    not_covered: list[NotCovered] = field(default_factory=list)
    ignore_rules_changed: bool = False


class ShadowRepo:
    """The shadow repository of one workspace (`work_tree`, a resolved real path)."""

    def __init__(self, git_binary: str, root: Path, work_tree: Path) -> None:
        self.root = root
        self.work_tree = work_tree
        self.git = Git(
            binary=git_binary,
            git_dir=root,
            work_tree=work_tree,
            index=root / "index",
            home=root / "home",
        )
        self._lock = asyncio.Lock()
        self._written: tuple[str, tuple[int, ...] | None] | None = None
        """The tree `write-tree` last gave, and the index's stat data right after."""
        self._too_large: str | None = None
        self._trees: dict[str, str] = {}
        """commit -> tree of the commits this daemon made (a snapshot equal to its parent
        reuses the parent: no commit, no ref update)."""

    # -- setup and locking ------------------------------------------------------------------

    async def _ensure(self) -> None:
        if (self.root / _MARKER).is_file():
            return
        if self.root.exists():  # a half-made or foreign directory: start again
            await asyncio.to_thread(shutil.rmtree, self.root, True)
        self.root.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = self.root.with_name(f".{self.root.name}.{os.getpid()}.{time.monotonic_ns()}")
        env = git_environment(temp, self.work_tree, temp / "index", temp / "home")
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            env.pop(name)
        process = await asyncio.create_subprocess_exec(
            self.git.binary,
            "init",
            "--quiet",
            "--bare",
            "--template=",
            str(temp),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        _, err = await process.communicate()
        if process.returncode != 0:
            await asyncio.to_thread(shutil.rmtree, temp, True)
            raise CheckpointError(f"Cannot create the checkpoint store: {err[:200]!r}")
        try:
            (temp / "config").write_text(CONFIG, encoding="utf-8")
            (temp / "info").mkdir(exist_ok=True)
            (temp / "info" / "attributes").write_text(ATTRIBUTES, encoding="utf-8")
            (temp / "info" / "exclude").write_text(EXCLUDES, encoding="utf-8")
            (temp / "home").mkdir(exist_ok=True)
            (temp / "workspace").write_text(f"{self.work_tree}\n", encoding="utf-8")
            (temp / _MARKER).write_text("1\n", encoding="utf-8")
            os.rename(temp, self.root)
        except OSError as exc:
            await asyncio.to_thread(shutil.rmtree, temp, True)
            if (self.root / _MARKER).is_file():  # another daemon made it first
                return
            raise CheckpointError(f"Cannot create the checkpoint store: {exc.strerror}.") from None

    @contextlib.asynccontextmanager
    async def locked(self) -> AsyncIterator[None]:
        """Hold the repository (this daemon's lock, then the file lock between daemons)."""
        async with self._lock:
            await self._ensure()
            # Never a FIFO or device planted there (no hang, no effect), nor a link out.
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
            try:
                fd = os.open(self.root / "lock", flags, 0o600)
            except OSError as exc:
                raise CheckpointError(
                    f"Cannot lock the checkpoint store: {exc.strerror}."
                ) from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise CheckpointError("The checkpoint store's lock is not a regular file.")
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        await asyncio.sleep(_LOCK_POLL_S)
                self._clear_stale_index_lock()
                yield
            finally:
                os.close(fd)

    def _clear_stale_index_lock(self) -> None:
        """An `index.lock` left by a git killed with -9 (we hold the file lock: no git of
        ours is running; a minute-old lock is not a live one of another's)."""
        lock = self.root / "index.lock"
        with contextlib.suppress(OSError):
            if time.time() - lock.stat().st_mtime > _STALE_LOCK_S:
                lock.unlink()

    # -- snapshots --------------------------------------------------------------------------

    async def snapshot(self, message: str, parent: str | None, ref: str) -> Snapshot:
        """Commit the work tree as it is now (the caller holds `locked()`); the commit
        becomes `refs/cody/<ref>` (its parent: `parent`, when this repository has it)."""
        if not _REF_NAME.fullmatch(ref):
            raise CheckpointError(f"not a checkpoint ref name: {ref!r}")
        git = self.git
        if self._too_large is not None:
            raise CheckpointError(self._too_large)
        listed = await git.run("ls-files", "-z", "-m", "-d", "-o", "--exclude-standard")
        if listed.count(b"\0") > MAX_NEW_FILES:
            self._too_large = (
                f"the workspace has more than {MAX_NEW_FILES:,} files that .gitignore does not "
                "exclude: no checkpoints for it (add a .gitignore, or set checkpoints = false)"
            )
            raise CheckpointError(self._too_large)
        listing = await asyncio.to_thread(self._classify, listed)
        if listing.ignore_rules_changed:
            # Files tracked here that a new `.gitignore` rule now excludes: dropped.
            ignored = await git.run("ls-files", "-z", "-c", "-i", "--exclude-standard")
            listing.drop.extend(path for path in ignored.split(b"\0") if path)
        tree = self._unchanged_tree() if not listing.add and not listing.drop else None
        if tree is None:
            if listing.drop:
                await git.run(
                    "update-index", "-z", "--force-remove", "--stdin", input=_nul(listing.drop)
                )
            if listing.add:
                await git.run(
                    "update-index",
                    "-z",
                    "--add",
                    "--remove",
                    "--replace",
                    "--stdin",
                    input=_nul(listing.add),
                )
            tree = (await git.run("write-tree")).decode().strip()
            self._written = (tree, _stat_key(self.git.index))
        not_covered = tuple(listing.not_covered)
        if parent is not None and self._trees.get(parent) == tree:
            return Snapshot(commit=parent, not_covered=not_covered)  # nothing changed since
        commit = await self._commit(tree, message, parent)
        await git.run("update-ref", f"refs/cody/{ref}", commit)
        self._trees[commit] = tree
        return Snapshot(commit=commit, not_covered=not_covered)

    def _unchanged_tree(self) -> str | None:
        """The tree of the index as this daemon last wrote it, while no one changed the
        index since (its stat data tell): nothing to hash, nothing to write."""
        if self._written is None:
            return None
        tree, key = self._written
        return tree if key == _stat_key(self.git.index) else None

    async def _commit(self, tree: str, message: str, parent: str | None) -> str:
        if parent is not None and is_object_id(parent):
            try:
                return (
                    (await self.git.run("commit-tree", tree, "-p", parent, "-m", message))
                    .decode()
                    .strip()
                )
            except CheckpointError:
                pass  # the parent is gone (a store made again): a commit without one
        return (await self.git.run("commit-tree", tree, "-m", message)).decode().strip()

    def _classify(self, listed: bytes) -> _Listing:
        """What to add, drop or report for each path git listed (runs in a thread)."""
        listing = _Listing()
        seen: set[bytes] = set()
        links: dict[bytes, bool] = {}
        root = os.fsencode(self.work_tree)
        for raw in listed.split(b"\0"):
            if not raw or raw in seen:
                continue
            seen.add(raw)
            name = os.fsdecode(raw)
            if raw.endswith(b"/"):
                listing.not_covered.append(NotCovered(name.rstrip("/"), "nested git repository"))
                continue
            if raw.rsplit(b"/", 1)[-1] == b".gitignore":
                listing.ignore_rules_changed = True
            if self._beyond_link(root, raw, links):
                listing.drop.append(raw)  # its directory is a symlink now: gone from the tree
                continue
            try:
                info = os.lstat(os.path.join(root, raw))
            except FileNotFoundError:
                listing.add.append(raw)  # deleted: `--remove` drops it
                continue
            except OSError:
                listing.drop.append(raw)
                listing.not_covered.append(NotCovered(name, "unreadable"))
                continue
            if stat.S_ISLNK(info.st_mode):
                listing.add.append(raw)
            elif stat.S_ISDIR(info.st_mode):
                listing.drop.append(raw)  # was a file, now a directory: its files are listed
            elif not stat.S_ISREG(info.st_mode):
                listing.drop.append(raw)
                listing.not_covered.append(NotCovered(name, "not a regular file"))
            elif info.st_size > MAX_FILE_BYTES:
                listing.drop.append(raw)
                listing.not_covered.append(
                    NotCovered(name, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
                )
            elif not os.access(os.path.join(root, raw), os.R_OK):
                listing.drop.append(raw)
                listing.not_covered.append(NotCovered(name, "unreadable"))
            else:
                listing.add.append(raw)
        return listing

    @staticmethod
    def _beyond_link(root: bytes, raw: bytes, links: dict[bytes, bool]) -> bool:
        """Whether a directory on the way to `raw` is not a directory (a symlink now)."""
        parts = raw.split(b"/")[:-1]
        for depth in range(1, len(parts) + 1):
            directory = b"/".join(parts[:depth])
            known = links.get(directory)
            if known is None:
                try:
                    known = not stat.S_ISDIR(os.lstat(os.path.join(root, directory)).st_mode)
                except OSError:
                    known = False  # missing: the path is simply deleted
                links[directory] = known
            if known:
                return True
        return False

    # -- reading ----------------------------------------------------------------------------

    async def existing(self, commits: Iterable[str]) -> set[str]:
        """Those of `commits` this repository has (one `cat-file --batch-check`)."""
        wanted = sorted({c for c in commits if is_object_id(c)})
        if not wanted:
            return set()
        out = await self.git.run(
            "cat-file", "--batch-check", input="".join(f"{c}\n" for c in wanted).encode()
        )
        return {
            fields[0].decode()
            for line in out.splitlines()
            if len(fields := line.split()) == 3 and fields[1] == b"commit"
        }

    async def changes(self, old: str, new: str) -> list[Change]:
        """Every path that differs between snapshots `old` and `new`."""
        out = await self.git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", old, new)
        return list(parse_raw(out))

    async def changed_paths(self, pairs: Sequence[tuple[str, str]]) -> set[str]:
        """The union of the paths that differ within each (old, new) pair of snapshots."""
        pairs = [(a, b) for a, b in pairs if a != b]
        if not pairs:
            return set()
        text = "".join(f"{a} {b}\n" for a, b in pairs).encode()
        out = await self.git.run(
            "diff-tree", "--stdin", "-r", "-z", "--no-renames", "--raw", input=text
        )
        return {change.path for change in parse_raw(out)}

    async def diff_text(self, old: str, new: str, limit: int) -> tuple[str, bool]:
        """The unified diff from `old` to `new` (at most `limit` bytes; True when cut)."""
        out = await self.git.run(
            "diff-tree",
            "-p",
            "-r",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            old,
            new,
        )
        cut = len(out) > limit
        return out[:limit].decode("utf-8", "replace"), cut

    def has_ref(self, ref: str) -> bool:
        return bool(_REF_NAME.fullmatch(ref)) and (self.root / "refs" / "cody" / ref).is_file()

    async def forget(self, ref: str) -> None:
        """Drop `refs/cody/<ref>` and every object only it kept (the caller holds
        `locked()`: no snapshot is making objects meanwhile)."""
        if not _REF_NAME.fullmatch(ref):
            return
        await self.drop_ref(ref)
        await self.git.run("prune", "--expire=now")

    async def drop_ref(self, ref: str) -> None:
        """Drop `refs/cody/<ref>` only (the caller holds `locked()`)."""
        if _REF_NAME.fullmatch(ref):
            await self.git.run("update-ref", "-d", f"refs/cody/{ref}", ok=(0, 1))


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _nul(paths: Iterable[bytes]) -> bytes:
    return b"".join(path + b"\0" for path in paths)
