"""One session's commands, skills and hooks: found, checked and listed (`discover`).

Run when a session becomes live (off the event loop: a few hundred small reads at most).
The result is what `_meta.cody` lists (`Extensions.wire`), what `available_commands_update`
advertises and what the engine runs.

Invariants:
- a built-in command's name is never taken, nor a name under a reserved prefix (`mcp:`, the
  MCP servers' prompts): the file is named in a warning;
- a user's command or skill is never replaced by a project's of the same name (project
  entries come after every user entry, per kind: user skills, user commands, project
  skills, project commands);
- hooks come from the user's files (`[hooks]` in Cody's config.toml, `<Cody's config
  dir>/hooks.json`, `$CODEX_HOME/hooks.json`, `$CLAUDE_CONFIG_DIR/settings.json`) and, only
  when the project is trusted, from the project's (`[hooks]` in `.cody/config.toml`,
  `.cody/hooks.json`, `.codex/hooks.json`, `.claude/settings.json` and
  `settings.local.json`, from the project root down to the working directory). An untrusted
  project's hooks are parsed only to be named in a warning: they are never kept, so nothing
  can run them;
- every warning names the file it is about (at most `MAX_WARNINGS`, the last saying how many
  more); nothing here raises for a bad file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..config.loader import HookTable
from ..config.model import SkillSelector
from ..core.project import project_chain, project_root, shared_directory
from ..core.safe_read import JSON_FILE_LIMIT
from .commands import CustomCommand, command_places, find_commands
from .files import Scope, UnreadableFile, read_text
from .hooks_config import HookSpec, parse_hooks
from .skills import Skill, enabled_skills, find_skills, skill_places

__all__ = ["CODEX_PROMPT_PREFIX", "Extensions", "Locations", "discover"]

_NO_PREFIXES: Mapping[str, str] = {}

CODEX_PROMPT_PREFIX: Final = "prompts:"
MAX_HOOKS: Final = 200
MAX_WARNINGS: Final = 20
"""Warnings kept (a repository with a thousand bad files must not flood every client)."""
_SHOWN_COMMAND: Final = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Locations:
    cody_dir: Path
    """Cody's config directory (`$CODY_HOME` when set)."""
    claude_dir: Path
    codex_home: Path
    home: Path | None
    """The user's home (`~/.agents/skills`); None when unknown."""
    config_file: Path
    """Cody's user config (named in the warning about an untrusted project's hooks)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Extensions:
    commands: Mapping[str, CustomCommand] = field(default_factory=dict)
    """Every runnable custom command and user-invocable skill, by name (no built-ins)."""
    skills: tuple[Skill, ...] = ()
    disabled_skills: tuple[Skill, ...] = ()
    """Skills `[[skills.config]]` switched off: only listed, so a user sees why."""
    hooks: tuple[HookSpec, ...] = ()
    warnings: tuple[str, ...] = ()

    def wire(self) -> dict[str, list[dict[str, Any]]]:
        """`_meta.cody`'s `commands` (the command files: a skill is listed once, in
        `skills`, with `userInvocable`), `skills`, `disabledSkills` and `hooks`."""
        return {
            "commands": [command.wire() for command in self.commands.values() if not command.skill],
            "skills": [skill.wire() for skill in self.skills],
            "disabledSkills": [skill.wire() for skill in self.disabled_skills],
            "hooks": [hook.wire() for hook in self.hooks],
        }

    def skill(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)


def discover(
    cwd: Path,
    where: Locations,
    *,
    trusted: bool,
    hook_tables: Sequence[HookTable] = (),
    reserved: Collection[str] = (),
    reserved_prefixes: Mapping[str, str] = _NO_PREFIXES,
    skill_selectors: Sequence[SkillSelector] = (),
) -> Extensions:
    """The extensions of a session in `cwd` (blocking file I/O). `reserved`: the built-in
    commands' names; `reserved_prefixes`: name prefixes that belong to others (`mcp:` → "the
    MCP servers' prompts"), each with whose they are; `skill_selectors`: `[[skills.config]]`
    (a skill they disable is dropped after precedence is applied, so a project's skill of
    the same name does not take the place of a user's disabled one)."""
    real_cwd = Path(os.path.realpath(cwd))
    root = project_root(real_cwd)
    chain = [d for d in project_chain(root, real_cwd) if not shared_directory(d)]
    nearest_first = list(reversed(chain))
    warnings: list[str] = []
    commands = find_commands(
        command_places(
            cody_dir=where.cody_dir,
            claude_dir=where.claude_dir,
            codex_home=where.codex_home,
            project_dirs=nearest_first,
            root=str(root),
        ),
        warnings,
    )
    found_skills = find_skills(
        skill_places(
            cody_dir=where.cody_dir,
            home=where.home,
            claude_dir=where.claude_dir,
            codex_home=where.codex_home,
            project_dirs=nearest_first,
            root=str(root),
        ),
        warnings,
    )
    first = _first_of_each(found_skills)
    skills = enabled_skills(first, skill_selectors)
    disabled = [skill for skill in first if skill not in skills]
    table = _command_table(commands, skills, reserved, reserved_prefixes, warnings)
    about_hooks: list[str] = []
    hooks = _hooks(
        where, root=root, cwd=real_cwd, trusted=trusted, tables=hook_tables, warnings=about_hooks
    )
    warnings = [*about_hooks, *warnings]  # first: an untrusted project's hooks are named
    if len(warnings) > MAX_WARNINGS:
        more = len(warnings) - MAX_WARNINGS + 1
        warnings = [*warnings[: MAX_WARNINGS - 1], f"... and {more} more warnings like these"]
    return Extensions(
        commands=table,
        skills=tuple(skills),
        disabled_skills=tuple(disabled),
        hooks=tuple(hooks),
        warnings=tuple(warnings),
    )


def _first_of_each(skills: Iterable[Skill]) -> list[Skill]:
    seen: set[str] = set()
    kept = []
    for skill in skills:
        if skill.name not in seen:
            seen.add(skill.name)
            kept.append(skill)
    return kept


def _command_table(
    commands: list[CustomCommand],
    skills: list[Skill],
    reserved: Collection[str],
    reserved_prefixes: Mapping[str, str],
    warnings: list[str],
) -> dict[str, CustomCommand]:
    entries: list[CustomCommand] = []
    for scope in ("user", "project"):
        entries += [s.as_command() for s in skills if s.scope == scope and s.user_invocable]
        entries += [c for c in commands if c.scope == scope]
    table: dict[str, CustomCommand] = {}
    hidden: list[str] = []
    for entry in entries:
        if entry.origin == "codex" and not entry.skill:
            table.setdefault(CODEX_PROMPT_PREFIX + entry.name, entry)
        kind = "skill" if entry.skill else "command"
        owner = next(
            (
                f"/{p}... names are {whose}"
                for p, whose in reserved_prefixes.items()
                if entry.name.startswith(p)
            ),
            None,
        )
        if entry.name in reserved:
            warnings.append(
                f"the {kind} /{entry.name} in {entry.path} "
                f"is not used: Cody's built-in /{entry.name} comes first"
            )
        elif owner is not None:
            warnings.append(f"the {kind} /{entry.name} in {entry.path} is not used: {owner}")
        elif entry.name not in table:
            table[entry.name] = entry
        elif not (entry.origin == "codex" and not entry.skill):
            hidden.append(f"/{entry.name} ({entry.path}, after {table[entry.name].path})")
    if hidden:
        warnings.append(
            "not loaded, another command of the same name comes first: " + "; ".join(hidden)
        )
    return table


def _hooks(
    where: Locations,
    *,
    root: Path,
    cwd: Path,
    trusted: bool,
    tables: Sequence[HookTable],
    warnings: list[str],
) -> list[HookSpec]:
    specs: list[HookSpec] = []
    for table in tables:
        if not table.project:
            specs += parse_hooks(table.table, source=table.source, scope="user", warnings=warnings)
    specs += _json_hooks(where.cody_dir / "hooks.json", None, "user", warnings)
    specs += _json_hooks(where.codex_home / "hooks.json", None, "user", warnings)
    specs += _json_hooks(where.claude_dir / "settings.json", None, "user", warnings)
    project: list[HookSpec] = []
    quiet: list[str] = []  # an untrusted project's parse warnings: not worth the user's time
    for table in tables:
        if table.project:
            found = parse_hooks(
                table.table,
                source=table.source,
                scope="project",
                warnings=warnings if trusted else quiet,
            )
            project += found
    for directory in project_chain(root, cwd):
        if shared_directory(directory):
            continue  # anyone may write there: nothing in it is the project's
        for relative in (
            ".cody/hooks.json",
            ".codex/hooks.json",
            ".claude/settings.json",
            ".claude/settings.local.json",
        ):
            project += _json_hooks(
                directory / relative, str(root), "project", warnings if trusted else quiet
            )
    if trusted:
        specs += project
    elif project:
        named = "; ".join(
            f"{hook.source}: {hook.event} `{_short(hook.command)}`" for hook in project
        )
        warnings.append(
            "hooks of this project were not loaded and will not run, because the project is "
            f'not trusted: {named}. To run them, add "{cwd}" to trusted_projects in '
            f"{where.config_file}."
        )
    if len(specs) > MAX_HOOKS:
        warnings.append(f"more than {MAX_HOOKS} hooks: the rest are not loaded")
        specs = specs[:MAX_HOOKS]
    return specs


def _json_hooks(path: Path, root: str | None, scope: Scope, warnings: list[str]) -> list[HookSpec]:
    """The hooks of a `hooks.json` or Claude Code `settings.json` (none when it is absent)."""
    if not os.path.lexists(path):
        return []
    try:
        data = json.loads(read_text(path, JSON_FILE_LIMIT + 1, root))
    except UnreadableFile as exc:
        warnings.append(f"hooks in {path} ignored: {exc}")
        return []
    except (ValueError, RecursionError):
        warnings.append(f"hooks in {path} ignored: not valid JSON")
        return []
    if not isinstance(data, dict) or "hooks" not in data:
        return []
    if data.get("disableAllHooks") is True:
        warnings.append(f"hooks in {path} are off there (disableAllHooks)")
        return []
    return parse_hooks(data["hooks"], source=str(path), scope=scope, warnings=warnings)


def _short(command: str) -> str:
    line = " ".join(command.split())
    return line if len(line) <= _SHOWN_COMMAND else line[: _SHOWN_COMMAND - 1] + "…"
