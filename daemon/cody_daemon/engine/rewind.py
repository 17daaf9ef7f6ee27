"""Rewinding a session to a checkpoint: its files, its conversation, or both.

`rewind` (the engine's side of `_cody/session/rewind`):
1. refuses while a turn runs or prompts are queued (SessionBusy, -32011) and claims the session's turn slot so no
   prompt starts during it; a cancelled request still completes the rewind (shielded): a
   half-recorded rewind would be worse than a late one;
2. snapshots the workspace as it is now and records it as a `rewind` checkpoint (the state
   being left), so the rewind itself can be undone by rewinding to that checkpoint;
3. files: restores every path that differs between now and the checkpoint (added files
   removed, deleted ones written back, contents and executable bits as they were) through
   checkpoints/restore.py, except conflicts: a path changed since the checkpoint by
   anything other than this session's own later turns and rewinds (the snapshots between
   one step's end and the next step's start tell; a turn a crash interrupted counts as
   "someone else"), or a path the checkpoint had that is now on disk but not covered
   (ignored, too large). Conflicts are left as they are unless `force`;
4. conversation: the history becomes the one the checkpoint saw (before its prompt); the
   session file keeps every line, gains a `rewind` event (store/checkpoint_log.py), and the
   replay shows a note where the conversation was rewound. The next model request sees
   the shorter history; a compaction whose summarised items are gone no longer applies.

Processes (tools/processes/): a rewind of files first stops every process still running that
a turn it undoes started (the target's turn and every later one), background ones included,
before the snapshot of the state being left: such a process (a watcher, a dev server writing
its cache) would otherwise change the restored files again at once. What it wrote after its
turn ended stays a conflict (who wrote it cannot be told from the user's edits). A
conversation-only rewind leaves every process running, as it leaves the files.

A codex/claude session's conversation belongs to its CLI: only its files can be rewound.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..checkpoints.changes import Change
from ..checkpoints.git import CheckpointError
from ..checkpoints.repo import ShadowRepo, Snapshot
from ..checkpoints.restore import RestoreOutcome, present_in_tree, restore_changes
from ..errors import InvalidParams, Issue, SessionBusy
from ..ids import new_id
from ..store.checkpoint_log import CheckpointEntry, last_message_id
from .checkpoints import Checkpoints, checkpoint_not_found, not_covered_wire, now_iso, record
from .compaction import item_key
from .session import Session
from .workdir import require_workdir

__all__ = ["RestoreWhat", "RewindOutcome", "forget_stale_compaction", "rewind"]

RestoreWhat = Literal["files", "conversation", "both"]


@dataclass(kw_only=True)
class RewindOutcome:
    restored: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    conversation_at: str | None = None
    redo_checkpoint_id: str = ""
    stopped_processes: list[tuple[int, str]] = field(default_factory=list)
    """(processId, command) of the processes of undone turns this rewind stopped."""


async def rewind(
    service: Checkpoints,
    session: Session,
    checkpoint_id: str,
    restore: RestoreWhat,
    *,
    force: bool = False,
) -> RewindOutcome:
    if session.busy or session.queue:
        raise SessionBusy(f"Session {session.id} is running a turn; wait or cancel it first.")
    await service.settle(session)
    if session.busy or session.queue:
        raise SessionBusy(f"Session {session.id} is running a turn; wait or cancel it first.")
    target = session.checkpoints.get(checkpoint_id)
    if target is None:
        raise checkpoint_not_found(session, checkpoint_id)
    require_workdir(session.id, session.cwd)  # its files, and the snapshot of what is left
    files = restore in ("files", "both")
    conversation = restore in ("conversation", "both")
    _check(service, session, target, files=files, conversation=conversation)
    task = asyncio.create_task(_rewind(service, session, target, restore, files=files, force=force))
    session.turn = task
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait({task})  # the rewind completes; the request answers cancelled
        raise
    finally:
        if session.turn is task and task.done():
            session.turn = None


def _check(
    service: Checkpoints,
    session: Session,
    target: CheckpointEntry,
    *,
    files: bool,
    conversation: bool,
) -> None:
    key = target.checkpoint_id
    if conversation and session.settings.backend != "native":
        raise InvalidParams(
            f"Session {session.id} runs on the {session.settings.backend} backend, which keeps "
            'its own conversation: only its files can be rewound (restore: "files").',
            [Issue(key="restore", message="not for a backend session", valid=("files",))],
        )
    if conversation and target.conversation is None:
        raise InvalidParams(
            f"Checkpoint {key} does not know its place in the conversation; restore its "
            'files only (restore: "files").',
            [Issue(key="restore", message="no conversation for this checkpoint")],
        )
    if files and target.before is None:
        why = f" ({target.error})" if target.error else ""
        raise InvalidParams(
            f"Checkpoint {key} has no snapshot of the files{why}; nothing to restore.",
            [Issue(key="checkpointId", message="no file snapshot", value=key)],
        )
    if files and service.store is None:
        raise CheckpointError("Checkpoints are not available in this daemon.")


async def _rewind(
    service: Checkpoints,
    session: Session,
    target: CheckpointEntry,
    restore: RestoreWhat,
    *,
    files: bool,
    force: bool,
) -> RewindOutcome:
    outcome = RewindOutcome(redo_checkpoint_id=new_id("cp_"))
    if files:
        outcome.stopped_processes = await _stop_processes_of_undone_turns(session, target)
    now = await service.snapshot(session, "before rewind")
    foreign: set[str] = set()
    if files:
        assert service.store is not None and target.before is not None
        repo = service.store.repo_for(session.cwd)
        present = await repo.existing(_commits(session, target))
        if target.before not in present:
            raise InvalidParams(
                f"The checkpoint store of {session.cwd} does not have the snapshot of "
                f"checkpoint {target.checkpoint_id} (it was taken in another directory before "
                "the session moved, it was deleted, or the session file names one it never "
                "had); nothing was changed.",
                [Issue(key="checkpointId", message="snapshot missing", value=target.checkpoint_id)],
            )
        foreign = await repo.changed_paths(_gaps(session, target, now, present))
    label = f"turn {target.turn}" if target.turn else "a rewind"
    record(
        session,
        "checkpoint",
        {
            "checkpointId": outcome.redo_checkpoint_id,
            "reason": "rewind",
            "time": now_iso(),
            "prompt": f"(before the rewind to {label}: {target.prompt})",
            "before": now.commit,
            "notCovered": not_covered_wire(now.not_covered),
        },
    )
    after = now
    if files:
        after = await _restore_files(
            service, session, target, now=now, foreign=foreign, force=force, outcome=outcome
        )
    changed = await service.files_changed(session, now.commit, after.commit)
    record(
        session,
        "checkpoint_end",
        {"checkpointId": outcome.redo_checkpoint_id, "after": after.commit, "files": changed},
    )
    note = None
    if restore != "files":
        note = (
            f"⟲ Rewound the conversation to before {label}: “{target.prompt}”. "
            "The later messages stay in the session file."
        )
    history_before = session.history
    record(
        session,
        "rewind",
        {
            "checkpointId": target.checkpoint_id,
            "restore": restore,
            "redoCheckpointId": outcome.redo_checkpoint_id,
            "restored": outcome.restored,
            "conflicts": outcome.conflicts,
            "failed": [{"path": path, "reason": why} for path, why in outcome.failed],
            "forced": force,
            "stoppedProcesses": [
                {"processId": pid, "command": command} for pid, command in outcome.stopped_processes
            ],
            "time": now_iso(),
            "note": note,
        },
    )
    if session.history is not history_before:
        _after_conversation_rewind(session)
    outcome.conversation_at = last_message_id(session.history)
    await session.file.sync()
    return outcome


async def _restore_files(
    service: Checkpoints,
    session: Session,
    target: CheckpointEntry,
    *,
    now: Snapshot,
    foreign: set[str],
    force: bool,
    outcome: RewindOutcome,
) -> Snapshot:
    assert service.store is not None and target.before is not None
    repo = service.store.repo_for(session.cwd)
    changes = await repo.changes(now.commit, target.before)
    async with repo.locked():
        conflicts, result = await asyncio.to_thread(
            _restore_unless_conflicting, repo, changes, foreign, force, service.protected
        )
    outcome.conflicts = conflicts
    if result is None:
        return now
    outcome.restored, outcome.failed = result.restored, result.failed
    return await service.snapshot(session, "after rewind")


async def _stop_processes_of_undone_turns(
    session: Session, target: CheckpointEntry
) -> list[tuple[int, str]]:
    """Stop what the turns being undone started and is still running (SIGTERM to each
    process group, SIGKILL after the grace time), and wait for them."""
    table = session.processes
    if table is None:
        return []
    undone = {
        entry.turn_id
        for entry in session.checkpoints.since(target.checkpoint_id)
        if entry.reason == "turn" and entry.turn_id is not None
    }
    doomed = [p for p in table.listed() if p.running and p.facts.turn_id in undone]
    label = f"turn {target.turn}" if target.turn else "a rewind"
    by = f"the rewind to before {label}"
    await asyncio.gather(*(table.stop(p.id, by=by) for p in doomed))
    return [(p.id, p.facts.title) for p in doomed]


def _restore_unless_conflicting(
    repo: ShadowRepo,
    changes: list[Change],
    foreign: set[str],
    force: bool,
    protected: tuple[Path, ...],
) -> tuple[list[str], RestoreOutcome | None]:
    """Restore every change but the conflicts (in a worker thread: file I/O). A conflict:
    a path someone else changed since the checkpoint, or one the checkpoint had that is on
    disk now without being covered (ignored, too large)."""
    conflicts: list[str] = []
    apply: list[Change] = []
    for change in changes:
        uncovered = change.change == "added" and present_in_tree(repo.work_tree, change.path)
        if (change.path in foreign or uncovered) and not force:
            conflicts.append(change.path)
        else:
            apply.append(change)
    if not apply:
        return sorted(conflicts), None
    return sorted(conflicts), restore_changes(repo.git, repo.work_tree, apply, protected)


def _commits(session: Session, target: CheckpointEntry) -> list[str]:
    return [
        commit
        for entry in session.checkpoints.since(target.checkpoint_id)
        for commit in (entry.before, entry.after)
        if commit is not None
    ]


def _gaps(
    session: Session, target: CheckpointEntry, now: Snapshot, present: set[str]
) -> list[tuple[str, str]]:
    """(from, to) snapshot pairs whose changes were not made by this session: from the end
    of each step (a turn or rewind) since `target` to the start of the next, and from the
    last one's end to now. A step without a trustworthy end (a crash) ends where it began;
    a step whose snapshots the store does not have is skipped (its changes count as someone
    else's)."""
    steps = [e for e in session.checkpoints.since(target.checkpoint_id) if e.before in present]
    pairs: list[tuple[str, str]] = []
    end: str | None = None
    for step in steps:
        assert step.before is not None
        if end is not None:
            pairs.append((end, step.before))
        trusted = step.after is not None and step.after in present and not step.interrupted
        end = step.after if trusted else step.before
    if end is not None:
        pairs.append((end, now.commit))
    return pairs


def _after_conversation_rewind(session: Session) -> None:
    """The model's view after a conversation rewind: no stale size estimate, and no
    compaction whose summarised items are gone."""
    session.context = None
    forget_stale_compaction(session)


def forget_stale_compaction(session: Session) -> None:
    """Drop a compaction whose summarised items a rewind took out of the history."""
    compaction = session.compaction
    if compaction is not None and not any(
        item_key(item) == compaction.summarized_through for item in session.history
    ):
        session.compaction = None
