"""Skills: folders with a `SKILL.md` (front matter `name`, `description`), the format Claude
Code, Codex, OpenCode and Gemini CLI share (docs/extensions.md "Skills").

Where they come from, in precedence order (the first of a name wins):
1. the user's: `<Cody's config dir>/skills` (`$CODY_HOME/skills`), `~/.agents/skills`,
   `~/.claude/skills` (`$CLAUDE_CONFIG_DIR`), `$CODEX_HOME/skills`;
2. the project's, nearest directory first: `.cody/skills`, `.agents/skills`, `.claude/skills`.
As for commands, a repository cannot replace a user's skill of the same name.

Progressive disclosure: discovery reads only the front matter (the first `HEAD_BYTES` of
each `SKILL.md`); the model gets names, descriptions and paths (engine/skills_context.py) and
reads a body, and the skill's other files, with its normal tools when it decides to use one.
`disable-model-invocation: true` keeps a skill out of that list (only the user runs it, as
`/<name>`); `user-invocable: false` keeps it off the slash commands.

`[[skills.config]]` selectors of the configuration (Codex's) switch skills off, or on again:
a selector names a skill by `name` or by `path` (its `SKILL.md` or its folder, compared as
real paths); for each skill the last selector that matches it decides (`enabled_skills`). A
disabled skill is dropped as if it were not there: not listed, not a command, not `$name`.

Invariants: each skill is a direct subdirectory of a skills folder holding a regular
`SKILL.md`; names follow the command rules (extensions/commands.py `valid_name`); at most
`MAX_SKILLS` are kept; a description is one line of at most `MAX_DESCRIPTION` characters.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..config.model import SkillSelector
from .commands import CustomCommand, describe, valid_name
from .files import Origin, Place, Scope, UnreadableFile, list_dir, read_text
from .front_matter import flag, split_front_matter, text_field

__all__ = [
    "HEAD_BYTES",
    "MAX_SKILLS",
    "SKILL_FILE",
    "Skill",
    "enabled_skills",
    "find_skills",
    "skill_places",
]

HEAD_BYTES: Final = 16 * 1024
MAX_SKILLS: Final = 1000
MAX_DESCRIPTION: Final = 1024
SKILL_FILE: Final = "SKILL.md"


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    name: str
    description: str
    path: Path
    """Its `SKILL.md`."""
    scope: Scope
    origin: Origin
    root: str | None
    model_invocable: bool = True
    user_invocable: bool = True
    hint: str | None = None

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "scope": self.scope,
            "origin": self.origin,
            "modelInvocable": self.model_invocable,
            "userInvocable": self.user_invocable,
        }

    def as_command(self) -> CustomCommand:
        """The skill run as `/<name> args` (Claude Code's arguments: `$ARGUMENTS`, `$0`...)."""
        return CustomCommand(
            name=self.name,
            description=self.description,
            hint=self.hint,
            path=self.path,
            scope=self.scope,
            origin="claude" if self.origin in ("agents", "cody") else self.origin,
            root=self.root,
            skill=True,
        )


def skill_places(
    *,
    cody_dir: Path,
    home: Path | None,
    claude_dir: Path,
    codex_home: Path,
    project_dirs: Iterable[Path],
    root: str,
) -> list[Place]:
    """Where skills are looked for, highest precedence first."""
    places = [Place(cody_dir / "skills", "user", "cody")]
    if home is not None:
        places.append(Place(home / ".agents" / "skills", "user", "agents"))
    places += [
        Place(claude_dir / "skills", "user", "claude"),
        Place(codex_home / "skills", "user", "codex"),
    ]
    for directory in project_dirs:
        places.append(Place(directory / ".cody" / "skills", "project", "cody", root))
        places.append(Place(directory / ".agents" / "skills", "project", "agents", root))
        places.append(Place(directory / ".claude" / "skills", "project", "claude", root))
    return places


def find_skills(places: Iterable[Place], warnings: list[str]) -> list[Skill]:
    """Every skill of `places`, in precedence order (names may repeat; the caller keeps the
    first)."""
    found: list[Skill] = []
    for place in places:
        if not place.usable():
            continue
        for entry in list_dir(place.directory):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            path = Path(entry.path) / SKILL_FILE
            if not path.exists():
                continue
            if len(found) >= MAX_SKILLS:
                warnings.append(f"more than {MAX_SKILLS} skills: the rest are not loaded")
                return found
            try:
                head = read_text(path, HEAD_BYTES, place.root)
            except UnreadableFile as exc:
                warnings.append(f"skill {path} skipped: {exc}")
                continue
            skill = _skill(entry.name, path, place, head, warnings)
            if skill is not None:
                found.append(skill)
    return found


def _skill(folder: str, path: Path, place: Place, head: str, warnings: list[str]) -> Skill | None:
    fields, body = split_front_matter(head)
    name = text_field(fields, "name") or folder
    if not valid_name(name) or ":" in name:
        warnings.append(f"skill {path} skipped: {name!r} is not a usable name")
        return None
    description = describe(fields, body, fallback=f"the {name} skill", limit=MAX_DESCRIPTION)
    return Skill(
        name=name,
        description=description,
        path=path,
        scope=place.scope,
        origin=place.origin,
        root=place.root,
        model_invocable=not flag(fields, "disable-model-invocation", False),
        user_invocable=flag(fields, "user-invocable", True),
        hint=text_field(fields, "argument-hint", "argument_hint", as_written=True),
    )


def enabled_skills(skills: Sequence[Skill], selectors: Sequence[SkillSelector]) -> list[Skill]:
    """`skills` without those the selectors disable (the last selector matching a skill
    decides; a skill no selector matches stays)."""
    if not selectors:
        return list(skills)
    paths = [_real(s.path) if s.path is not None else None for s in selectors]
    kept = []
    for skill in skills:
        file, folder = _real(str(skill.path)), _real(str(skill.path.parent))
        enabled = True
        for selector, path in zip(selectors, paths, strict=True):
            if selector.name == skill.name or path in (file, folder):
                enabled = selector.enabled
        if enabled:
            kept.append(skill)
    return kept


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))
