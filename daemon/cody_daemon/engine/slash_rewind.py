"""`/undo` and `/rewind` for ACP editors (engine/slash.py): checkpoints as chat text.

- `/undo`: rewind the newest turn the conversation still holds: its files and its messages
  (`both`; a codex/claude session: its files);
- `/rewind`: the numbered list of checkpoints, newest first (what `_cody/session/checkpoints`
  returns); `/rewind N [files|conversation|both] [force]` goes back to number N (default
  `both`; `files` for a codex/claude session).

The answer says what was restored, what was left as a conflict (and how to force it), and
which checkpoint undoes the rewind. Mistakes (a bad number, nothing to undo) are answered as
text; a busy session is the prompt's own -32011.
"""

from __future__ import annotations

from ..errors import InvalidParams
from ..store.checkpoint_log import CheckpointEntry
from .checkpoints import Checkpoints, in_conversation
from .rewind import RestoreWhat, RewindOutcome, rewind
from .session import Session

__all__ = ["describe_checkpoint", "rewind_command"]

_RESTORES: tuple[RestoreWhat, ...] = ("files", "conversation", "both")
_FILES_SHOWN = 5
_LISTED = 30


async def rewind_command(service: Checkpoints, session: Session, name: str, argument: str) -> str:
    entries = await service.listing(session)
    native = session.settings.backend == "native"
    present = {id(item) for item in session.history}
    if name == "undo":
        target = next(
            (e for e in entries if e.reason == "turn" and in_conversation(e, present)), None
        )
        if target is None:
            return "Nothing to undo: this conversation has no turn yet."
        restore: RestoreWhat = "both" if native else "files"
        return await _run(service, session, target, restore, force=False, entries=entries)
    words = argument.split()
    if not words:
        return _listing(entries, present)
    try:
        number = int(words[0])
    except ValueError:
        number = 0
    if not 1 <= number <= len(entries):
        return (
            f"/rewind takes a checkpoint number from 1 to {len(entries)} "
            "(/rewind alone lists them)."
            if entries
            else "This session has no checkpoints yet."
        )
    chosen = [r for r in _RESTORES if r in words[1:]]
    restore = chosen[0] if chosen else ("both" if native else "files")
    force = "force" in words[1:]
    return await _run(service, session, entries[number - 1], restore, force=force, entries=entries)


async def _run(
    service: Checkpoints,
    session: Session,
    target: CheckpointEntry,
    restore: RestoreWhat,
    *,
    force: bool,
    entries: list[CheckpointEntry],
) -> str:
    try:
        outcome = await rewind(service, session, target.checkpoint_id, restore, force=force)
    except InvalidParams as exc:
        return f"/rewind: {exc.message}"
    return _describe(target, restore, outcome, number=entries.index(target) + 1)


def _describe(
    target: CheckpointEntry, restore: RestoreWhat, outcome: RewindOutcome, *, number: int
) -> str:
    where = f"turn {target.turn}" if target.turn else "the checkpoint"
    lines = [f"Rewound to before {where} “{target.prompt}”."]
    lines.extend(
        f"Stopped process {process_id} ({command}): a turn this rewind undid started it."
        for process_id, command in outcome.stopped_processes
    )
    if restore != "conversation":
        if outcome.restored:
            shown = ", ".join(outcome.restored[:_FILES_SHOWN])
            more = len(outcome.restored) - _FILES_SHOWN
            lines.append(
                f"Files restored ({len(outcome.restored)}): {shown}"
                + (f" and {more} more" if more > 0 else "")
                + "."
            )
        else:
            lines.append("No file needed restoring.")
    if restore != "files":
        lines.append("The conversation goes on from before that prompt.")
    if outcome.conflicts:
        lines.append(
            "Left as they are, changed since by someone else: "
            + ", ".join(outcome.conflicts)
            + f". To overwrite them: /rewind {number + 1} files force."
        )
    for path, why in outcome.failed:
        lines.append(f"Not restored: {path} ({why}).")
    lines.append("To undo this rewind: /rewind 1 (the checkpoint of the state it left).")
    return "\n".join(lines)


def describe_checkpoint(entry: CheckpointEntry) -> str:
    """One line: turn, time, prompt, files."""
    head = f"turn {entry.turn}" if entry.turn else "rewind"
    when = entry.time[:16].replace("T", " ")
    if entry.files:
        marks = {"added": "A", "modified": "M", "deleted": "D"}
        shown = ", ".join(f"{marks[f.change]} {f.path}" for f in entry.files[:_FILES_SHOWN])
        more = len(entry.files) - _FILES_SHOWN
        files = f"{len(entry.files)} file(s): {shown}" + (f" +{more}" if more > 0 else "")
    elif entry.before is None:
        files = f"files not restorable ({entry.error or 'no snapshot'})"
    else:
        files = "no file changes"
    return f"{head} · {when} · “{entry.prompt}” · {files}"


def _listing(entries: list[CheckpointEntry], present: set[int]) -> str:
    if not entries:
        return "This session has no checkpoints yet (one is taken at every turn)."
    lines = ["Checkpoints of this session, newest first:"]
    for number, entry in enumerate(entries[:_LISTED], start=1):
        gone = (
            " (no longer in the conversation)" if in_conversation(entry, present) is False else ""
        )
        lines.append(f"{number}. {describe_checkpoint(entry)}{gone}")
    if len(entries) > _LISTED:
        lines.append(f"… and {len(entries) - _LISTED} older.")
    lines.append(
        "Go back with /rewind N [files|conversation|both] [force] (default: both). "
        "/undo undoes the last turn."
    )
    return "\n".join(lines)
