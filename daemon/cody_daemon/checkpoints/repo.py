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

The first snapshot of a workspace hashes every file (seconds for a large tree): `warm()` does
that work ahead, niced and in batches, when a session goes live (engine/checkpoints.py); the
turn's snapshot is then incremental on top of it, and still a snapshot of the tree as it is
when taken (the index's stat data decide what is read again, whoever staged it).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .changes import Change, parse_raw
from .git import CheckpointError, Git, git_environment
from .listing import MAX_FILE_BYTES, Listing, NotCovered, classify

__all__ = [
    "MAX_FILE_BYTES",
    "NotCovered",
    "ShadowRepo",
    "Snapshot",
    "is_object_id",
]

MAX_NEW_FILES: Final = 200_000
"""More files than this to add at once (a session in a home directory): no checkpoints for
that workspace in this daemon, rather than minutes of hashing before the first edit."""
WARM_BATCH_FILES: Final = 2000
WARM_BATCH_BYTES: Final = 32 * 1024 * 1024
"""A warm-up batch: the most a snapshot asked for during a warm-up waits for."""
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
class Snapshot:
    commit: str
    not_covered: tuple[NotCovered, ...] = ()


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
        self._warm_step: asyncio.Task[bool] | None = None
        """The warm-up batch holding the lock (niced git), stopped by anyone else's `locked()`."""
        self._trees: dict[str, str] = {}
        """commit -> tree of the commits this daemon made (a snapshot equal to its parent
        reuses the parent: no commit, no ref update)."""

    # -- setup and locking ------------------------------------------------------------------

    def exists(self) -> bool:
        """Whether the store of this workspace has been made (by any daemon)."""
        return (self.root / _MARKER).is_file()

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
        """Hold the repository (this daemon's lock, then the file lock between daemons). A
        warm-up batch holding it is stopped at once: the caller's work is wanted now."""
        if self._warm_step is not None:
            self._warm_step.cancel()
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
        listing = await self._pending()
        tree = await self._stage(listing)
        not_covered = tuple(listing.not_covered)
        if parent is not None and self._trees.get(parent) == tree:
            return Snapshot(commit=parent, not_covered=not_covered)  # nothing changed since
        commit = await self._commit(tree, message, parent)
        await self.git.run("update-ref", f"refs/cody/{ref}", commit)
        self._trees[commit] = tree
        return Snapshot(commit=commit, not_covered=not_covered)

    async def warm(self) -> None:
        """Stage the work tree into the index ahead of the first snapshot, niced and in
        batches of at most WARM_BATCH_FILES files or WARM_BATCH_BYTES bytes: what a snapshot
        would hash, done before a turn waits for it. Makes no commit and no ref (a prune
        keeps the staged objects: the index holds them). Holds `locked()` one batch at a
        time; anyone else's `locked()` stops the running batch (its git is terminated, the
        index stays as the last batch left it, objects already written are reused), so a
        snapshot asked for meanwhile does not wait for niced work and stages the rest itself,
        at normal priority. The warm-up then finds nothing left."""
        while True:
            async with self.locked():
                step = asyncio.get_running_loop().create_task(self._warm_batch())
                self._warm_step = step
                try:
                    if await asyncio.shield(step):
                        return
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():  # the warm-up itself
                        step.cancel()
                        await asyncio.wait({step})
                        raise
                    await asyncio.wait({step})  # stopped for someone else: they go next
                    with contextlib.suppress(OSError):  # a git killed before its cleanup
                        (self.root / "index.lock").unlink()
                finally:
                    self._warm_step = None

    async def _warm_batch(self) -> bool:
        """One warm-up batch; True when it was the last (the index holds the whole tree)."""
        listing = await self._pending(background=True)
        count = _batch_size(listing.add_bytes)
        if count == len(listing.add):
            await self._stage(listing, background=True)
            return True
        await self._update(listing.drop, listing.add[:count], background=True)
        return False

    async def _pending(self, *, background: bool = False) -> Listing:
        """What changed in the work tree since the index was last written."""
        if self._too_large is not None:
            raise CheckpointError(self._too_large)
        git = self.git
        listed = await git.run(
            "ls-files", "-z", "-m", "-d", "-o", "--exclude-standard", background=background
        )
        if listed.count(b"\0") > MAX_NEW_FILES:
            self._too_large = (
                f"the workspace has more than {MAX_NEW_FILES:,} files that .gitignore does not "
                "exclude: no checkpoints for it (add a .gitignore, or set checkpoints = false)"
            )
            raise CheckpointError(self._too_large)
        listing = await asyncio.to_thread(classify, self.work_tree, listed)
        if listing.ignore_rules_changed:
            # Files tracked here that a new `.gitignore` rule now excludes: dropped.
            ignored = await git.run(
                "ls-files", "-z", "-c", "-i", "--exclude-standard", background=background
            )
            listing.drop.extend(path for path in ignored.split(b"\0") if path)
        return listing

    async def _stage(self, listing: Listing, *, background: bool = False) -> str:
        """Bring the index up to `listing` and return its tree."""
        tree = self._unchanged_tree() if not listing.add and not listing.drop else None
        if tree is None:
            await self._update(listing.drop, listing.add, background=background)
            tree = (await self.git.run("write-tree", background=background)).decode().strip()
            self._written = (tree, _stat_key(self.git.index))
        return tree

    async def _update(self, drop: list[bytes], add: list[bytes], *, background: bool) -> None:
        git = self.git
        if drop:
            await git.run(
                "update-index",
                "-z",
                "--force-remove",
                "--stdin",
                input=_nul(drop),
                background=background,
            )
        if add:
            await git.run(
                "update-index",
                "-z",
                "--add",
                "--remove",
                "--replace",
                "--stdin",
                input=_nul(add),
                background=background,
            )

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


def _batch_size(sizes: list[int]) -> int:
    """How many of the paths (of these sizes) make one warm-up batch (at least one)."""
    total = 0
    for count, size in enumerate(sizes):
        total += size
        if count >= WARM_BATCH_FILES or (count and total > WARM_BATCH_BYTES):
            return count
    return len(sizes)


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _nul(paths: Iterable[bytes]) -> bytes:
    return b"".join(path + b"\0" for path in paths)
