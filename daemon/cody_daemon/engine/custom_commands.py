"""Running a custom command or a skill as `/<name> args`, and `$skill-name` in a prompt
(docs/extensions.md). The command's file becomes the prompt: arguments put in
(extensions/expand.py), `@path` files attached as embedded resources, `` !`command` ``s left
as placeholders the turn fills once each command ran through the approvals (engine/turn.py).

Invariants:
- an `@path` is attached only when its real path lies inside the project root and it is a
  regular UTF-8 text file of at most `ATTACH_LIMIT` bytes; otherwise the prompt keeps the
  reference and a note says why nothing was attached (a path that does not exist is left
  alone: `@name` may be a mention);
- a `$name` names a skill only when the session has a skill of that name; its `SKILL.md`
  (at most `ATTACH_LIMIT` bytes) is attached the same way, whatever its place (a user's
  skill lives outside the project);
- nothing here runs a command: blocking file reads only (call it off the event loop).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cody_protocol.content import (
    ContentBlock,
    ContentToolCallContent,
    EmbeddedResource,
    TextContent,
    TextResourceContents,
)

from ..core.project import project_root
from ..extensions.commands import CustomCommand, read_body
from ..extensions.discovery import Extensions
from ..extensions.expand import SHELL_MARK, ExpansionError, expand, file_references
from ..extensions.files import UnreadableFile, read_text
from ..extensions.skills import Skill
from ..tools.base import ToolResult
from .prompt_files import render

__all__ = [
    "ATTACH_LIMIT",
    "CommandFailed",
    "Invocation",
    "fill_shell",
    "invoke",
    "shell_text",
    "skill_mentions",
]

ATTACH_LIMIT: Final = 256 * 1024
_MENTION = re.compile(r"(?<![\w$])\$([A-Za-z0-9][A-Za-z0-9._-]*)")
_PLACEHOLDER = re.compile(re.escape(SHELL_MARK) + r"(\d+)" + re.escape(SHELL_MARK))


class CommandFailed(Exception):
    """The command cannot run as given (answered to the user as text)."""


@dataclass(frozen=True, slots=True)
class Invocation:
    blocks: list[ContentBlock]
    """The prompt: the expanded text (with shell placeholders), then attached files, then
    what the user attached themselves."""
    shell: tuple[str, ...] = ()
    model: str | None = None
    """The command's `model` front matter (the turn uses it when the provider has it)."""
    notes: list[str] = field(default_factory=list)


def invoke(
    command: CustomCommand, arguments: str, rest: Sequence[ContentBlock], cwd: Path
) -> Invocation:
    """The prompt `/<command.name> arguments` runs. Raises CommandFailed."""
    try:
        body = read_body(command)
    except UnreadableFile as exc:
        raise CommandFailed(f"/{command.name}: cannot read {command.path}: {exc}") from None
    try:
        expanded = expand(body, arguments, command.origin, name=command.name)
    except ExpansionError as exc:
        raise CommandFailed(str(exc)) from None
    text = expanded.text.strip()
    if command.skill:
        text = render(
            "skill_run",
            skill=command.name,
            path=str(command.path),
            folder=str(command.path.parent),
            body=text,
        )
    attached, notes = _attachments(text, cwd)
    if notes:
        text += "\n\n" + "\n".join(f"[Cody: {note}.]" for note in notes)
    return Invocation(
        blocks=[TextContent(text=text), *attached, *rest],
        shell=expanded.shell,
        model=command.model,
        notes=notes,
    )


def _attachments(text: str, cwd: Path) -> tuple[list[ContentBlock], list[str]]:
    real_cwd = Path(os.path.realpath(cwd))
    root = str(project_root(real_cwd))
    blocks: list[ContentBlock] = []
    notes: list[str] = []
    for reference in file_references(text):
        path = Path(os.path.expanduser(reference))
        path = path if path.is_absolute() else real_cwd / path
        if not os.path.lexists(path):
            continue
        try:
            content = _attachable(path, root)
        except UnreadableFile as exc:
            notes.append(f"@{reference} was not attached: {exc}")
            continue
        blocks.append(_resource(path, content))
    return blocks, notes


def _attachable(path: Path, root: str | None) -> str:
    if path.is_dir():
        raise UnreadableFile("a directory, not a file")
    text = read_text(path, ATTACH_LIMIT + 1, root)
    if len(text.encode("utf-8")) > ATTACH_LIMIT:
        raise UnreadableFile(f"larger than {ATTACH_LIMIT // 1024} KiB")
    return text


def _resource(path: Path, text: str) -> EmbeddedResource:
    return EmbeddedResource(
        resource=TextResourceContents(
            uri=path.absolute().as_uri(), text=text, mime_type="text/plain"
        )
    )


def skill_mentions(text: str, extensions: Extensions) -> list[ContentBlock]:
    """For each `$name` in `text` naming one of the session's skills: a note and its
    `SKILL.md` (each skill once)."""
    blocks: list[ContentBlock] = []
    seen: set[str] = set()
    for name in _MENTION.findall(text):
        skill = extensions.skill(name)
        if skill is None or name in seen:
            continue
        seen.add(name)
        blocks += _skill_blocks(skill)
    return blocks


def _skill_blocks(skill: Skill) -> list[ContentBlock]:
    note = render(
        "skill_mentioned", skill=skill.name, path=str(skill.path), folder=str(skill.path.parent)
    )
    try:
        content = _attachable(skill.path, skill.root)
    except UnreadableFile as exc:
        return [TextContent(text=f"{note}\n[Cody: {skill.path} cannot be read: {exc}.]")]
    return [TextContent(text=note), _resource(skill.path, content)]


def shell_text(command: str, result: ToolResult | None) -> str:
    """What a `` !`command` `` puts in the prompt: its output, or why there is none."""
    if result is None:
        return f"[Cody: `{command}` did not run.]"
    raw = result.raw_output if isinstance(result.raw_output, dict) else {}
    if "refused" in raw:
        return f"[Cody: `{command}` was not run: {_error_text(result.output)}]"
    texts = [
        block.content.text
        for block in result.content
        if isinstance(block, ContentToolCallContent) and isinstance(block.content, TextContent)
    ]
    text = ("\n".join(texts) if texts else result.output).rstrip("\n")
    if not result.success:
        code = raw.get("exitCode")
        text += f"\n[Cody: `{command}` failed" + (f" with exit code {code}]" if code else "]")
    return text


def _error_text(output: str) -> str:
    """An error result's message (`{"error": message}`), else the output as it is."""
    try:
        data = json.loads(output)
    except ValueError:
        return output
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, str) else output


def fill_shell(text: str, outputs: Sequence[str]) -> str:
    """`text` with each shell placeholder replaced by its command's output."""
    return _PLACEHOLDER.sub(lambda match: outputs[int(match.group(1))], text)
