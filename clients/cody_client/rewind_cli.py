"""Checkpoints in the terminal: the chat's `/undo` and `/rewind`, and
`cody-client sessions checkpoints|rewind` for scripts.

- `/undo`: the newest turn the conversation still holds, files and conversation (a
  codex/claude session: files);
- `/rewind`: a numbered picker (newest first: each turn's prompt, time and files), then
  files / conversation / both; a conflict (a file someone else changed since) is listed and
  overwritten only when the user says so. `/rewind N [files|conversation|both] [force]`
  skips the questions.

Every field shown comes from the daemon, so it goes through `one_line` (inert.py).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Awaitable, Callable

from cody_protocol.checkpoints import CheckpointInfo, RewindResult

from .client import CodyClient
from .inert import json_document, one_line
from .session import ClientSession
from .terminal import Renderer

__all__ = ["RewindCommands", "checkpoint_line", "run_checkpoint_command"]

RESTORES = ("files", "conversation", "both")
FILES_SHOWN = 4
PICK_LIMIT = 30
CONFLICTS_LEFT = 3
"""`sessions rewind` exit code when conflicts were left as they are."""

AskLine = Callable[[str], Awaitable[str | None]]


def checkpoint_line(number: int, info: CheckpointInfo) -> str:
    """`  3. turn 2 · 10:03 · “prompt” · M a.py, A b.py`, every field inert."""
    head = f"turn {info.turn}" if info.turn else "rewind"
    when = info.time[11:16] if len(info.time) >= 16 else info.time
    marks = {"added": "A", "modified": "M", "deleted": "D"}
    if info.files:
        shown = ", ".join(f"{marks[f.change]} {f.path}" for f in info.files[:FILES_SHOWN])
        more = len(info.files) - FILES_SHOWN
        files = shown + (f" +{more} more" if more > 0 else "")
    elif not info.restorable:
        files = "files not restorable"
    else:
        files = "no file changes"
    gone = " (not in the conversation)" if info.in_conversation is False else ""
    return (
        f"{number:>3}. {one_line(head)} · {one_line(when)} · “{one_line(info.prompt)}” · "
        f"{one_line(files)}{gone}"
    )


def result_lines(result: RewindResult, restore: str) -> list[str]:
    lines = [
        f"Stopped process {stopped.process_id} ({one_line(stopped.command)}): "
        "a turn this rewind undid started it."
        for stopped in result.stopped_processes
    ]
    if restore != "conversation":
        if result.restored:
            shown = ", ".join(one_line(path) for path in result.restored[:8])
            more = len(result.restored) - 8
            lines.append(
                f"Restored {len(result.restored)} file(s): {shown}"
                + (f" and {more} more" if more > 0 else "")
            )
        else:
            lines.append("No file needed restoring.")
    if restore != "files":
        lines.append("The conversation continues from before that prompt.")
    for failure in result.failed:
        lines.append(f"Not restored: {one_line(failure.path)} ({one_line(failure.reason)})")
    return lines


class RewindCommands:
    """The chat's `/undo` and `/rewind` (chat.py hands over its session and terminal)."""

    def __init__(self, renderer: Renderer, ask_line: AskLine) -> None:
        self.renderer = renderer
        self.ask_line = ask_line

    async def undo(self, session: ClientSession) -> None:
        entries = await session.checkpoints()
        target = next(
            (e for e in entries if e.reason == "turn" and e.in_conversation is not False), None
        )
        if target is None:
            self.renderer.line("Nothing to undo: this conversation has no turn yet.")
            return
        await self._rewind(session, target, _default_restore(session), force=False)

    async def rewind(self, session: ClientSession, words: list[str]) -> None:
        entries = await session.checkpoints()
        if not entries:
            self.renderer.line("No checkpoints yet: one is taken at every turn.")
            return
        if words:
            number = int(words[0])  # ValueError: the chat prints the usage
            if not 1 <= number <= len(entries):
                raise ValueError("no such checkpoint")
            chosen = [w for w in words[1:] if w in RESTORES]
            restore = chosen[0] if chosen else _default_restore(session)
            await self._rewind(session, entries[number - 1], restore, force="force" in words)
            return
        shown = entries[:PICK_LIMIT]
        for number, info in enumerate(shown, start=1):
            self.renderer.line(checkpoint_line(number, info))
        answer = await self.ask_line(f"rewind to before which? [1-{len(shown)}, Enter for none] ")
        if answer is None or not answer.strip():
            return
        index = int(answer) - 1
        if not 0 <= index < len(shown):
            raise ValueError("no such checkpoint")
        restore = _default_restore(session)
        if restore == "both":
            answer = await self.ask_line("restore [b]oth, [f]iles or [c]onversation? [b] ")
            if answer is None:
                return
            restore = {"f": "files", "c": "conversation"}.get(answer.strip()[:1].lower(), "both")
        await self._rewind(session, shown[index], restore, force=False)

    async def _rewind(
        self, session: ClientSession, target: CheckpointInfo, restore: str, *, force: bool
    ) -> None:
        result = await session.rewind(target.checkpoint_id, restore, force=force)
        where = f"turn {target.turn}" if target.turn else "that checkpoint"
        self.renderer.line(f"Rewound to before {where} “{one_line(target.prompt)}”.")
        for line in result_lines(result, restore):
            self.renderer.line(line)
        if result.conflicts:
            self.renderer.line(
                self.renderer.style.yellow(
                    "Changed since by someone else, left as they are: "
                    + ", ".join(one_line(path) for path in result.conflicts)
                )
            )
            answer = await self.ask_line("overwrite them with the checkpoint's version? [y/N] ")
            if answer is not None and answer.strip().lower().startswith("y"):
                forced = await session.rewind(target.checkpoint_id, "files", force=True)
                for line in result_lines(forced, "files"):
                    self.renderer.line(line)
        self.renderer.line(self.renderer.style.dim("/rewind 1 undoes this rewind."))


def _default_restore(session: ClientSession) -> str:
    """Files and conversation; a codex/claude session's conversation is its CLI's own."""
    backend = session.meta.backend if session.meta is not None else None
    return "files" if backend not in (None, "native") else "both"


async def run_checkpoint_command(client: CodyClient, args: argparse.Namespace) -> int:
    """`cody-client sessions checkpoints ID` and `sessions rewind ID CHECKPOINT`."""
    session = await client.resume_session(args.session_id, os.getcwd())
    entries = await session.checkpoints()
    if args.action == "checkpoints":
        if args.json:
            document = json.dumps({"checkpoints": [e.wire() for e in entries]}, indent=2)
            print(json_document(document))
        elif not entries:
            print("No checkpoints.")
        for number, info in enumerate(entries if not args.json else [], start=1):
            print(f"{checkpoint_line(number, info)}  {one_line(info.checkpoint_id)}")
        return 0
    target = _find(entries, args.checkpoint)
    result = await session.rewind(target.checkpoint_id, args.restore, force=args.force)
    if args.json:
        print(json_document(json.dumps(result.wire(), indent=2)))
    else:
        for line in result_lines(result, args.restore):
            print(line)
        if result.conflicts:
            print("Conflicts, left as they are (--force overwrites them):")
            for path in result.conflicts:
                print(f"  {one_line(path)}")
        print(
            "Undo with: cody-client sessions rewind "
            f"{one_line(args.session_id)} {one_line(result.redo_checkpoint_id)} "
            f"--restore {args.restore}"
        )
    return CONFLICTS_LEFT if result.conflicts else 0


def _find(entries: list[CheckpointInfo], given: str | None) -> CheckpointInfo:
    if not given:
        raise ValueError("sessions rewind needs a checkpoint: its id, or its number")
    for entry in entries:
        if entry.checkpoint_id == given:
            return entry
    try:
        number = int(given)
    except ValueError:
        raise ValueError(f"no checkpoint {given!r} in this session") from None
    if not 1 <= number <= len(entries):
        raise ValueError(f"no checkpoint number {number} (1 to {len(entries)})")
    return entries[number - 1]
