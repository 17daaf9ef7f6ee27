"""From parsed operations to file changes (`plan_changes`), and committing them (`commit_changes`).

Invariants:
- Paths are resolved to real paths (symlinks and `..`) against the session cwd before
  anything else; the caller checks those exact paths against the sandbox, and they are the
  paths later written.
- `plan_changes` only reads: it computes the full new content of every file in memory and
  fails (PatchError) before any write if an operation cannot be carried out: a hunk that
  does not match, adding a file that exists, deleting or updating one that does not, a move
  onto an existing file, or two operations on the same file (move targets included).
- `commit_changes` applies the plan as one transaction, in patch order: content is written
  to a temp file in the same directory and moved into place with `os.replace` (readers see
  old or new, never a mix; permission bits and owner are kept); deleted and moved-away
  files are first renamed to a hidden backup. If any step fails, every step already done
  is undone in reverse (old bytes restored, backups renamed back, new files and created
  directories removed), so a patch is applied entirely or not at all.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ...core.atomic_write import write_atomic
from ...policy.sandbox import resolve_path
from .apply import HunkError, apply_hunks
from .parse import AddFile, DeleteFile, FileOp, UpdateFile

__all__ = [
    "MAX_FILE_BYTES",
    "ChangeKind",
    "FileChange",
    "PatchError",
    "commit_changes",
    "commit_failed",
    "op_paths",
    "plan_changes",
]

MAX_FILE_BYTES = 10 * 1024 * 1024
"""A file larger than this is not read (an update fails; a deleted one shows no old text)."""

ChangeKind = Literal["add", "update", "move", "delete"]


class PatchError(Exception):
    """The patch cannot be applied as a whole; `message` is written for the model."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    kind: ChangeKind
    path: Path
    """Real path of the file the operation names (the source of a move)."""
    display: str
    """The path as written in the patch."""
    old_bytes: bytes | None = None
    """Current content (None for an added file, or a deleted file too large to read)."""
    new_bytes: bytes | None = None
    """Content after the patch (None for a deleted file)."""
    mode: int | None = None
    """Permission bits of the existing file, kept by the rewrite or the move."""
    owner: tuple[int, int] | None = None
    move_to: Path | None = None
    move_display: str | None = None

    @property
    def target(self) -> Path:
        """Where the content ends up (the move target for a move)."""
        return self.move_to or self.path

    @property
    def old_text(self) -> str | None:
        if self.old_bytes is None:
            return None if self.kind == "add" else "(file too large to show)"
        return self.old_bytes.decode("utf-8", errors="replace")

    @property
    def new_text(self) -> str:
        return "" if self.new_bytes is None else self.new_bytes.decode("utf-8", errors="replace")


def op_paths(op: FileOp, cwd: Path) -> list[Path]:
    """The real paths an operation touches: its file, and a move's target."""
    paths = [resolve_path(op.path, cwd)]
    if isinstance(op, UpdateFile) and op.move_to is not None:
        target = resolve_path(op.move_to, cwd)
        if target != paths[0]:
            paths.append(target)
    return paths


def plan_changes(
    ops: Sequence[FileOp], cwd: Path, texts: Mapping[Path, bytes] | None = None
) -> list[FileChange]:
    """Every file's change, computed in memory; raises PatchError on the first problem.

    `texts`: the current content of files as the editor has it (by real path), used instead
    of the disk's for updated and deleted files (tools/editor_files.py)."""
    if not ops:
        raise PatchError(
            "the patch has no file operations; put '*** Add File: <path>', "
            "'*** Delete File: <path>' or '*** Update File: <path>' sections between "
            "'*** Begin Patch' and '*** End Patch'"
        )
    seen: dict[Path, int] = {}
    for number, op in enumerate(ops, start=1):
        for path in op_paths(op, cwd):
            if path in seen:
                raise PatchError(
                    f"the patch touches {path} twice (operations {seen[path]} and {number}, "
                    f"patch line {op.line}); combine the changes into one section per file"
                )
            seen[path] = number
    changes: list[FileChange] = []
    for op in ops:
        if isinstance(op, AddFile):
            changes.append(_plan_add(op, cwd))
        elif isinstance(op, DeleteFile):
            changes.append(_plan_delete(op, cwd, texts or {}))
        else:
            changes.append(_plan_update(op, cwd, texts or {}))
    return changes


def _plan_add(op: AddFile, cwd: Path) -> FileChange:
    path = resolve_path(op.path, cwd)
    new_bytes = op.contents.encode("utf-8")
    if os.path.lexists(path):
        if path.is_dir():
            raise PatchError(f"cannot add {op.path}: it is an existing directory")
        hint = "use '*** Update File' to change it, or delete it first in another patch"
        with contextlib.suppress(OSError):
            if path.stat().st_size == len(new_bytes) and path.read_bytes() == new_bytes:
                hint = (
                    "it already has exactly this content: the patch may have been applied already"
                )
        raise PatchError(f"cannot add {op.path}: the file already exists ({hint})")
    _check_parents(path, op.path)
    return FileChange(kind="add", path=path, display=op.path, new_bytes=new_bytes)


def _plan_delete(op: DeleteFile, cwd: Path, texts: Mapping[Path, bytes]) -> FileChange:
    path = resolve_path(op.path, cwd)
    _refuse_symlink(op.path, cwd, "delete")
    if not path.exists():
        raise PatchError(f"cannot delete {op.path}: the file does not exist (already deleted?)")
    if not path.is_file():
        raise PatchError(f"cannot delete {op.path}: it is not a regular file")
    info = path.stat()
    old_bytes = texts.get(path)
    if old_bytes is None and info.st_size <= MAX_FILE_BYTES:
        old_bytes = _read(path, op.path)
    return FileChange(
        kind="delete",
        path=path,
        display=op.path,
        old_bytes=old_bytes,
        mode=stat.S_IMODE(info.st_mode),
        owner=(info.st_uid, info.st_gid),
    )


def _plan_update(op: UpdateFile, cwd: Path, texts: Mapping[Path, bytes]) -> FileChange:
    path = resolve_path(op.path, cwd)
    target = resolve_path(op.move_to, cwd) if op.move_to is not None else path
    moving = target != path
    if not path.exists():
        hint = ""
        if moving and target.exists():
            hint = f" ({op.move_to} exists: was the file already moved?)"
        raise PatchError(f"cannot update {op.path}: the file does not exist{hint}")
    if not path.is_file():
        raise PatchError(f"cannot update {op.path}: it is not a regular file")
    info = path.stat()
    if info.st_size > MAX_FILE_BYTES:
        raise PatchError(
            f"cannot update {op.path}: it is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
        )
    old_bytes = texts.get(path)
    if old_bytes is None:
        old_bytes = _read(path, op.path)
    new_bytes = old_bytes if not op.hunks else _patched(old_bytes, op)
    if moving:
        _refuse_symlink(op.path, cwd, "move")
        if os.path.lexists(target):
            raise PatchError(
                f"cannot move {op.path} to {op.move_to}: the destination already exists"
            )
        _check_parents(target, op.move_to or op.path)
    return FileChange(
        kind="move" if moving else "update",
        path=path,
        display=op.path,
        old_bytes=old_bytes,
        new_bytes=new_bytes,
        mode=stat.S_IMODE(info.st_mode),
        owner=(info.st_uid, info.st_gid),
        move_to=target if moving else None,
        move_display=op.move_to if moving else None,
    )


def _patched(old_bytes: bytes, op: UpdateFile) -> bytes:
    try:
        old_text = old_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(f"cannot update {op.path}: it is not UTF-8 text") from None
    try:
        return apply_hunks(old_text, op.hunks, op.path).encode("utf-8")
    except HunkError as exc:
        raise PatchError(exc.message) from None


def _read(path: Path, display: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PatchError(f"cannot read {display}: {exc.strerror or exc}") from None


def _refuse_symlink(raw: str, cwd: Path, verb: str) -> None:
    """Deleting or moving a symlink would act on its target: refuse instead of guessing."""
    named = Path(raw) if Path(raw).is_absolute() else cwd / raw
    if named.is_symlink():
        raise PatchError(f"cannot {verb} {raw}: it is a symbolic link")


def _check_parents(path: Path, display: str) -> None:
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise PatchError(f"cannot create {display}: {parent} is not a directory")
            return


# --- commit --------------------------------------------------------------------------------


_Undo = tuple[Path, Callable[[], None]]
"""A path a commit step changed, and how to put it back."""


def commit_changes(changes: Sequence[FileChange]) -> None:
    """Apply every change or none; raises PatchError after undoing a partial application."""
    undo: list[_Undo] = []
    backups: list[Path] = []
    for change in changes:
        try:
            _commit_one(change, undo, backups)
        except OSError as exc:
            failures = _rollback(undo)
            raise commit_failed(change, "could not", exc.strerror or exc, failures) from None
    for backup in backups:
        with contextlib.suppress(OSError):
            os.unlink(backup)


def commit_failed(
    change: FileChange, who: str, reason: object, unrestored: Sequence[str]
) -> PatchError:
    """The error for a change that failed after the changes before it were rolled back:
    "<who> <verb> <path>: <reason>", then whether the tree is as before or which paths could
    not be restored (`unrestored`)."""
    verb = {"add": "create", "update": "write", "move": "move", "delete": "delete"}
    message = f"{who} {verb[change.kind]} {change.display}: {reason}; "
    if unrestored:
        message += "WARNING: the patch is partly applied, since restoring these failed: "
        message += ", ".join(unrestored)
    else:
        message += "the files already changed were restored, so no change was made"
    return PatchError(message)


def _commit_one(change: FileChange, undo: list[_Undo], backups: list[Path]) -> None:
    if change.kind == "update":
        assert change.new_bytes is not None and change.old_bytes is not None
        write_atomic(change.path, change.new_bytes, change.mode, change.owner)
        restore = functools.partial(
            write_atomic, change.path, change.old_bytes, change.mode, change.owner
        )
        undo.append((change.path, restore))
        return
    if change.kind in ("add", "move"):
        assert change.new_bytes is not None
        _make_parents(change.target, undo)
        write_atomic(change.target, change.new_bytes, change.mode, change.owner)
        undo.append((change.target, functools.partial(_unlink, change.target)))
    if change.kind in ("move", "delete"):
        backup = change.path.with_name(f".{change.path.name}.{secrets.token_hex(4)}.bak")
        os.rename(change.path, backup)
        undo.append((change.path, functools.partial(os.replace, backup, change.path)))
        backups.append(backup)


def _rollback(undo: list[_Undo]) -> list[str]:
    """Run the undo steps newest first; the paths that could not be restored."""
    failures: list[str] = []
    for path, step in reversed(undo):
        try:
            step()
        except OSError as exc:
            failures.append(f"{path} ({exc.strerror or exc})")
    return failures


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _make_parents(path: Path, undo: list[_Undo]) -> None:
    missing = [parent for parent in path.parents if not parent.exists()]
    for directory in reversed(missing):
        directory.mkdir()
        undo.append((directory, functools.partial(os.rmdir, directory)))
