"""A checkpoint of the workspace at every turn (docs/checkpoints.md).

`TurnCheckpoint` is the turn's hook, three calls from the turn loops (engine/turn.py,
engine/backend_turn.py):
- `start()` right after the user message is written: the snapshot of the workspace starts in
  the background, concurrently with the first model call (a turn that changes nothing never
  waits for it: when the turn ends first, the snapshot is recorded when it completes);
- `before_change()` before the first tool that can change files runs (anything but a read,
  search, fetch or think tool; a backend turn calls it before the CLI starts): waits for that
  snapshot and records the `checkpoint` event. No tool that can change files runs before the
  snapshot is complete, so the checkpoint is the tree as the turn found it, with whatever
  `exec` then changes covered;
- `finish()` at the turn's end (also after a cancel or failure): snapshots the tree again and
  records `checkpoint_end` with the files the turn changed. A turn that ran no such tool
  records its checkpoint with nothing changed, taking no second snapshot.

Before any turn, `Checkpoints.warm` (called when a session goes live) stages the workspace
into the store's index in the background, niced (checkpoints/repo.py `ShadowRepo.warm`), so
the first turn's snapshot is incremental; a snapshot taken meanwhile stops it.

A snapshot that fails (no git, git failing) is recorded with its `error`: the turn goes on
without one (and that checkpoint cannot restore files). A checkpoint that cannot be
*recorded* (the session file's disk is full) stops the tool: nothing changes files
unrecorded, and the turn ends with the storage error. `Checkpoints` lists a session's
checkpoints and their diffs; a checkpoint left unfinished by a crash is closed at the next
snapshot as `interrupted` (who changed its files is then unknown: engine/rewind.py treats
them as changed by someone else).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from ..checkpoints.git import CheckpointError
from ..checkpoints.repo import NotCovered, ShadowRepo, Snapshot
from ..checkpoints.store import CheckpointStore
from ..core.history import MessageItem
from ..errors import InvalidParams, Issue, SessionBusy, StorageError
from ..ids import new_id
from ..store.checkpoint_log import PROMPT_CHARS, CheckpointEntry
from .session import Session

__all__ = [
    "CheckpointEntry",
    "Checkpoints",
    "TurnCheckpoint",
    "checkpoint_not_found",
    "in_conversation",
    "may_change_files",
]

logger = logging.getLogger(__name__)

DIFF_LIMIT: Final = 1024 * 1024
"""`checkpointDiff` returns at most this many bytes of diff (and says when it cut)."""
_READ_ONLY_KINDS: Final = frozenset({"read", "search", "fetch", "think"})


def may_change_files(tool_kind: str) -> bool:
    """Whether a tool of this ACP kind can change files (edits, exec, MCP tools: yes)."""
    return tool_kind not in _READ_ONLY_KINDS


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def not_covered_wire(items: tuple[NotCovered, ...], limit: int = 100) -> list[dict[str, str]]:
    return [{"path": item.path, "why": item.why} for item in items[:limit]]


def in_conversation(entry: CheckpointEntry, present: set[int]) -> bool | None:
    """Whether the conversation still holds that turn's prompt (None: a rewind checkpoint);
    `present`: the `id()` of every item of the session's history."""
    if entry.reason != "turn" or entry.conversation is None:
        return None
    items, length = entry.conversation
    return length < len(items) and id(items[length]) in present


def checkpoint_not_found(session: Session, checkpoint_id: str) -> InvalidParams:
    return InvalidParams(
        f"Session {session.id} has no checkpoint {checkpoint_id}; list them with "
        "_cody/session/checkpoints.",
        [Issue(key="checkpointId", message="no such checkpoint", value=checkpoint_id)],
    )


class Checkpoints:
    """The engine's side of checkpoints, for every session of the daemon."""

    def __init__(self, store: CheckpointStore | None, protected: tuple[Path, ...]) -> None:
        self.store = store
        self.protected = protected
        """Cody's own directories: never restored into."""
        self._background: set[tuple[str, asyncio.Task[Any]]] = set()
        self._warming: dict[Path, asyncio.Task[None]] = {}
        """The running (or last) warm-up of each repository, by its root."""

    def hidden_dirs(self) -> tuple[Path, ...]:
        """What a sandboxed command must not see: the store (it holds every workspace's
        snapshots)."""
        return (self.store.root,) if self.store is not None else ()

    def warm(self, session: Session, *, new: bool) -> None:
        """Start staging the session's workspace in the background (ShadowRepo.warm: niced,
        batched, no commit), so that its first turn's snapshot is incremental. For a new
        session, and for an opened one whose workspace already has a store (a refresh: one
        `git ls-files` when nothing changed); an old session opened to be read does not make
        a store. One warm-up per workspace at a time; never raises."""
        if self.store is None or not session.settings.checkpoints:
            return
        try:
            repo = self.store.repo_for(session.cwd)
        except CheckpointError:
            return  # no git: the turn's checkpoint says so
        if (not new and not repo.exists()) or not session.cwd.is_dir():
            return
        running = self._warming.get(repo.root)
        if running is not None and not running.done():
            return
        task = asyncio.get_running_loop().create_task(self._warm(repo))
        self._warming[repo.root] = task

    async def _warm(self, repo: ShadowRepo) -> None:
        try:
            await repo.warm()
        except CheckpointError as exc:
            logger.info("no warm-up of the checkpoint store of %s: %s", repo.work_tree, exc.message)
        except Exception:
            logger.exception("the warm-up of the checkpoint store of %s failed", repo.work_tree)

    def for_turn(self, session: Session, prompt: str) -> TurnCheckpoint:
        return TurnCheckpoint(self, session, prompt)

    async def snapshot(
        self, session: Session, label: str, *, running: str | None = None
    ) -> Snapshot:
        """The workspace of `session` now; checkpoints a crash left unfinished are closed
        with it (all but `running`, the checkpoint of the turn taking it)."""
        if self.store is None:
            raise CheckpointError("Checkpoints are not available in this daemon.")
        repo = self.store.repo_for(session.cwd)
        async with repo.locked():
            snapshot = await repo.snapshot(label, session.checkpoints.last_commit(), session.id)
        await self._close_unfinished(session, snapshot, running)
        return snapshot

    async def _close_unfinished(self, session: Session, now: Snapshot, running: str | None) -> None:
        for entry in session.checkpoints.unfinished():
            if entry.before is None or entry.checkpoint_id == running:
                continue
            files = await self.files_changed(session, entry.before, now.commit)
            record(
                session,
                "checkpoint_end",
                {
                    "checkpointId": entry.checkpoint_id,
                    "after": now.commit,
                    "files": files,
                    "interrupted": True,
                },
            )

    async def files_changed(self, session: Session, old: str, new: str) -> list[dict[str, str]]:
        if old == new:
            return []
        assert self.store is not None
        changes = await self.store.repo_for(session.cwd).changes(old, new)
        return [{"path": c.path, "change": c.change} for c in changes]

    async def listing(self, session: Session) -> list[CheckpointEntry]:
        """Newest first; a crash's unfinished checkpoint is closed first (when idle)."""
        await self.settle(session)
        if session.checkpoints.unfinished() and not session.busy and self.store is not None:
            with contextlib.suppress(CheckpointError):
                await self.snapshot(session, "listing")
        return session.checkpoints.newest_first()

    async def diff(self, session: Session, checkpoint_id: str) -> tuple[str, bool]:
        """The unified diff of what that checkpoint's turn (or rewind) changed."""
        await self.settle(session)
        entry = session.checkpoints.get(checkpoint_id)
        if entry is None:
            raise checkpoint_not_found(session, checkpoint_id)
        if entry.before is None or self.store is None:
            raise InvalidParams(
                f"Checkpoint {checkpoint_id} has no snapshot of the files"
                + (f" ({entry.error})." if entry.error else "."),
                [Issue(key="checkpointId", message="no file snapshot", value=checkpoint_id)],
            )
        if entry.after is None:
            if session.busy:
                raise SessionBusy(
                    f"Session {session.id} is running that turn; its diff is known when it ends."
                )
            await self.snapshot(session, "diff")
        if entry.after is None:
            return "", False
        return await self.store.repo_for(session.cwd).diff_text(
            entry.before, entry.after, DIFF_LIMIT
        )

    def forget(self, session_id: str) -> None:
        """A deleted session's snapshots go (in the background): its ref, and the objects
        no other session's snapshot shares."""
        if self.store is None:
            return
        store = self.store

        async def prune() -> None:
            for repo in await asyncio.to_thread(store.holding, session_id):
                try:
                    async with repo.locked():
                        await repo.forget(session_id)
                except CheckpointError as exc:
                    logger.info("could not prune checkpoints: %s", exc.message)

        task = asyncio.get_running_loop().create_task(prune())
        self._background.add(("", task))
        task.add_done_callback(lambda done: self._background.discard(("", done)))

    async def drop_ref(self, session: Session) -> None:
        """Drop the session's ref now (at shutdown, for an ephemeral session: a git or two,
        no prune); its objects go at the repository's next prune."""
        if self.store is None:
            return
        repo = self.store.repo_for(session.cwd)
        try:
            async with asyncio.timeout(5):
                async with repo.locked():
                    await repo.drop_ref(session.id)
        except (CheckpointError, TimeoutError) as exc:
            logger.info("could not drop the checkpoints of %s: %s", session.id, exc)

    def keep(self, session: Session, task: asyncio.Task[Any]) -> None:
        """Let a snapshot no turn waits for finish in the background."""
        self._background.add((session.id, task))
        task.add_done_callback(lambda done: self._background.discard((session.id, done)))

    async def settle(self, session: Session) -> None:
        """Wait for the session's background snapshots (recorded as they complete)."""
        tasks = [task for owner, task in self._background if owner == session.id]
        if tasks:
            await asyncio.wait(tasks)

    async def aclose(self) -> None:
        tasks = [task for _, task in self._background]
        tasks += [task for task in self._warming.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)


def record(session: Session, kind: str, fields: dict[str, Any]) -> None:
    """Append a checkpoint event to the session file, then fold it into the session's log
    (the order the reader folds it in)."""
    payload = {"kind": kind, **fields}
    session.file.append("event", payload)
    session.history = session.checkpoints.apply(payload, session.history)


class TurnCheckpoint:
    """One turn's checkpoint (see the module docstring)."""

    def __init__(self, service: Checkpoints, session: Session, prompt: str) -> None:
        self.service = service
        self.session = session
        self.turn_id = ""
        self.prompt = _first_line(prompt)
        self.checkpoint_id = new_id("cp_")
        self.time = now_iso()
        self._message_id: str | None = None
        self._turn = 0
        self._task: asyncio.Task[Snapshot] | None = None
        self._recorded = False
        self._before: Snapshot | None = None

    def start(self, turn_id: str, message_id: str | None = None) -> None:
        """Begin the snapshot: right after the user message is in the history, or before it
        is written when the turn runs commands first (a custom command's `` !`cmd` ``s) with
        `message_id` the id that message will have."""
        if self.service.store is None or self._task is not None:
            return
        self.turn_id = turn_id
        users = [
            item.id
            for item in self.session.history
            if isinstance(item, MessageItem) and item.role == "user"
        ]
        if message_id is not None and message_id not in users:
            users.append(message_id)
        self._turn = len(users)
        self._message_id = users[-1] if users else None
        self._task = asyncio.get_running_loop().create_task(
            self.service.snapshot(
                self.session, f"before turn {self.turn_id}", running=self.checkpoint_id
            )
        )

    async def before_change(self) -> None:
        """Wait for the snapshot and record the checkpoint, once, before anything changes.
        Raises only StorageError (the checkpoint could not be recorded: nothing may run)."""
        if self._recorded or self._task is None:
            return
        snapshot, error = await self._wait_before()
        self._record(snapshot, error)

    async def finish(self) -> None:
        """Record the turn's end (never raises; a full disk is the turn's own error)."""
        if self._task is None:
            return
        try:
            if self._recorded:
                await self._record_end()
            elif self._task.done():
                snapshot, error = await self._wait_before()
                self._record(snapshot, error, ended=True)
            else:
                # Nothing could have changed and the snapshot is still running (the turn was
                # quicker, or a first snapshot of a large tree): the turn does not wait; the
                # snapshot is recorded for this checkpoint when it completes.
                self._record(None, None, ended=True)
                self._task.add_done_callback(self._late_snapshot)
                self.service.keep(self.session, self._task)
        except StorageError:
            logger.info("could not record the checkpoint of turn %s", self.turn_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("recording the checkpoint of turn %s failed", self.turn_id)

    def _late_snapshot(self, task: asyncio.Task[Snapshot]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        commit = task.result().commit
        try:
            record(
                self.session,
                "checkpoint_end",
                {
                    "checkpointId": self.checkpoint_id,
                    "before": commit,
                    "after": commit,
                    "files": [],
                },
            )
        except Exception:  # the session was closed meanwhile: this checkpoint has no files
            logger.info("the snapshot of turn %s came after its session closed", self.turn_id)

    async def _wait_before(self) -> tuple[Snapshot | None, str | None]:
        assert self._task is not None
        try:
            return await asyncio.shield(self._task), None
        except CheckpointError as exc:
            logger.info("no checkpoint for turn %s: %s", self.turn_id, exc.message)
            return None, exc.message
        except asyncio.CancelledError:
            if self._task.cancelled():
                return None, "cancelled"
            raise

    def _record(self, snapshot: Snapshot | None, error: str | None, *, ended: bool = False) -> None:
        self._before = snapshot
        fields: dict[str, Any] = {
            "checkpointId": self.checkpoint_id,
            "reason": "turn",
            "turn": self._turn,
            "turnId": self.turn_id,
            "time": self.time,
            "prompt": self.prompt,
            "messageId": self._message_id,
            "before": snapshot.commit if snapshot is not None else None,
            "notCovered": not_covered_wire(snapshot.not_covered) if snapshot else [],
        }
        if error is not None:
            fields["error"] = error
        if ended:
            fields["after"] = fields["before"]
            fields["files"] = []
        record(self.session, "checkpoint", fields)
        self._recorded = True

    async def _record_end(self) -> None:
        if self._before is None:
            return
        try:
            after = await self.service.snapshot(
                self.session, f"after turn {self.turn_id}", running=self.checkpoint_id
            )
            files = await self.service.files_changed(
                self.session, self._before.commit, after.commit
            )
        except CheckpointError as exc:
            logger.info("no end snapshot for turn %s: %s", self.turn_id, exc.message)
            record(
                self.session,
                "checkpoint_end",
                {"checkpointId": self.checkpoint_id, "after": None, "error": exc.message},
            )
            return
        record(
            self.session,
            "checkpoint_end",
            {
                "checkpointId": self.checkpoint_id,
                "after": after.commit,
                "files": files,
                "notCovered": not_covered_wire(after.not_covered),
            },
        )


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:PROMPT_CHARS]
    return ""
