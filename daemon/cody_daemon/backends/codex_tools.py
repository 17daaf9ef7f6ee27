"""How the Codex CLI's tool calls look to Cody: titles, kinds, diffs, results, and what each of
its approval requests asks Cody to decide.

Shared by the turn (backends/codex_turn.py) for every tool item it shows and every approval
it puts to Cody: a command gets the same grant key as Cody's own `exec` (backends/display.py),
an edit the key of its resolved paths.

Invariants:
- an approved command counts as unsandboxed (`runs_unsandboxed`): the CLI's model can ask
  for it to run outside the sandbox, and the request does not say so (codex_sandbox.py);
- an edit whose files are not known, or that asks for a writable root outside the sandbox's
  (`grantRoot`), is a sandbox violation (outside `danger-full-access`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cody_protocol.content import ToolCallContent

from ..core.command_text import command_lines
from .base import ApprovalAsk, BackendSettings, ToolFinished, ToolStarted
from .codex_protocol import (
    CommandExecutionRequestApprovalParams,
    CommandExecutionThreadItem,
    FileChangeRequestApprovalParams,
    FileChangeThreadItem,
    FileUpdateChange,
    McpToolCallThreadItem,
    ThreadItem,
    WebSearchThreadItem,
)
from .display import (
    canonical_key,
    command_display,
    command_reads,
    exec_grant_key,
    exec_known_safe,
    file_diff,
    paths_grant_key,
    text_content,
)
from .mapping import sandbox_violation
from .peer import view

__all__ = ["command_ask", "command_finished", "describe_item", "edit_ask"]


def describe_item(item: ThreadItem, cwd: Path) -> ToolStarted | None:
    """A tool item as Cody shows it (None for an item that is no tool call)."""
    kind = item.get("type")
    item_id = str(item.get("id", ""))
    if kind == "commandExecution":
        command_item = view(CommandExecutionThreadItem, item)
        command = command_display(str(command_item.get("command", "")))
        where = str(command_item.get("cwd") or cwd)
        raw = {"command": command, "cwd": where}
        return ToolStarted(
            call_id=item_id,
            tool="commandExecution",
            cody_tool="exec",
            title=command,
            kind="execute",
            raw_input=raw,
            arguments=json.dumps(raw),
            content=text_content("\n".join([*command_lines(command), f"cwd: {where}"])),
        )
    if kind == "fileChange":
        changes = _changes(view(FileChangeThreadItem, item))
        paths = [str(c.get("path", "")) for c in changes]
        content: list[ToolCallContent] = [
            file_diff(
                str(c.get("path", "")),
                str(view(dict[str, Any], c.get("kind")).get("type", "update")),
                str(c.get("diff", "")),
                cwd,
            )
            for c in changes
        ]
        raw_changes = [
            {
                "path": str(c.get("path", "")),
                "kind": view(dict[str, Any], c.get("kind")).get("type"),
            }
            for c in changes
        ]
        return ToolStarted(
            call_id=item_id,
            tool="fileChange",
            cody_tool="applyPatch",
            title="Edit " + ", ".join(_short(p, cwd) for p in paths),
            kind="edit",
            raw_input={"changes": raw_changes},
            arguments=json.dumps({"changes": changes}),
            locations=tuple(paths),
            content=content,
        )
    if kind == "mcpToolCall":
        call = view(McpToolCallThreadItem, item)
        server, tool = str(call.get("server", "")), str(call.get("tool", ""))
        arguments = call.get("arguments")
        return ToolStarted(
            call_id=item_id,
            tool="mcpToolCall",
            cody_tool=f"mcp__{server}__{tool}",
            title=f"{server}: {tool}",
            kind="other",
            raw_input=arguments,
            arguments=json.dumps(arguments),
        )
    if kind == "webSearch":
        query = str(view(WebSearchThreadItem, item).get("query", ""))
        return ToolStarted(
            call_id=item_id,
            tool="webSearch",
            cody_tool="webSearch",
            title=f"Search the web: {query}",
            kind="fetch",
            raw_input={"query": query},
            arguments=json.dumps({"query": query}),
        )
    return None


def command_finished(item: CommandExecutionThreadItem, streamed: str) -> ToolFinished:
    """A finished command (`streamed`: its output as it came, when the item has none)."""
    item_id = str(item.get("id", ""))
    status = item.get("status")
    exit_code = item.get("exitCode")
    output = item.get("aggregatedOutput")
    if output is None:
        output = streamed
    if status == "declined":
        output = "User denied approval"
    ok = status == "completed" and exit_code in (0, None)
    return ToolFinished(
        call_id=item_id,
        status="completed" if ok else "failed",
        output=str(output),
        content=text_content(str(output)) if output else None,
        raw_output={"exitCode": exit_code, "durationMs": item.get("durationMs")},
    )


def command_ask(
    params: CommandExecutionRequestApprovalParams,
    item: CommandExecutionThreadItem,
    cwd: Path,
    settings: BackendSettings,
    env: Mapping[str, str],
) -> ApprovalAsk:
    """What Cody decides for `item/commandExecution/requestApproval` (see the module docstring)."""
    item_id = str(params.get("itemId", ""))
    command = str(params.get("command") or item.get("command") or "")
    shown = command_display(command)
    where = str(params.get("cwd") or item.get("cwd") or cwd)
    lines = [*command_lines(shown), f"cwd: {where}"]
    if params.get("reason"):
        lines += ["", f"Codex says: {params.get('reason')}"]
    if params.get("additionalPermissions") or params.get("networkApprovalContext"):
        lines += ["", "Codex asks for more access than its sandbox gives for this command."]
    lines += ["", "Once approved, Codex may run this command outside its sandbox."]
    safe = bool(command) and exec_known_safe(command, cwd=Path(where), env=env)
    return ApprovalAsk(
        call_id=item_id,
        cody_tool="exec",
        title=shown,
        kind="execute",
        raw_input={"command": shown, "cwd": where},
        content=text_content("\n".join(lines)),
        grant_key=exec_grant_key(command) if command else canonical_key("exec", params),
        known_safe=safe,
        sandbox_violation=sandbox_violation(
            "codex", settings, cwd, cody_tool="exec", known_safe=safe
        ),
        runs_unsandboxed=True,
        reads=command_reads(command, Path(where)),
    )


def edit_ask(
    params: FileChangeRequestApprovalParams,
    item: ThreadItem | None,
    cwd: Path,
    settings: BackendSettings,
) -> ApprovalAsk:
    """What Cody decides for `item/fileChange/requestApproval` (see the module docstring)."""
    described = describe_item(item, cwd) if item is not None else None
    paths = list(described.locations) if described is not None else []
    grant_root = params.get("grantRoot")
    written = (*paths, *([str(grant_root)] if grant_root else []))
    violation = sandbox_violation(
        "codex",
        settings,
        cwd,
        cody_tool="applyPatch",
        known_safe=False,
        paths=written,
    )
    if not paths and settings.sandbox_mode != "danger-full-access":
        violation = violation or "the files this edit writes are not known"
    return ApprovalAsk(
        call_id=str(params.get("itemId", "")),
        cody_tool="applyPatch",
        title=described.title if described is not None else "Edit files",
        kind="edit",
        raw_input=described.raw_input if described is not None else {},
        content=(described.content or []) if described is not None else [],
        grant_key=(paths_grant_key(paths, cwd) if paths else canonical_key("applyPatch", params)),
        sandbox_violation=violation,
    )


def _changes(item: FileChangeThreadItem) -> list[FileUpdateChange]:
    changes: object = item.get("changes")
    if not isinstance(changes, list):
        return []
    return [view(FileUpdateChange, c) for c in changes if isinstance(c, dict)]


def _short(path: str, cwd: Path) -> str:
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path
