"""`applyPatch`: add, delete, update and move files with one Codex `*** Begin Patch` patch.

Invariants:
- The patch applies as a whole or not at all: every file's new content is computed in
  memory first (`plan_changes`); any hunk that does not match fails the call with an error
  naming the file and hunk, and no file changes; a write failure midway rolls back the files
  already written (`commit_changes`).
- The grant key is `("paths", *sorted real paths)` of every path the patch touches, move
  targets included (docs/protocol.md "Grant keys"); a patch that does not parse falls back to
  the canonical-arguments key, which can never match a valid patch.
- Every touched real path (move targets too) must pass `SandboxPolicy.check_write`, both
  before approval (`escalation`: otherwise the call asks, or is refused under policy
  `never`) and again in `run`, right before anything is written, where only the real paths
  the user approved writing outside the sandbox (`ctx.write_anywhere`) may fail it.
- The approval preview is computed by the same in-memory application as `run`: one diff per
  file (old text None for an added file, new text "" for a deleted one, the move target's
  path for a move), or the error text when the patch would not apply.
- Through an editor (`ctx.files`, tools/editor_files.py): updated and deleted files are
  planned against the editor's text (unsaved changes included) and written through it; the
  same real paths pass the same sandbox checks first. What atomicity then holds is stated
  in tools/patch/editor_commit.py (each file whole, a failed patch restored; not one
  instant for all files).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from cody_protocol.content import (
    ContentToolCallContent,
    DiffToolCallContent,
    TextContent,
    ToolCallContent,
)
from cody_protocol.updates import ToolCallLocation
from pydantic import BaseModel, ConfigDict, Field

from ..policy.approval import Escalation
from ..policy.rules import PathSubject, RuleSubject
from .base import (
    GrantKey,
    Tool,
    ToolContext,
    ToolError,
    ToolFacts,
    ToolResult,
    canonical_grant_key,
    first_changed_line,
    location,
)
from .editor_files import ClientFileError, EditorFiles, editor_reads, editor_writes
from .patch import (
    AddFile,
    FileChange,
    FileOp,
    PatchError,
    PatchParseError,
    UpdateFile,
    commit_changes,
    op_paths,
    parse_patch,
    plan_changes,
)
from .patch.editor_commit import commit_through_editor

__all__ = ["ApplyPatchArgs", "ApplyPatchTool"]

_DESCRIPTION = """\
Edit files with a patch: add, delete, update or rename several files at once. The patch is \
applied entirely or not at all; if any hunk does not match, nothing changes and the error \
names the hunk. Format:

*** Begin Patch
*** Add File: path/new.py
+every line of the new file, each prefixed with +
*** Delete File: path/old.py
*** Update File: path/app.py
*** Move to: path/main.py
@@ def greet():
 context line (starts with a space)
-removed line
+added line
*** End Patch

Rules: paths are relative to the working directory. "*** Move to:" is optional. Each hunk \
of an Update File starts with "@@", optionally followed by a line of the file (such as a \
class or function definition) that appears before the change, to say where it is; use \
several "@@ <line>" lines in a row to narrow it down. Show about 3 lines of unchanged \
context before and after each change, copied exactly from the file; hunks must follow the \
order of the file. End a hunk with "*** End of File" when it must match the end of the \
file. Re-read a file before patching it again."""


class ApplyPatchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    patch: str = Field(
        description="The whole patch, from '*** Begin Patch' to '*** End Patch'.",
    )


class ApplyPatchTool(Tool[ApplyPatchArgs]):
    name = "applyPatch"
    description = _DESCRIPTION
    kind = "edit"
    facts = ToolFacts(changes="files", files="write")
    file_effects = "declared"
    args_model = ApplyPatchArgs

    def title(self, args: ApplyPatchArgs) -> str:
        try:
            ops = parse_patch(args.patch)
        except PatchParseError:
            return "Apply patch"
        if not ops:
            return "Apply patch"
        names = [
            f"{op.path} → {op.move_to}"
            if isinstance(op, UpdateFile) and op.move_to is not None
            else op.path
            for op in ops
        ]
        shown = ", ".join(names[:3])
        if len(names) > 3:
            shown += f" and {len(names) - 3} more"
        return f"Patch {shown}"

    def grant_key(self, args: ApplyPatchArgs, ctx: ToolContext) -> GrantKey:
        try:
            ops = parse_patch(args.patch)
        except PatchParseError:
            return canonical_grant_key(self.name, args)
        paths = {str(path) for op in ops for path in op_paths(op, ctx.cwd)}
        return ("paths", *sorted(paths))

    def locations(self, args: ApplyPatchArgs, cwd: Path) -> list[ToolCallLocation]:
        """Every path the patch names, move targets included (no lines: not applied yet)."""
        try:
            ops = parse_patch(args.patch)
        except PatchParseError:
            return []
        return [location(path) for op in ops for path in op_paths(op, cwd)]

    def escalation(self, args: ApplyPatchArgs, ctx: ToolContext) -> tuple[Escalation, str] | None:
        try:
            ops = parse_patch(args.patch)
        except PatchParseError:
            return None  # not a sandbox matter: `run` reports the parse error
        refusal = _sandbox_refusal(ops, ctx, approved=frozenset())
        return ("write", f"{refusal[0]}: {refusal[1]}") if refusal is not None else None

    def path_writes(self, args: ApplyPatchArgs, ctx: ToolContext) -> tuple[Path, ...]:
        """Every path the patch names, move targets included (none: it does not parse, so
        `run` writes nothing and reports why)."""
        try:
            ops = parse_patch(args.patch)
        except PatchParseError:
            return ()
        return tuple(path for op in ops for path in op_paths(op, ctx.cwd))

    def permission_subject(self, args: ApplyPatchArgs, ctx: ToolContext) -> RuleSubject:
        try:
            ops = parse_patch(args.patch)
        except PatchParseError:
            return None
        return PathSubject(tuple(path for op in ops for path in op_paths(op, ctx.cwd)))

    def preview(self, args: ApplyPatchArgs, ctx: ToolContext) -> list[ToolCallContent]:
        try:
            changes = plan_changes(parse_patch(args.patch), ctx.cwd)
        except (PatchParseError, PatchError) as exc:
            text = f"This patch cannot be applied; nothing would change.\n{exc.message}"
            return [ContentToolCallContent(content=TextContent(text=text))]
        return _diffs(changes)

    async def preview_async(self, args: ApplyPatchArgs, ctx: ToolContext) -> list[ToolCallContent]:
        editor = editor_reads(ctx.files)
        if editor is None:
            return self.preview(args, ctx)
        try:
            ops = parse_patch(args.patch)
            texts = await _editor_texts(ops, ctx.cwd, editor)
            changes = await asyncio.to_thread(plan_changes, ops, ctx.cwd, texts)
        except (PatchParseError, PatchError) as exc:
            text = f"This patch cannot be applied; nothing would change.\n{exc.message}"
            return [ContentToolCallContent(content=TextContent(text=text))]
        return _diffs(changes)

    async def run(self, args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
        if ctx.files is None or not (ctx.files.reads or ctx.files.writes):
            return await asyncio.to_thread(self._apply, args, ctx)
        try:
            ops = parse_patch(args.patch)
        except PatchParseError as exc:
            raise ToolError(exc.message) from None
        refusal = await asyncio.to_thread(_sandbox_refusal, ops, ctx)
        if refusal is not None:
            path, reason = refusal
            raise ToolError(f"the sandbox does not allow writing {path}: {reason}")
        reader, writer = editor_reads(ctx.files), editor_writes(ctx.files)
        try:
            texts = await _editor_texts(ops, ctx.cwd, reader) if reader is not None else None
            changes = await asyncio.to_thread(plan_changes, ops, ctx.cwd, texts)
            if writer is not None:
                await commit_through_editor(changes, writer)
            else:
                await asyncio.to_thread(commit_changes, changes)
        except PatchError as exc:
            raise ToolError(exc.message) from None
        result = self._result(changes, ctx)
        assert result.raw_output is not None
        result.raw_output["editor"] = {"read": reader is not None, "write": writer is not None}
        return result

    def _apply(self, args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
        try:
            ops = parse_patch(args.patch)
        except PatchParseError as exc:
            raise ToolError(exc.message) from None
        refusal = _sandbox_refusal(ops, ctx)
        if refusal is not None:
            path, reason = refusal
            raise ToolError(f"the sandbox does not allow writing {path}: {reason}")
        try:
            changes = plan_changes(ops, ctx.cwd)
            commit_changes(changes)
        except PatchError as exc:
            raise ToolError(exc.message) from None
        return self._result(changes, ctx)

    @staticmethod
    def _result(changes: Sequence[FileChange], ctx: ToolContext) -> ToolResult:
        return ToolResult(
            output=_summary(changes, ctx.cwd),
            raw_output={"files": [_raw_entry(change) for change in changes]},
            content=_diffs(changes),
            locations=_locations(changes),
        )


async def _editor_texts(ops: Sequence[FileOp], cwd: Path, editor: EditorFiles) -> dict[Path, bytes]:
    """The editor's text of every existing file the patch updates or deletes (by real path).

    A file the editor cannot read is left to the disk; one that is not on disk is not asked
    about (the plan then reports it missing, as without an editor)."""
    texts: dict[Path, bytes] = {}
    for op in ops:
        if isinstance(op, AddFile):
            continue
        path = op_paths(op, cwd)[0]
        if not await asyncio.to_thread(path.is_file):
            continue
        with contextlib.suppress(ClientFileError):
            texts[path] = (await editor.read_text(path)).encode("utf-8")
    return texts


def _sandbox_refusal(
    ops: Sequence[FileOp], ctx: ToolContext, *, approved: frozenset[Path] | None = None
) -> tuple[Path, str] | None:
    """The first touched path the sandbox refuses, with its reason (a path in `approved`,
    default `ctx.write_anywhere`, passes: the user let this call write it)."""
    allowed = ctx.write_anywhere if approved is None else approved
    for op in ops:
        for path in op_paths(op, ctx.cwd):
            reason = ctx.sandbox.check_write(path)
            if reason is not None and path not in allowed:
                return path, reason
    return None


def _diffs(changes: Sequence[FileChange]) -> list[ToolCallContent]:
    return [
        DiffToolCallContent(
            path=str(change.target), old_text=change.old_text, new_text=change.new_text
        )
        for change in changes
    ]


def _locations(changes: Sequence[FileChange]) -> list[ToolCallLocation]:
    """Every path the patch touched: where each file's content now is, at its first changed
    line; a moved file's old path too; a deleted file without a line."""
    found: list[ToolCallLocation] = []
    for change in changes:
        if change.kind == "delete":
            found.append(location(change.path))
            continue
        found.append(location(change.target, first_changed_line(change.old_text, change.new_text)))
        if change.kind == "move" and change.target != change.path:
            found.append(location(change.path))
    return found


_LETTERS = {"add": "A", "update": "M", "move": "M", "delete": "D"}


def _summary(changes: Sequence[FileChange], cwd: Path) -> str:
    """Codex's summary: one `A|M|D path` line per file (a moved file under its new path)."""
    lines = ["Success. Updated the following files:"]
    lines += [f"{_LETTERS[change.kind]} {_shown(change.target, cwd)}" for change in changes]
    return "\n".join(lines)


def _shown(path: Path, cwd: Path) -> str:
    """`path` relative to the working directory when it is inside it, else absolute."""
    if path == cwd or cwd in path.parents:
        return os.path.relpath(path, cwd)
    return str(path)


def _raw_entry(change: FileChange) -> dict[str, str]:
    entry = {"path": str(change.target), "op": change.kind}
    if change.kind == "move":
        entry["from"] = str(change.path)
    return entry
