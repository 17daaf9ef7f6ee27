"""How an agent's tool call looks to Cody's clients and policy: titles, grant keys, diffs.

Shared by the backends: the same command gets the same grant key as Cody's own `exec`
(policy/commands.py normalisation), the same file set the same key as its file tools, so an
"allow for this session" answer means the same thing whichever loop runs the session.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from cody_protocol.content import (
    ContentToolCallContent,
    DiffToolCallContent,
    TextContent,
    ToolCallContent,
)
from cody_protocol.updates import ToolKind

from ..core.tooling import GrantKey
from ..policy.commands import normalize_command
from ..policy.safe_commands import is_known_safe
from .base import FileRead

__all__ = [
    "CLAUDE_TOOL_KINDS",
    "apply_unified_diff",
    "claude_tool_display",
    "canonical_key",
    "command_display",
    "command_reads",
    "exec_grant_key",
    "exec_known_safe",
    "file_diff",
    "paths_grant_key",
    "text_content",
]

_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_SHELL_FLAG = re.compile(r"^-[li]*c[li]*$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


CLAUDE_TOOL_KINDS: Final[dict[str, ToolKind]] = {
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Read": "read",
    "NotebookRead": "read",
    "Write": "edit",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Glob": "search",
    "Grep": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "TodoWrite": "think",
    "Task": "think",
}
"""Claude Code's tools (also the vocabulary imported sessions use, history/vocabulary.py) as
ACP tool kinds."""


def claude_tool_display(name: str, tool_input: dict[str, Any]) -> tuple[str, ToolKind]:
    """The title and kind a call of Claude Code's tool vocabulary is shown with: the command
    of a `Bash`, the file of a `Read`/`Write`/`Edit`, the pattern of a search..."""
    kind: ToolKind = CLAUDE_TOOL_KINDS.get(name, "other")
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    if name == "Bash":
        return str(tool_input.get("command", "")) or name, kind
    if kind == "edit":
        return f"{'Write' if name == 'Write' else 'Edit'} {path}".strip(), kind
    if name == "Read":
        return f"Read {path}".strip(), kind
    if name in ("Glob", "Grep", "LS"):
        target = tool_input.get("pattern") or tool_input.get("path") or ""
        return f"{name} {target}".strip(), kind
    if name == "WebFetch":
        return f"Fetch {tool_input.get('url', '')}".strip(), kind
    if name == "WebSearch":
        return f"Search the web: {tool_input.get('query', '')}", kind
    if name == "TodoWrite":
        return "Update the plan", kind
    return str(tool_input.get("description") or name), kind


def text_content(text: str) -> list[ToolCallContent]:
    return [ContentToolCallContent(content=TextContent(text=text))]


def command_display(command: str | list[str]) -> str:
    """The command as the user would type it: `/bin/bash -lc 'git status'` -> `git status`."""
    words = command if isinstance(command, list) else _split(command)
    if words is None:
        return command if isinstance(command, str) else shlex.join(command)
    if len(words) == 3 and os.path.basename(words[0]) in _SHELLS and _SHELL_FLAG.match(words[1]):
        return words[2]
    return command if isinstance(command, str) else shlex.join(command)


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


def command_reads(command: str | list[str], cwd: Path) -> tuple[FileRead, ...]:
    """The words of a command that name a path (they hold a `/` or start with `~`), as
    paths it may read: a CLI's model sees a command's output before Cody can redact it, so
    a command naming a login file is refused like a file tool reading it. Literal words only
    (a glob or a variable that expands to one is not caught: docs/backends.md)."""
    script = command_display(command)  # `bash -lc '<script>'` -> the script
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True  # words split at whitespace and at `;`, `|`, `&`, `<`...
    try:
        words = list(lexer)
    except ValueError:
        words = script.split()
    found: list[FileRead] = []
    for word in words:
        for part in word.split("="):  # `--file=~/.codex/auth.json`
            if "/" in part or part.startswith("~"):
                found.append(FileRead(os.path.join(cwd, os.path.expanduser(part))))
    return tuple(found)


def exec_grant_key(command: str | list[str]) -> GrantKey:
    return ("exec", *normalize_command(command))


def exec_known_safe(command: str | list[str], *, cwd: Path, env: Mapping[str, str]) -> bool:
    """On Cody's known-safe list where it will run (`cwd`, the CLI's environment `env`), as
    for Cody's own `exec`: never while `PATH` holds a relative directory, and git only in a
    repository that cannot make it run a program. Reads files: call it off the event loop."""
    search = env.get("PATH", os.defpath).split(os.pathsep)
    if any(not os.path.isabs(entry) for entry in search):
        return False
    return is_known_safe(command, cwd=cwd, env=env)


def paths_grant_key(paths: list[str], cwd: Path) -> GrantKey:
    resolved = sorted({os.path.realpath(os.path.join(cwd, os.path.expanduser(p))) for p in paths})
    return ("paths", *resolved)


def canonical_key(tool: str, arguments: Any) -> GrantKey:
    return (
        "tool",
        tool,
        json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def apply_unified_diff(old: str, diff: str) -> str | None:
    """`old` with the hunks of a unified diff applied; None when a hunk does not match."""
    lines = old.splitlines(keepends=True)
    out: list[str] = []
    position = 0
    hunk_lines: list[str] = []
    start: int | None = None

    def flush() -> bool:
        nonlocal position
        if start is None:
            return True
        target = max(start - 1, 0)
        if target < position:
            return False
        out.extend(lines[position:target])
        position = target
        for raw in hunk_lines:
            tag, body = raw[:1], raw[1:]
            if tag == "\\":
                continue
            if tag in (" ", "-"):
                if position >= len(lines) or lines[position].rstrip("\n") != body.rstrip("\n"):
                    return False
                if tag == " ":
                    out.append(lines[position])
                position += 1
            elif tag == "+":
                out.append(body if body.endswith("\n") else body + "\n")
        return True

    for raw in diff.splitlines(keepends=True):
        match = _HUNK.match(raw)
        if match:
            if not flush():
                return None
            start, hunk_lines = int(match.group(1)), []
        elif start is not None and raw[:1] in (" ", "-", "+", "\\"):
            hunk_lines.append(raw)
        elif start is not None and raw.strip() == "":
            hunk_lines.append(" \n")
    if not flush():
        return None
    out.extend(lines[position:])
    return "".join(out)


def file_diff(path: str, kind: str, diff: str, cwd: Path) -> ToolCallContent:
    """ACP diff content for one changed file (read before the change is applied)."""
    full = Path(path) if os.path.isabs(path) else cwd / path
    if kind == "add":
        return DiffToolCallContent(path=str(full), old_text=None, new_text=diff)
    old = _read(full)
    if kind == "delete":
        return DiffToolCallContent(path=str(full), old_text=old or "", new_text="")
    if old is not None:
        new = apply_unified_diff(old, diff)
        if new is not None:
            return DiffToolCallContent(path=str(full), old_text=old, new_text=new)
    return ContentToolCallContent(content=TextContent(text=f"{full}\n{diff}"))
