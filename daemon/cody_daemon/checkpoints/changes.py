"""What differs between two snapshots: `git diff-tree --raw -z` read into `Change`s.

Paths come back exactly as git stores them (relative, `/`-separated, never quoted); nothing
here trusts them for writing (restore.py checks each one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["ALLOWED_MODES", "Change", "ChangeKind", "parse_raw"]

ChangeKind = Literal["added", "modified", "deleted"]
ALLOWED_MODES: Final = frozenset({"100644", "100755", "120000"})
"""Regular files, executables and symlinks: the only entries a snapshot holds."""


@dataclass(frozen=True, slots=True)
class Change:
    """One path that differs between two snapshots (`old_*` / `new_*` absent: no entry)."""

    path: str
    change: ChangeKind
    old_mode: str | None
    new_mode: str | None
    old_blob: str | None
    new_blob: str | None


_HEADER = re.compile(rb"^(?:[0-9a-f]{40} [0-9a-f]{40}\n)+")


def parse_raw(out: bytes) -> Iterable[Change]:
    """`diff-tree --raw -z` records (`:old new oldsha newsha S\\0path\\0`). With `--stdin`,
    a pair of commits is announced by a token of its own (`<commit>\\0`) and a pair of trees
    by a `<tree> <tree>\\n` prefix of the record's first field; a path is always the token
    after a record's first field, so neither can be taken for one."""
    tokens = out.split(b"\0")
    index = 0
    while index < len(tokens):
        meta = _HEADER.sub(b"", tokens[index])
        if not meta.startswith(b":") or index + 1 >= len(tokens):
            index += 1
            continue
        path = tokens[index + 1]
        index += 2
        fields = meta[1:].split(b" ")
        if len(fields) != 5:
            continue
        old_mode, new_mode, old_blob, new_blob, status = (f.decode() for f in fields)
        kind: ChangeKind = "added" if status == "A" else "deleted" if status == "D" else "modified"
        yield Change(
            path=os.fsdecode(path),
            change=kind,
            old_mode=None if kind == "added" else old_mode,
            new_mode=None if kind == "deleted" else new_mode,
            old_blob=None if kind == "added" else old_blob,
            new_blob=None if kind == "deleted" else new_blob,
        )
