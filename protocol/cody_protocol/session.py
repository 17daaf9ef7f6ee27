"""Session lifecycle: new, load, resume, list, close, delete, modes, config options, fork."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import Field, field_validator

from ._base import WireModel
from .settings import ApprovalPolicy, Backend, Phase, ReasoningEffort, ReasoningSummary, SandboxMode
from .subagents import WorktreeInfo

__all__ = [
    "CloseSessionParams",
    "CodySessionInfoMeta",
    "CodySessionMeta",
    "CodySessionResultMeta",
    "ConfigOptionValue",
    "CustomCommandInfo",
    "DeleteSessionParams",
    "EnvVariable",
    "ForkSessionParams",
    "ForkSessionResult",
    "HookInfo",
    "HttpHeader",
    "ListSessionsParams",
    "ListSessionsResult",
    "ListedSessionMeta",
    "CodyLoadSessionMeta",
    "LoadSessionMeta",
    "LoadSessionParams",
    "McpServer",
    "McpServerHttp",
    "McpServerSse",
    "McpServerStdio",
    "NewSessionMeta",
    "NewSessionParams",
    "NewSessionResult",
    "ProjectDoc",
    "SessionConfigOption",
    "SessionIdParams",
    "SessionInfo",
    "SessionMode",
    "SessionModeState",
    "SessionResultMeta",
    "SessionStateResult",
    "SetConfigOptionParams",
    "SetConfigOptionResult",
    "SetModeParams",
    "SkillInfo",
]


class EnvVariable(WireModel):
    name: str
    value: str


class HttpHeader(WireModel):
    name: str
    value: str


class McpServerStdio(WireModel):
    name: str
    command: str
    args: list[str] = Field(default_factory=list)
    env: list[EnvVariable] = Field(default_factory=list)


class McpServerHttp(WireModel):
    type: Literal["http"]
    name: str
    url: str
    headers: list[HttpHeader] = Field(default_factory=list)


class McpServerSse(WireModel):
    type: Literal["sse"]
    name: str
    url: str
    headers: list[HttpHeader] = Field(default_factory=list)


McpServer = McpServerHttp | McpServerSse | McpServerStdio


def _no_nul(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise ValueError("a path must not contain a NUL byte")
    return value


def _absolute(value: str) -> str:
    _no_nul(value)
    if not os.path.isabs(value):
        raise ValueError(f"cwd must be an absolute path, got {value!r}")
    return value


class CodySessionMeta(WireModel):
    """Per-session overrides in `session/new` `_meta.cody` (docs/protocol.md "Settings" table)."""

    provider: str | None = None
    model: str | None = None
    approval_policy: ApprovalPolicy | None = None
    sandbox_mode: SandboxMode | None = None
    reasoning_effort: ReasoningEffort | None = None
    reasoning_summary: ReasoningSummary | None = None
    allowed_tools: list[str] | None = None
    phase: Phase | None = None
    backend: Backend | None = None
    writable_roots: list[str] | None = None
    """More directories the sandbox lets the session write (absolute paths), besides the
    workspace, the temp dir and `[sandbox_workspace_write] writable_roots`."""
    config: dict[str, Any] | None = None
    """Configuration overrides, as a `config.toml` table (`{"tools": {"exec": {...}}}`):
    the session's top layer, validated as a config file is; the fields above win over it
    (`cody-client -c key=value`)."""
    ephemeral: bool = False
    """Keep no session file: it is removed when the session closes (`cody-client exec
    --ephemeral`)."""
    worktree: bool | str | None = None
    """Run the session in a new git worktree of its project (under Cody's data dir, on a
    branch `cody/<name>`): `true` (a generated name) or the name. docs/subagents.md."""


class NewSessionMeta(WireModel):
    cody: CodySessionMeta | None = None


class NewSessionParams(WireModel):
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    meta: NewSessionMeta | None = Field(default=None, alias="_meta")

    _check_cwd = field_validator("cwd")(_absolute)


class SessionMode(WireModel):
    id: str
    name: str
    description: str | None = None


class SessionModeState(WireModel):
    current_mode_id: str
    available_modes: list[SessionMode]


class ConfigOptionValue(WireModel):
    value: str
    name: str
    description: str | None = None


class SessionConfigOption(WireModel):
    """A select-type config option (ACP `SessionConfigOption`)."""

    id: str
    name: str
    description: str | None = None
    category: str | None = None
    type: Literal["select"] = "select"
    current_value: str
    options: list[ConfigOptionValue]


class ProjectDoc(WireModel):
    """One project instructions file (AGENTS.md...) found for the session."""

    path: str
    bytes: int
    """Bytes of the file the model receives (0 when skipped or left out)."""
    truncated: bool = False
    """Cut at `project_doc_max_bytes` (or left out entirely when `bytes` is 0)."""
    skipped: str | None = None
    """Why the file was not read (binary, unreadable, a symlink out of the project)."""


ExtensionScope = Literal["user", "project"]
ExtensionOrigin = Literal["cody", "claude", "codex", "agents"]


class CustomCommandInfo(WireModel):
    """A custom command (or a skill run as one) the session runs as `/<name>`."""

    name: str
    description: str
    source: str
    """The file it comes from."""
    scope: ExtensionScope
    origin: ExtensionOrigin
    """Whose format: Cody's, Claude Code's, Codex's (its arguments are numbered as there)."""
    kind: Literal["command", "skill"] = "command"
    hint: str | None = None
    """What may follow the name (`argument-hint`)."""


class SkillInfo(WireModel):
    """A skill: its name, description and `SKILL.md` (the model reads the body when used)."""

    name: str
    description: str
    path: str
    scope: ExtensionScope
    origin: ExtensionOrigin
    model_invocable: bool = True
    """Listed for the model (false: `disable-model-invocation`, only the user runs it)."""
    user_invocable: bool = True
    """Offered as `/<name>` (false: `user-invocable: false`)."""


class HookInfo(WireModel):
    """A hook that runs in this session (an untrusted project's never do: see `warnings`)."""

    event: str
    command: str
    source: str
    scope: ExtensionScope
    timeout_sec: float
    matcher: str | None = None
    fail_closed: bool = False
    background: bool = Field(default=False, alias="async")
    """`async: true`: started and not waited for."""


class CodySessionResultMeta(WireModel):
    provider: str
    model: str
    backend: Backend = "native"
    """Whose agent loop runs the session: Cody's own (`native`), the Codex CLI or Claude Code."""
    session_file: str
    warnings: list[str] = Field(default_factory=list)
    """Configuration that was ignored, e.g. an untrusted project's `approval_policy`."""
    project_docs: list[ProjectDoc] = Field(default_factory=list)
    """The project instructions the model is given, global file first (native sessions;
    an agent CLI reads its own)."""
    commands: list[CustomCommandInfo] = Field(default_factory=list)
    """Custom commands runnable as `/<name>` (Cody's built-ins are not listed, nor skills,
    which `skills` lists with `userInvocable`; `available_commands_update` has them all)."""
    skills: list[SkillInfo] = Field(default_factory=list)
    disabled_skills: list[SkillInfo] = Field(default_factory=list)
    """Skills found but switched off by the configuration's `[[skills.config]]`: neither
    listed to the model nor runnable (shown so a user sees why one is missing)."""
    hooks: list[HookInfo] = Field(default_factory=list)
    parent_session_id: str | None = None
    """A child session (a subagent): the session whose `task` call started it."""
    worktree: WorktreeInfo | None = None
    """A worktree session: where it runs (its changes: `_cody/session/worktree`)."""


class SessionResultMeta(WireModel):
    cody: CodySessionResultMeta


class NewSessionResult(WireModel):
    session_id: str
    modes: SessionModeState
    config_options: list[SessionConfigOption]
    meta: SessionResultMeta | None = Field(default=None, alias="_meta")


class CodyLoadSessionMeta(WireModel):
    """`session/load` and `session/resume` `_meta.cody`."""

    relocate: bool = False
    """Continue the session in the request's `cwd` instead of the directory it was created
    in (e.g. that one no longer exists). The session's "allow for this session" grants are
    dropped when the directory differs; the file keeps the directory it was created in."""


class LoadSessionMeta(WireModel):
    cody: CodyLoadSessionMeta | None = None


class LoadSessionParams(WireModel):
    session_id: str
    cwd: str
    """Used only with `_meta.cody.relocate`: the session keeps its own directory otherwise."""
    mcp_servers: list[McpServer] = Field(default_factory=list)
    meta: LoadSessionMeta | None = Field(default=None, alias="_meta")

    _check_cwd = field_validator("cwd")(_absolute)

    @property
    def relocate(self) -> bool:
        return self.meta is not None and self.meta.cody is not None and self.meta.cody.relocate


class SessionStateResult(WireModel):
    """Result of `session/load` and `session/resume`."""

    modes: SessionModeState
    config_options: list[SessionConfigOption]
    meta: SessionResultMeta | None = Field(default=None, alias="_meta")


class ListSessionsParams(WireModel):
    cwd: str | None = None
    cursor: str | None = None

    _check_cwd = field_validator("cwd")(_no_nul)


class CodySessionInfoMeta(WireModel):
    """`session/list` entries' `_meta.cody`: where a fork came from, whose child it is."""

    forked_from: str | None = None
    """The session this one was forked from (`session/fork`), when it is a fork."""
    at_message: int | None = None
    """The fork's `atMessage` (None: the whole history was copied)."""
    parent_session_id: str | None = None
    """A child session (a subagent): the session whose `task` call started it."""


class ListedSessionMeta(WireModel):
    cody: CodySessionInfoMeta | None = None


class SessionInfo(WireModel):
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None
    meta: ListedSessionMeta | None = Field(default=None, alias="_meta")

    @property
    def forked_from(self) -> str | None:
        cody = self.meta.cody if self.meta is not None else None
        return cody.forked_from if cody is not None else None

    @property
    def parent_session_id(self) -> str | None:
        """A child session (a subagent): the session whose `task` call started it."""
        cody = self.meta.cody if self.meta is not None else None
        return cody.parent_session_id if cody is not None else None


class ListSessionsResult(WireModel):
    sessions: list[SessionInfo]
    next_cursor: str | None = None


class SessionIdParams(WireModel):
    session_id: str


CloseSessionParams = SessionIdParams
DeleteSessionParams = SessionIdParams


class SetModeParams(WireModel):
    session_id: str
    mode_id: str


class SetConfigOptionParams(WireModel):
    session_id: str
    config_id: str
    value: Any


class SetConfigOptionResult(WireModel):
    config_options: list[SessionConfigOption]


class ForkSessionParams(WireModel):
    session_id: str
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    at_message: int | None = None
    """Keep the history up to and including this user message (0-based); default all."""

    _check_cwd = field_validator("cwd")(_absolute)


class ForkSessionResult(NewSessionResult):
    pass
