"""How Claude Code's tool calls look to Cody: titles, kinds, diffs, grant keys, and what a
call reads (for the login-file refusal).

Shared by the turn (backends/claude_turn.py) for every `tool_use` it shows and every
`can_use_tool` it puts to Cody: the same command gets the same grant key as Cody's own `exec`
(backends/display.py), an edit the key of its resolved paths.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from cody_protocol.content import DiffToolCallContent, ToolCallContent

from ..core.command_text import command_lines
from .base import ApprovalAsk, BackendSettings, FileRead, ToolStarted
from .display import (
    canonical_key,
    claude_tool_display,
    command_reads,
    exec_grant_key,
    paths_grant_key,
    text_content,
)
from .mapping import claude_tool_to_cody, sandbox_violation

__all__ = ["approval_ask", "describe_tool"]

_READS: Final = {"Read": False, "NotebookRead": False, "LS": False, "Grep": True, "Glob": True}
"""Claude Code tools that read a path: whether file contents below it are read too."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _full(path: str, cwd: Path) -> Path:
    return Path(path) if os.path.isabs(path) else cwd / path


def _edit_preview(name: str, tool_input: dict[str, Any], cwd: Path) -> list[ToolCallContent]:
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    if not path:
        return []
    full = _full(path, cwd)
    old = _read(full)
    if name == "Write":
        return [
            DiffToolCallContent(
                path=str(full), old_text=old, new_text=str(tool_input.get("content", ""))
            )
        ]
    edits: list[dict[str, Any]]
    if name == "MultiEdit":
        edits = [e for e in tool_input.get("edits") or [] if isinstance(e, dict)]
    elif name == "Edit":
        edits = [tool_input]
    else:
        return text_content(json.dumps(tool_input, indent=1)[:4000])
    if old is None:
        return text_content(json.dumps(tool_input, indent=1)[:4000])
    new = old
    for edit in edits:
        before, after = str(edit.get("old_string", "")), str(edit.get("new_string", ""))
        new = (
            new.replace(before, after) if edit.get("replace_all") else new.replace(before, after, 1)
        )
    return [DiffToolCallContent(path=str(full), old_text=old, new_text=new)]


def describe_tool(call_id: str, name: str, tool_input: dict[str, Any], cwd: Path) -> ToolStarted:
    """A Claude Code tool call as Cody shows it."""
    title, kind = claude_tool_display(name, tool_input)
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    locations = (str(_full(path, cwd)),) if path else ()
    content: list[ToolCallContent] | None = None
    if name == "Bash":
        command = str(tool_input.get("command", ""))
        content = text_content("\n".join([*command_lines(command), f"cwd: {cwd}"]))
    elif kind == "edit":
        content = _edit_preview(name, tool_input, cwd)
    return ToolStarted(
        call_id=call_id,
        tool=name,
        cody_tool=claude_tool_to_cody(name),
        title=title,
        kind=kind,
        raw_input=tool_input,
        arguments=json.dumps(tool_input, ensure_ascii=False),
        locations=locations,
        content=content,
    )


def _reads(name: str, tool_input: dict[str, Any], cwd: Path) -> tuple[FileRead, ...]:
    """The paths a Claude Code tool reads (Grep and Glob search the workspace by default)."""
    if name not in _READS:
        return ()
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    where = os.path.expanduser(path) if isinstance(path, str) and path else str(cwd)
    return (FileRead(str(_full(where, cwd)), contents_below=_READS[name]),)


def approval_ask(
    started: ToolStarted,
    name: str,
    tool_input: dict[str, Any],
    cwd: Path,
    settings: BackendSettings,
    *,
    known_safe: bool,
) -> ApprovalAsk:
    content = started.content or text_content(json.dumps(tool_input, indent=1)[:4000])
    safe = False
    if name == "Bash":
        command = str(tool_input.get("command", ""))
        key = exec_grant_key(command)
        safe = known_safe
        content = [
            *content,
            *text_content("Claude Code has no sandbox: this runs with your access."),
        ]
    elif started.kind == "edit" and started.locations:
        key = paths_grant_key(list(started.locations), cwd)
    else:
        key = canonical_key(name, tool_input)
    return ApprovalAsk(
        call_id=started.call_id,
        cody_tool=started.cody_tool,
        title=started.title,
        kind=started.kind,
        raw_input=tool_input,
        content=content,
        grant_key=key,
        known_safe=safe,
        sandbox_violation=sandbox_violation(
            "claude",
            settings,
            cwd,
            cody_tool=started.cody_tool,
            known_safe=safe,
            paths=started.locations,
        ),
        runs_unsandboxed=name == "Bash",
        reads=(
            command_reads(str(tool_input.get("command", "")), cwd)
            if name == "Bash"
            else _reads(name, tool_input, cwd)
        ),
    )
