"""The configuration schema: what `config.toml` (user or project) and session overrides may say.

Invariants:
- Every model forbids unknown keys (`extra="forbid"`) and is strict about types (a TOML string
  is never coerced to a number or a boolean), so a typo is an error that names the key.
- Literal-valued keys reuse the value sets in `cody_protocol.settings`; they are not redefined.
- Tables that may hold secrets (`http_headers`, MCP `env`) are excluded from reprs.
- Models are frozen; derive changed configs with `model_copy(update=...)` or by re-validating.
- Validation with the context `{"partial": True}` (`PARTIAL`) checks types and values of one layer
  but skips rules that only make sense for the merged result (an MCP server having exactly one
  of `command` / `url`), because a layer may override a single field of a table defined in a
  lower layer. Without that context every rule applies.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, Final

from cody_protocol.settings import (
    ApprovalPolicy,
    Backend,
    ReasoningEffort,
    ReasoningSummary,
    SandboxMode,
    SandboxUnavailable,
    WireApi,
)
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .provider_ids import AUTO, BUILTIN_PROVIDER_IDS

__all__ = [
    "BUILTIN_LSP_SERVERS",
    "BUILTIN_PROVIDER_IDS",
    "AgentsConfig",
    "PARTIAL",
    "CodyConfig",
    "LspConfig",
    "LspServerConfig",
    "McpServerConfig",
    "PermissionsConfig",
    "ProjectConfig",
    "ProviderConfig",
    "SandboxWorkspaceWrite",
    "SkillSelector",
    "SkillsConfig",
    "ToolConfig",
]

PARTIAL: Final[dict[str, bool]] = {"partial": True}
"""Validation context for a single layer (see the module docstring)."""


def _is_partial(info: ValidationInfo) -> bool:
    context = info.context
    return isinstance(context, dict) and bool(context.get("partial"))


class _ConfigModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, populate_by_name=True, defer_build=True
    )


def _check_url(value: str | None) -> str | None:
    """Reject a URL without an http(s) scheme (the providers and MCP clients need one)."""
    if value is not None and not value.startswith(("http://", "https://")):
        raise PydanticCustomError("url", "must be an http:// or https:// URL")
    return value


class ToolConfig(_ConfigModel):
    """`[tools.<name>]`: endpoint and key for a tool that calls a web service."""

    base_url: str | None = None
    env_key: str | None = None
    """Name of the environment variable holding the tool's API key."""
    timeout_s: float | None = Field(default=None, gt=0)
    enabled: bool = True
    allow_private: list[str] = Field(default_factory=list)
    """fetchUrl: private/loopback networks (IPs or CIDR) it may reach; public ones always."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _check_url(value)

    @field_validator("allow_private")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is not an IP address or CIDR network (e.g. 10.0.0.0/8)"
                ) from None
        return value


class ProviderConfig(_ConfigModel):
    """`[model_providers.<id>]`: a new provider, or overrides for a built-in one.

    For a built-in provider only the fields written in config replace the built-in values
    (the catalog reads `model_fields_set`), so `wire_api`'s default does not clobber
    `anthropic`'s wire format. A provider that is not built in must set `base_url`, and a
    model: `default_model`, `models`, or the top-level `model` (as a Codex config does); the
    loader checks that on the merged configuration. `env_key = ""` means the provider needs no
    API key (e.g. a local server). The keys and their meaning are Codex's
    (https://developers.openai.com/codex/config-reference), plus `default_model`, `models` and
    `request_retry_window_ms`.
    """

    name: str | None = None
    base_url: str | None = None
    wire_api: WireApi = "responses"
    env_key: str | None = None
    env_key_instructions: str | None = None
    """How to get a key (shown when it is missing), as in Codex."""
    http_headers: dict[str, str] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("http_headers", "headers"),
        repr=False,
    )
    """Extra request headers; may hold secrets, so never part of a repr."""
    env_http_headers: dict[str, str] = Field(default_factory=dict)
    """Header name -> environment variable holding its value (sent only when the variable is
    set and not empty), as in Codex."""
    query_params: dict[str, str] = Field(default_factory=dict)
    """Added to the query string of every request (e.g. Azure's `api-version`), as in Codex."""
    request_max_retries: int = Field(default=4, ge=0, le=20)
    """Retries of a request that failed before its stream started (HTTP error, no connection).
    Default as Codex (`DEFAULT_REQUEST_MAX_RETRIES`, github.com/openai/codex
    codex-rs/core/src/model_provider_info.rs, read 2026-11-22)."""
    stream_max_retries: int = Field(default=5, ge=0, le=20)
    """Retries of a stream that failed or dropped before the model produced any output.
    Default as Codex (`DEFAULT_STREAM_MAX_RETRIES`, same file)."""
    request_retry_window_ms: int = Field(default=60_000, gt=0)
    """Backoff is spread so the retries together wait at least this long (Cody's own key; a
    minute rides out the 5xx/529 bursts Codex (~24 s) and Claude Code (minutes) survive)."""
    stream_idle_timeout_ms: int = Field(default=300_000, gt=0)
    """How long to wait for the first event and between events before abandoning a stream.
    Default as Codex (`DEFAULT_STREAM_IDLE_TIMEOUT_MS`, same file)."""
    default_model: str | None = None
    models: list[str] = Field(default_factory=list)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _check_url(value)


class McpServerConfig(_ConfigModel):
    """`[mcp_servers.<name>]`: a stdio server (`command`) or a streamable-HTTP server (`url`).

    Exactly one of `command` / `url`; `args`, `env`, `cwd` belong to `command` and
    `http_headers`, `bearer_token_env_var` to `url`.
    """

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Extra environment for the server process; may hold secrets, so never part of a repr."""
    cwd: str | None = None
    url: str | None = None
    http_headers: dict[str, str] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("http_headers", "headers"),
        repr=False,
    )
    """Extra request headers; may hold secrets, so never part of a repr."""
    bearer_token_env_var: str | None = None
    startup_timeout_s: float = Field(
        default=10, gt=0, validation_alias=AliasChoices("startup_timeout_s", "startup_timeout_sec")
    )
    """`startup_timeout_sec` (Codex's name) is accepted too."""
    tool_timeout_s: float = Field(
        default=60, gt=0, validation_alias=AliasChoices("tool_timeout_s", "tool_timeout_sec")
    )
    """`tool_timeout_sec` (Codex's name) is accepted too."""
    requires_approval: bool | None = None
    """`true`: every tool of the server asks (its annotations are not consulted); `false`:
    none asks; unset: a tool the server annotates read-only (`readOnlyHint`, not
    `destructiveHint`) does not ask, the others do (docs/mcp.md "Approvals")."""
    trust_annotations: bool = True
    """`false`: the server's tool annotations are ignored (every tool asks unless
    `requires_approval = false`): for a server whose hints you do not trust."""
    env_vars: list[str] = Field(default_factory=list)
    """Names of variables passed from the daemon's environment to a stdio server (Codex's
    key); a name that is not set is left out."""
    enabled: bool = True

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _check_url(value)

    @model_validator(mode="after")
    def _one_transport(self, info: ValidationInfo) -> McpServerConfig:
        if _is_partial(info):
            return self
        if (self.command is None) == (self.url is None):
            raise PydanticCustomError(
                "mcp_transport",
                "set exactly one of `command` (a stdio server) or `url` (an HTTP server)",
            )
        fields = self.model_fields_set
        if self.command is not None:
            wrong = sorted(fields & {"http_headers", "bearer_token_env_var"})
            if wrong:
                raise PydanticCustomError(
                    "mcp_transport",
                    "{keys}: only for an HTTP server (`url`), not for a stdio server (`command`)",
                    {"keys": ", ".join(wrong)},
                )
        else:
            wrong = sorted(fields & {"args", "env", "cwd", "env_vars"})
            if wrong:
                raise PydanticCustomError(
                    "mcp_transport",
                    "{keys}: only for a stdio server (`command`), not for an HTTP server (`url`)",
                    {"keys": ", ".join(wrong)},
                )
        return self


def _absolute_paths(value: list[str]) -> list[str]:
    for entry in value:
        if not os.path.isabs(os.path.expanduser(entry)):
            raise PydanticCustomError(
                "absolute_path",
                '"{entry}" is not an absolute path (write the full path, or start with ~)',
                {"entry": entry},
            )
    return value


class PermissionsConfig(_ConfigModel):
    """`[permissions]` (and `[projects."<root>".permissions]`): rules in Claude Code's syntax
    with Cody's tool names (policy/rules.py); deny > ask > allow, checked before the policy.
    The rules' syntax is checked when a session starts (an error names the rule)."""

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class ProjectConfig(_ConfigModel):
    """`[projects."<root>"]`: what applies in one project (the user file only). Codex's
    `trust_level` there is dropped with a warning: Cody trusts `trusted_projects` only."""

    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)


class SandboxWorkspaceWrite(_ConfigModel):
    """`[sandbox_workspace_write]` (Codex's keys): what `workspace-write` adds."""

    network_access: bool = False
    """Sandboxed commands get the host's network (the network tools still ask)."""
    writable_roots: list[str] = Field(default_factory=list)
    """More directories sandboxed commands and file tools may write (absolute paths)."""

    @field_validator("writable_roots")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        return _absolute_paths(value)


class LspServerConfig(_ConfigModel):
    """`[lsp.<name>]`: a language server (or changes to the built-in one of that name).

    For a built-in server (`ruff`, `basedpyright`, `pyright`, `typescript`, `gopls`,
    `rust-analyzer`) only the keys written replace the built-in values; any other name must
    set `command` and `extensions`. Only a trusted project may set `command`, `env`,
    `init_options` or `settings` (config/loader.py).
    """

    command: list[str] | None = Field(default=None, min_length=1)
    """The server's argv (it must speak LSP on stdio)."""
    extensions: list[str] | None = None
    """File name endings the server is for (`.py`, `.pyi`)."""
    root_markers: list[str] | None = None
    """Files whose directory is the project root (`pyproject.toml`); the nearest one above
    the edited file wins, else the session's directory."""
    init_options: dict[str, Any] | None = None
    """`initializationOptions` of the `initialize` request."""
    settings: dict[str, Any] | None = None
    """What `workspace/configuration` answers (looked up by section, `python.analysis`)."""
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Extra environment for the server; may hold secrets, so never part of a repr."""
    enabled: bool = True

    @field_validator("extensions")
    @classmethod
    def _dotted(cls, value: list[str] | None) -> list[str] | None:
        for entry in value or ():
            if not entry.startswith(".") or len(entry) < 2 or "/" in entry:
                raise PydanticCustomError(
                    "lsp_extension",
                    '"{entry}" is not a file ending such as ".py"',
                    {"entry": entry},
                )
        return value


BUILTIN_LSP_SERVERS: Final[tuple[str, ...]] = (
    "ruff",
    "basedpyright",
    "pyright",
    "typescript",
    "gopls",
    "rust-analyzer",
)
"""The names of the built-in language servers (defined in lsp/specs.py)."""

LSP_SWITCHES: Final[frozenset[str]] = frozenset(
    {"enabled", "diagnostics_timeout_ms", "max_diagnostics", "restarts"}
)
"""The keys of `[lsp]` itself; every other key is a server table `[lsp.<name>]`."""


class LspConfig(_ConfigModel):
    """`[lsp]`: language servers for diagnostics after edits and the `symbols` tool.

    `[lsp] enabled = false` turns them all off; `[lsp.<name>]` tables add or change servers
    (`LspServerConfig`); every other key is a table of a server.
    """

    model_config = ConfigDict(extra="allow")

    enabled: bool = True
    diagnostics_timeout_ms: int = Field(default=1500, ge=0, le=60_000)
    """How long an edit waits, at most, for the servers' diagnostics (then the turn goes on)."""
    max_diagnostics: int = Field(default=20, ge=1, le=500)
    """At most this many new diagnostics are added to one tool result."""
    restarts: int = Field(default=3, ge=0, le=20)
    """How often a crashed server is started again before it is reported and left off."""
    __pydantic_extra__: dict[str, LspServerConfig] = Field(init=False)

    def servers(self) -> dict[str, LspServerConfig]:
        """The `[lsp.<name>]` tables, by name."""
        return dict(self.__pydantic_extra__ or {})


class AgentsConfig(_ConfigModel):
    """`[agents]`: subagents (child sessions a `task` call starts; docs/subagents.md).

    A Codex `config.toml` has an `[agents]` table too: its `max_threads` means
    `max_concurrent` here (used when `max_concurrent` is not set), and its role tables
    (`[agents.<name>]`) and other keys are ignored, so the file works unchanged.
    """

    model_config = ConfigDict(extra="allow")

    max_depth: int = Field(default=1, ge=0, le=4)
    """How deep child sessions may nest: 1 (the default) lets a session start children that
    start none; 0 turns the `task` tool off."""
    max_concurrent: int | None = Field(default=None, ge=1, le=32)
    """How many children of one session may run at once (`background` ones included);
    default 4."""
    max_threads: int | None = Field(default=None, ge=1, le=32)
    """Codex's name for `max_concurrent`."""
    timeout_s: float = Field(default=1800, gt=0)
    """Longest turn of a child before its `task` call fails (its turn is then cancelled)."""

    @property
    def concurrency(self) -> int:
        return self.max_concurrent or self.max_threads or 4


class SkillSelector(_ConfigModel):
    """One `[[skills.config]]` entry (Codex's keys): a skill, by `name` or by `path` (its
    `SKILL.md` or its folder, absolute), switched on or off. Later entries win for the same
    skill (extensions/skills.py `enabled_skills`)."""

    name: str | None = None
    path: str | None = None
    enabled: bool

    @field_validator("name")
    @classmethod
    def _some_name(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise PydanticCustomError("skill_name", "must not be empty")
        return value

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None:
            _absolute_paths([value])
        return value

    @model_validator(mode="after")
    def _one_selector(self) -> SkillSelector:
        if (self.name is None) == (self.path is None):
            raise PydanticCustomError(
                "skill_selector",
                "set exactly one of `name` (a skill's name) or `path` (its SKILL.md or folder)",
            )
        return self


class BundledSkills(_ConfigModel):
    """`[skills.bundled]`: Codex's switch for the skills it ships. Cody ships none: the key is
    accepted (a Codex file works unchanged) and has no effect."""

    enabled: bool = True


class SkillsConfig(_ConfigModel):
    """`[skills]` (Codex's table, docs/extensions.md "Skills"): which skills are off, and
    whether the model gets the list of skills at all. Only the user's config, a trusted
    project's or a session's may set it (config/loader.py `PROTECTED_KEYS`)."""

    include_instructions: bool = True
    """`false`: no skills item is sent to the model (skills still run as `/name`, `$name`)."""
    config: list[SkillSelector] = Field(default_factory=list)
    """`[[skills.config]]`: a disabled skill is not listed anywhere and cannot be run."""
    bundled: BundledSkills = Field(default_factory=BundledSkills)


class CodyConfig(_ConfigModel):
    """The whole configuration, with its defaults (README "Configuration").

    `model_reasoning_summary` also accepts booleans, as the seed CLI did (seed 002): `true`
    means `"concise"` summaries and `false` means `"none"` (disabled).
    `model_auto_compact_ratio` is accepted as an integer too (`1` = 100%).
    `trusted_projects` entries are absolute paths, or paths starting with `~`; only the user
    file's list is consulted when deciding whether a project file is trusted.
    """

    model: str | None = None
    model_provider: str = AUTO
    approval_policy: ApprovalPolicy = "on-request"
    sandbox_mode: SandboxMode = "workspace-write"
    model_reasoning_effort: ReasoningEffort | None = None
    model_reasoning_summary: ReasoningSummary | None = None
    """None: not configured (no summaries are requested on API keys; see PRODUCT docs)."""
    model_context_window: int | None = Field(default=None, gt=0)
    """Overrides the catalog's context window of the model (as in Codex)."""
    model_auto_compact_token_limit: int | None = Field(default=None, gt=0)
    """Compact when the next request would pass this many tokens (as in Codex); wins over
    `model_auto_compact_ratio`."""
    model_auto_compact_ratio: float = Field(default=0.9, gt=0, le=1)
    """Compact when the next request would pass this share of the context window (Cody's own
    key; Codex has only the absolute `model_auto_compact_token_limit`)."""
    tool_output_token_limit: int = Field(default=10_000, gt=0)
    """A tool output longer than this (in tokens, about 4 characters each) is cut in the
    middle before it is sent to the model. Codex's key and default (10,000 tokens; key listed
    in https://developers.openai.com/codex/config-reference, read 2026-11-22)."""
    project_doc_max_bytes: int = Field(default=32 * 1024, ge=0)
    """Cap on the project instructions (AGENTS.md files) sent to the model, their text joined;
    0 sends none (Codex's key and default, 32 KiB)."""
    project_doc_fallback_filenames: list[str] = Field(default_factory=lambda: ["CLAUDE.md"])
    """File names read in a directory without `AGENTS.override.md` or `AGENTS.md`, in order
    (Codex's key; Cody's default reads Claude Code's `CLAUDE.md`)."""
    max_tool_iterations: int = Field(default=100, ge=1)
    approval_timeout_s: float = Field(default=300, gt=0)
    sandbox_unavailable: SandboxUnavailable = "ask"
    backend: Backend = "native"
    """Whose agent loop runs new sessions: Cody's own, the Codex CLI or Claude Code."""
    backend_timeout_s: float = Field(default=3600, gt=0)
    """Longest turn of a `codex`/`claude` session; then it is interrupted and the CLI killed."""
    checkpoints: bool = True
    """A checkpoint of the workspace at every turn, so it can be rewound (docs/checkpoints.md)."""
    trusted_projects: list[str] = Field(default_factory=list)
    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    projects: dict[str, ProjectConfig] = Field(default_factory=dict)
    """`[projects."<root>"]`: per-project rules (the user file only; `allow_project` writes
    here)."""
    sandbox_workspace_write: SandboxWorkspaceWrite = Field(default_factory=SandboxWorkspaceWrite)
    notify: list[str] = Field(default_factory=list)
    """A program (and its arguments) the daemon runs, detached, when a turn ends or an approval
    waits, with a JSON payload as its last argument (Codex's key and payload;
    engine/notify.py). Only the user's config or a trusted project's may set it."""
    tools: dict[str, ToolConfig] = Field(default_factory=dict)
    model_providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    lsp: LspConfig = Field(default_factory=LspConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)

    @field_validator("model_reasoning_summary", mode="before")
    @classmethod
    def _summary_from_bool(cls, value: Any) -> Any:
        if value is True:
            return "concise"
        if value is False:
            return "none"
        return value

    @field_validator("project_doc_fallback_filenames")
    @classmethod
    def _plain_file_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or name in (".", "..") or "/" in name or "\0" in name:
                raise PydanticCustomError(
                    "file_name",
                    '"{name}" is not a file name (no directories: e.g. "CLAUDE.md")',
                    {"name": name},
                )
        return value

    @field_validator("notify")
    @classmethod
    def _notify_program(cls, value: list[str]) -> list[str]:
        if value and (not value[0].strip() or "\0" in "".join(value)):
            raise PydanticCustomError(
                "notify", 'the first entry is the program to run (e.g. ["notify-send", "Cody"])'
            )
        return value

    @field_validator("trusted_projects")
    @classmethod
    def _absolute_projects(cls, value: list[str]) -> list[str]:
        return _absolute_paths(value)

    @field_validator("projects")
    @classmethod
    def _absolute_project_keys(cls, value: dict[str, ProjectConfig]) -> dict[str, ProjectConfig]:
        _absolute_paths(list(value))
        return value
