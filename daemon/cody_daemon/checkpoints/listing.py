"""What a snapshot has to do: the paths `git ls-files -m -d -o` listed, sorted into those to
add to the index (new, changed or deleted files and symlinks), those to drop from it, and
those not covered (with why).

Invariants:
- a path is `lstat`ed, never followed: a symlink is stored as a link; a path under a
  directory that became a symlink is dropped (it is no longer in the tree);
- a file larger than MAX_FILE_BYTES, a special file (FIFO, socket, device), an unreadable
  file and a nested git repository are never added, and are reported in `not_covered`;
- `add_bytes` holds the size of each path of `add` (0 for a deleted one), so the staging can
  be split into batches of bounded work (repo.py `ShadowRepo.warm`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Final

__all__ = ["MAX_FILE_BYTES", "Listing", "NotCovered", "classify"]

MAX_FILE_BYTES: Final = 5 * 1024 * 1024
"""Larger files are not covered (a checkpoint is a safety net for source, not a backup)."""


@dataclass(frozen=True, slots=True)
class NotCovered:
    path: str
    why: str


@dataclass
class Listing:
    add: list[bytes] = field(default_factory=list)
    add_bytes: list[int] = field(default_factory=list)
    drop: list[bytes] = field(default_factory=list)
    not_covered: list[NotCovered] = field(default_factory=list)
    ignore_rules_changed: bool = False

    def take(self, raw: bytes, size: int) -> None:
        """Add `raw` (of `size` bytes) to the paths to stage."""
        self.add.append(raw)
        self.add_bytes.append(size)


def classify(work_tree: os.PathLike[str] | str, listed: bytes) -> Listing:
    """What to add, drop or report for each NUL-separated path git listed (file I/O: run it
    in a worker thread)."""
    listing = Listing()
    seen: set[bytes] = set()
    links: dict[bytes, bool] = {}
    root = os.fsencode(work_tree)
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
        if _beyond_link(root, raw, links):
            listing.drop.append(raw)  # its directory is a symlink now: gone from the tree
            continue
        try:
            info = os.lstat(os.path.join(root, raw))
        except FileNotFoundError:
            listing.take(raw, 0)  # deleted: `--remove` drops it
            continue
        except OSError:
            listing.drop.append(raw)
            listing.not_covered.append(NotCovered(name, "unreadable"))
            continue
        if stat.S_ISLNK(info.st_mode):
            listing.take(raw, 0)
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
            listing.take(raw, info.st_size)
    return listing


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
