"""Agent profiles: who a child session is (its instructions, model, tools, permissions).

Built in: `explore` (the read-only tools, a read-only sandbox) and `general` (the parent's
tools). More come from files, first found wins by name:

1. `<project>/.cody/agents/*.md` (from the working directory up to the project root),
2. `$CODY_HOME/agents/*.md` (Cody's config dir),
3. `<project>/.claude/agents/*.md`, then `~/.claude/agents/*.md` (Claude Code's),
4. `<project>/.codex/agents/*.toml`, then `$CODEX_HOME/agents/*.toml` (the Codex CLI's).

A profile is model input only. A cloned repository's profiles are hostile
(docs/subagents.md): what they can do is bounded by the parent, never widened:
`approval_policy` and `sandbox_mode` apply only when they are no looser than the parent's
(engine/subagents/limits.py), `tools` only narrows the parent's tools, a profile cannot take
a built-in's name, and its text reaches nothing but the child's model (and, inert, a
client's display).

Invariants: files are read with core/safe_read.py (regular files only, at most
`MAX_PROFILE_BYTES`), a project's file only when its real path lies inside the project; at
most `MAX_FILES` names per directory (in name order) and `MAX_PROFILES` profiles in all;
reading never raises: what cannot be used is reported in `ProfileSet.warnings`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, TypeVar, get_args

from cody_protocol.settings import ApprovalPolicy, SandboxMode

from ...core.safe_read import read_regular_text
from ..project_docs import project_root
from ..prompt_files import prompt
from .profile_files import Fields, cody_tool_names, markdown_profile, toml_profile

__all__ = [
    "BUILTIN_NAMES",
    "MAX_FILES",
    "MAX_PROFILES",
    "MAX_PROFILE_BYTES",
    "AgentProfile",
    "ProfileDirs",
    "ProfileSet",
    "builtin_profiles",
    "load_profiles",
]

MAX_PROFILE_BYTES: Final = 64 * 1024
MAX_FILES: Final = 200
MAX_PROFILES: Final = 100
MAX_DESCRIPTION: Final = 400
BUILTIN_NAMES: Final = ("general", "explore")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

Origin = Literal["builtin", "cody", "claude", "codex"]
_T = TypeVar("_T", bound=str)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentProfile:
    name: str
    description: str
    instructions: str = ""
    """Extra instructions for the child's model (the file's body)."""
    model: str | None = None
    """None: the parent's model."""
    tools: frozenset[str] | None = None
    """Cody tool names the child may use (within the parent's); None: the parent's."""
    phase: str | None = None
    """The child may use only this phase's tools (policy/allowlist.py: derived from the
    tools' facts), within the parent's and `tools`; None: no phase narrows them."""
    approval_policy: ApprovalPolicy | None = None
    sandbox_mode: SandboxMode | None = None
    isolation: Literal["worktree"] | None = None
    """`worktree`: the child runs in a git worktree of its own."""
    max_turns: int | None = None
    """At most this many model calls per turn (the parent's `max_tool_iterations` at most)."""
    origin: Origin = "builtin"
    source: str = "built-in"
    """The file it was read from."""


@dataclass(slots=True)
class ProfileSet:
    profiles: dict[str, AgentProfile] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentProfile | None:
        return self.profiles.get(name)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileDirs:
    """Where the user's own profiles are (the project's are found from the cwd)."""

    cody: Path
    claude: Path
    codex: Path


@dataclass(frozen=True, slots=True)
class _Place:
    directory: Path
    origin: Origin
    root: Path | None
    """A project's real root (its files must stay inside); None: a user's own directory."""
    suffix: str


def builtin_profiles() -> dict[str, AgentProfile]:
    return {
        "general": AgentProfile(
            name="general",
            description=prompt("agents/general_description"),
            instructions=prompt("agents/general"),
        ),
        "explore": AgentProfile(
            name="explore",
            description=prompt("agents/explore_description"),
            instructions=prompt("agents/explore"),
            phase="research",
            sandbox_mode="read-only",
        ),
    }


def load_profiles(cwd: Path, dirs: ProfileDirs, known_tools: Collection[str]) -> ProfileSet:
    """Every profile a session in `cwd` can use (blocking: call it off the event loop)."""
    found = ProfileSet(profiles=builtin_profiles())
    for place in _places(cwd, dirs):
        for path in _listing(place, found):
            if len(found.profiles) >= MAX_PROFILES + len(BUILTIN_NAMES):
                found.warnings.append(f"more than {MAX_PROFILES} agent profiles: the rest skipped")
                return found
            profile = _read(path, place, known_tools, found.warnings)
            if profile is None:
                continue
            if profile.name in BUILTIN_NAMES:
                found.warnings.append(
                    f"{path}: the name {profile.name!r} is a built-in agent's; profile skipped"
                )
            elif profile.name not in found.profiles:
                found.profiles[profile.name] = profile
    return found


def _places(cwd: Path, dirs: ProfileDirs) -> list[_Place]:
    real_cwd = Path(os.path.realpath(cwd))
    root = project_root(real_cwd)
    chain = [real_cwd]
    probe = real_cwd
    while probe not in (root, probe.parent):
        probe = probe.parent
        chain.append(probe)

    def project(name: str, origin: Origin, suffix: str) -> list[_Place]:
        return [_Place(d / name / "agents", origin, root, suffix) for d in chain]

    return [
        *project(".cody", "cody", ".md"),
        _Place(dirs.cody / "agents", "cody", None, ".md"),
        *project(".claude", "claude", ".md"),
        _Place(dirs.claude / "agents", "claude", None, ".md"),
        *project(".codex", "codex", ".toml"),
        _Place(dirs.codex / "agents", "codex", None, ".toml"),
    ]


def _listing(place: _Place, found: ProfileSet) -> list[Path]:
    """The profile files of one place, by name; a project's directory only when it really
    lies inside the project (a symlinked `.claude` pointing elsewhere is not read)."""
    if not place.directory.is_dir():
        return []
    if place.root is not None and not _inside(place.directory, place.root):
        found.warnings.append(f"{place.directory}: outside the project, not read")
        return []
    try:
        names = sorted(
            entry.name
            for entry in os.scandir(place.directory)
            if entry.name.endswith(place.suffix) and not entry.name.startswith(".")
        )
    except OSError as exc:
        found.warnings.append(f"{place.directory}: cannot be listed ({exc.strerror})")
        return []
    if len(names) > MAX_FILES:
        found.warnings.append(f"{place.directory}: more than {MAX_FILES} files, the rest skipped")
    return [place.directory / name for name in names[:MAX_FILES]]


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


def _read(
    path: Path, place: _Place, known_tools: Collection[str], warnings: list[str]
) -> AgentProfile | None:
    if place.root is not None and not _inside(path, place.root):
        warnings.append(f"{path}: a link out of the project, not read")
        return None
    try:
        text = read_regular_text(path, MAX_PROFILE_BYTES)
        if "\0" in text:
            raise ValueError("it holds NUL bytes")
        fields, body = toml_profile(text) if place.suffix == ".toml" else markdown_profile(text)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        warnings.append(f"{path}: not read ({why})")
        return None
    return _profile(
        path, place.origin, fields=fields, body=body, known_tools=known_tools, warnings=warnings
    )


def _profile(
    path: Path,
    origin: Origin,
    *,
    fields: Fields,
    body: str,
    known_tools: Collection[str],
    warnings: list[str],
) -> AgentProfile | None:
    name = _text(fields.get("name")) or path.stem
    if not _NAME.match(name):
        warnings.append(f"{path}: {name!r} is not a usable agent name; profile skipped")
        return None
    description = " ".join((_text(fields.get("description")) or "").split())
    if not description:
        warnings.append(f"{path}: no description; profile skipped")
        return None
    tools: frozenset[str] | None = None
    raw_tools = fields.get("tools")
    if raw_tools is not None:
        tools, left_out = cody_tool_names(raw_tools, known_tools)
        if left_out:
            warnings.append(f"{path}: tools left out: {', '.join(left_out)}")
    disallowed = fields.get("disallowedTools")
    if disallowed is not None:
        denied, _ = cody_tool_names(disallowed, known_tools)
        tools = frozenset(known_tools if tools is None else tools) - denied
    model = _text(fields.get("model"))
    return AgentProfile(
        name=name,
        description=description[:MAX_DESCRIPTION],
        instructions=body.strip(),
        model=None if model in (None, "inherit") else model,
        tools=tools,
        approval_policy=_choice(
            fields, "approval_policy", get_args(ApprovalPolicy), path, warnings
        ),
        sandbox_mode=_sandbox(fields, path, warnings),
        isolation="worktree" if _text(fields.get("isolation")) == "worktree" else None,
        max_turns=_positive(fields.get("maxTurns") or fields.get("max_turns")),
        origin=origin,
        source=str(path),
    )


def _sandbox(fields: Fields, path: Path, warnings: list[str]) -> SandboxMode | None:
    if _text(fields.get("permissionMode")) == "plan":  # Claude Code's read-only mode
        return "read-only"
    return _choice(fields, "sandbox_mode", get_args(SandboxMode), path, warnings)


def _choice(
    fields: Fields, key: str, valid: tuple[_T, ...], path: Path, warnings: list[str]
) -> _T | None:
    value = _text(fields.get(key))
    if value is None:
        return None
    for choice in valid:
        if value == choice:
            return choice
    warnings.append(f"{path}: {key} {value!r} is not one of {', '.join(valid)}; ignored")
    return None


def _positive(value: str | list[str] | None) -> int | None:
    text = _text(value)
    if text is None or not text.isdigit():
        return None
    number = int(text)
    return number if number > 0 else None


def _text(value: str | list[str] | None) -> str | None:
    if isinstance(value, list):
        value = ", ".join(value)
    if value is None or not value.strip():
        return None
    return value.strip()
