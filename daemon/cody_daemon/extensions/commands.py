"""Custom commands: Markdown prompts a user runs as `/<name> args` (docs/extensions.md).

Where they come from, in precedence order (the first of a name wins):
1. the user's: `<Cody's config dir>/commands` (`$CODY_HOME/commands`), `~/.claude/commands`
   (`$CLAUDE_CONFIG_DIR`), `$CODEX_HOME/prompts`;
2. the project's, nearest directory first (the working directory up to the project root):
   `.cody/commands`, `.claude/commands`.
A user's command is never replaced by a repository's of the same name (a cloned project
cannot change what `/deploy` means). Codex prompts are also always reachable as
`/prompts:<name>`, Codex's own spelling. Cody's and Claude Code's folders may nest: the file
`frontend/component.md` is `/frontend:component`.

Invariants: discovery reads only the first `HEAD_BYTES` of each file (its front matter and
first line); the body is read when the command runs (`read_body`, at most `BODY_LIMIT`
bytes). A name is letters, digits, `.`, `_`, `-` (and `:` between folder parts), at most
`MAX_NAME` characters: any other file is skipped with a warning. At most `MAX_COMMANDS` are
kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .files import Origin, Place, Scope, UnreadableFile, list_dir, read_text
from .front_matter import FrontMatter, split_front_matter, text_field

__all__ = [
    "BODY_LIMIT",
    "HEAD_BYTES",
    "MAX_COMMANDS",
    "CustomCommand",
    "command_places",
    "describe",
    "find_commands",
    "read_body",
    "valid_name",
]

HEAD_BYTES: Final = 16 * 1024
BODY_LIMIT: Final = 256 * 1024
MAX_COMMANDS: Final = 500
MAX_NAME: Final = 64
MAX_DEPTH: Final = 3
MAX_DESCRIPTION: Final = 300

_NAME_PART = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_NAME = re.compile(rf"^{_NAME_PART}(?::{_NAME_PART})*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomCommand:
    name: str
    description: str
    hint: str | None
    path: Path
    scope: Scope
    origin: Origin
    root: str | None
    """The project root the file must stay in when its body is read (None: the user's)."""
    model: str | None = None
    allowed_tools: tuple[str, ...] = ()
    """As written (shown, never a grant: what runs is decided by the approvals)."""
    skill: bool = False
    """A skill run as a command (its `SKILL.md`)."""

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "source": str(self.path),
            "scope": self.scope,
            "origin": self.origin,
            "kind": "skill" if self.skill else "command",
        }
        if self.hint:
            out["hint"] = self.hint
        return out


def valid_name(name: str) -> bool:
    return len(name) <= MAX_NAME and _NAME.match(name) is not None


def command_places(
    *,
    cody_dir: Path,
    claude_dir: Path,
    codex_home: Path,
    project_dirs: Iterable[Path],
    root: str,
) -> list[Place]:
    """Where commands are looked for, highest precedence first (`project_dirs`: the working
    directory up to the project root)."""
    places = [
        Place(cody_dir / "commands", "user", "cody"),
        Place(claude_dir / "commands", "user", "claude"),
        Place(codex_home / "prompts", "user", "codex"),
    ]
    for directory in project_dirs:
        places.append(Place(directory / ".cody" / "commands", "project", "cody", root))
        places.append(Place(directory / ".claude" / "commands", "project", "claude", root))
    return places


def find_commands(places: Iterable[Place], warnings: list[str]) -> list[CustomCommand]:
    """Every command file of `places` (see the module's rules), in precedence order; names
    may repeat (the caller keeps the first)."""
    found: list[CustomCommand] = []
    for place in places:
        if not place.usable():
            continue
        depth = 1 if place.origin == "codex" else MAX_DEPTH
        for path, name in _markdown_files(place.directory, depth, ()):
            if len(found) >= MAX_COMMANDS:
                warnings.append(f"more than {MAX_COMMANDS} commands: the rest are not loaded")
                return found
            if not valid_name(name):
                warnings.append(f"command file {path} skipped: {name!r} is not a usable name")
                continue
            try:
                head = read_text(path, HEAD_BYTES, place.root)
            except UnreadableFile as exc:
                warnings.append(f"command file {path} skipped: {exc}")
                continue
            found.append(_command(name, path, place, head))
    return found


def _markdown_files(
    directory: Path, depth: int, prefix: tuple[str, ...]
) -> Iterable[tuple[Path, str]]:
    for entry in list_dir(directory):
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        if entry.name.endswith(".md"):
            yield path, ":".join((*prefix, entry.name[:-3]))
        elif depth > 1 and entry.is_dir():
            yield from _markdown_files(path, depth - 1, (*prefix, entry.name))


def _command(name: str, path: Path, place: Place, head: str) -> CustomCommand:
    fields, body = split_front_matter(head)
    tools = fields.get("allowed-tools") or fields.get("allowed_tools") or ()
    if isinstance(tools, str):
        tools = [part.strip() for part in tools.split(",") if part.strip()]
    return CustomCommand(
        name=name,
        description=describe(fields, body, fallback=f"custom command ({place.origin})"),
        hint=text_field(fields, "argument-hint", "argument_hint", as_written=True),
        path=path,
        scope=place.scope,
        origin=place.origin,
        root=place.root,
        model=text_field(fields, "model"),
        allowed_tools=tuple(tools),
    )


def describe(fields: FrontMatter, body: str, *, fallback: str, limit: int = MAX_DESCRIPTION) -> str:
    """The front matter's `description`, else the body's first line (a heading's text), one
    line of at most `limit` characters."""
    text = text_field(fields, "description")
    if text is None:
        first = next((line for line in body.splitlines() if line.strip()), "")
        text = " ".join(first.lstrip("#").split()) or fallback
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def read_body(command: CustomCommand) -> str:
    """The command's prompt (the file without its front matter). Raises UnreadableFile (a
    file changed into something else since discovery, or grown past `BODY_LIMIT`)."""
    text = read_text(command.path, BODY_LIMIT + 1, command.root)
    if len(text.encode("utf-8")) > BODY_LIMIT:
        raise UnreadableFile(f"larger than {BODY_LIMIT:,} bytes")
    return split_front_matter(text)[1]
