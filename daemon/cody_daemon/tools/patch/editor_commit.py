"""Committing a planned patch through the editor (`ctx.files`, tools/editor_files.py).

The plan is complete before the first write: every hunk has matched the editor's text and
every real path has passed the sandbox (tools/apply_patch.py). Then, in patch order, updated,
added and moved-to files are written with one `fs/write_text_file` each (missing parent
directories are created on disk first), and deleted and moved-away files are renamed on disk
to a hidden backup (ACP has no delete). If a step fails, the steps already done are undone
newest first: the old text written back through the editor, files the patch added removed
(with the directories it created), backups renamed back.

What holds, and what does not (weaker than `commit_changes` on disk):
- each file is written whole by one request, and a failed patch is restored, so after the
  call the files hold either the whole patch or none of it, unless a restoration itself
  fails (the editor refusing again): the error then names each file left changed;
- the files change one after another, so something watching the tree during the call (a
  build, another editor) can see some files changed before the others;
- the editor keeps each write in its own undo history, file by file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from ..editor_files import ClientFileError, EditorFiles
from .files import FileChange, commit_failed

__all__ = ["commit_through_editor"]

_Undo = tuple[Path, Callable[[], Awaitable[None]]]


async def commit_through_editor(changes: Sequence[FileChange], editor: EditorFiles) -> None:
    """Apply every change through `editor`, or none; raises PatchError after undoing."""
    undo: list[_Undo] = []
    backups: list[Path] = []
    for change in changes:
        try:
            await _commit_one(change, editor, undo, backups)
        except (ClientFileError, OSError) as exc:
            failures = await _rollback(undo)
            if isinstance(exc, ClientFileError):
                raise commit_failed(change, "the editor could not", exc.message, failures) from None
            raise commit_failed(change, "could not", exc.strerror or exc, failures) from None
    for backup in backups:
        with contextlib.suppress(OSError):
            await asyncio.to_thread(os.unlink, backup)


async def _commit_one(
    change: FileChange, editor: EditorFiles, undo: list[_Undo], backups: list[Path]
) -> None:
    if change.kind == "update":
        assert change.old_bytes is not None
        old_text = change.old_bytes.decode("utf-8", errors="replace")
        await editor.write_text(change.path, change.new_text)
        undo.append((change.path, lambda: editor.write_text(change.path, old_text)))
        return
    if change.kind in ("add", "move"):
        target = change.target
        for directory in await asyncio.to_thread(_make_parents, target):
            undo.append((directory, _disk(os.rmdir, directory)))
        await editor.write_text(target, change.new_text)
        undo.append((target, _disk(_unlink, target)))
        if change.mode is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(os.chmod, target, change.mode)
    if change.kind in ("move", "delete"):
        backup = change.path.with_name(f".{change.path.name}.{secrets.token_hex(4)}.bak")
        await asyncio.to_thread(os.rename, change.path, backup)
        undo.append((change.path, _disk(os.replace, backup, change.path)))
        backups.append(backup)


async def _rollback(undo: list[_Undo]) -> list[str]:
    """Run the undo steps newest first; the paths that could not be restored."""
    failures: list[str] = []
    for path, step in reversed(undo):
        try:
            await step()
        except ClientFileError as exc:
            failures.append(f"{path} (the editor: {exc.message})")
        except OSError as exc:
            failures.append(f"{path} ({exc.strerror or exc})")
    return failures


def _disk(fn: Callable[..., object], *args: Path) -> Callable[[], Awaitable[None]]:
    async def step() -> None:
        await asyncio.to_thread(fn, *args)

    return step


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _make_parents(path: Path) -> list[Path]:
    """Create the missing parents of `path`, outermost first; returns those created."""
    missing = [parent for parent in path.parents if not parent.exists()]
    created: list[Path] = []
    for directory in reversed(missing):
        directory.mkdir()
        created.append(directory)
    return created
