"""`_cody/*` extension methods (docs/protocol.md "Extensions")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import WireModel
from .errors import RpcError

__all__ = [
    "AbsentTool",
    "CompactSessionParams",
    "CompactSessionResult",
    "AgentInfo",
    "AgentsListResult",
    "ConfigCheckResult",
    "ConfigFileInfo",
    "DiagnosticInfo",
    "DiagnosticsNotification",
    "LanguageServerInfo",
    "LanguageServersParams",
    "LanguageServersResult",
    "McpServerStatus",
    "McpStatusNotification",
    "ModelInfo",
    "ModelsListResult",
    "PermissionRuleInfo",
    "PermissionsListParams",
    "PermissionsListResult",
    "PermissionsRemoveParams",
    "PermissionsRemoveResult",
    "ProviderModels",
    "ToolInfo",
    "ToolsListParams",
    "ToolsListResult",
]


class ToolsListParams(WireModel):
    session_id: str | None = None


class ToolInfo(WireModel):
    name: str
    description: str
    requires_approval: bool
    json_schema: dict[str, Any] = Field(alias="schema")
    """The JSON schema of the tool's arguments, as advertised to the model."""


class McpServerStatus(WireModel):
    """One MCP server of a session: `starting`, `ready` (with its tool count) or `failed`."""

    server: str
    state: Literal["starting", "ready", "failed"]
    reason: str | None = None
    """Why it failed, in words a user can act on."""
    tools: int = 0


class McpStatusNotification(McpServerStatus):
    """`_cody/mcp/status`: sent for every state change of a session's MCP server."""

    session_id: str


class AbsentTool(WireModel):
    """A built-in tool that is not offered to the model here, and why."""

    name: str
    reason: str
    """In words a user can act on (e.g. which environment variable holds its key)."""


class ToolsListResult(WireModel):
    tools: list[ToolInfo]
    mcp_servers: list[McpServerStatus] = Field(default_factory=list)
    absent: list[AbsentTool] = Field(default_factory=list)
    """Tools that cannot work in this session (no API key, turned off, no running MCP
    server): the model is not offered them."""


class ModelInfo(WireModel):
    id: str
    context_window: int


class ProviderModels(WireModel):
    id: str
    name: str
    wire_api: str
    available: bool
    default_model: str
    models: list[ModelInfo]


class ModelsListResult(WireModel):
    providers: list[ProviderModels]


class CompactSessionParams(WireModel):
    """`_cody/session/compact {sessionId}`: summarise the conversation so far now."""

    session_id: str


class CompactSessionResult(WireModel):
    """What `_cody/session/compact` did. `compacted` is false when there was nothing to
    summarise (`reason` says why); the history in the session file is never shortened."""

    compacted: bool
    reason: str | None = None
    tokens_before: int = 0
    """Estimated tokens the model saw before (summary + recent items after, see below)."""
    tokens_after: int = 0
    summarized_items: int = 0
    kept_items: int = 0


class AgentInfo(WireModel):
    """One external agent CLI a session can use as its backend (`_cody/agents/list`)."""

    id: Literal["codex", "claude"]
    name: str
    found: bool
    path: str | None = None
    found_via: str | None = None
    """Where it was found: `CODEX_CLI_PATH`/`CLAUDE_CLI_PATH`, `PATH`, or the install dir."""
    version: str | None = None
    login: Literal["ok", "missing", "unknown"]
    """Whether a login or an API key the CLI can use was found."""
    login_source: str | None = None
    """Where that login comes from (a file or an env var name; never its value)."""
    hint: str | None = None
    """How to install it or log in, when something is missing."""


class AgentsListResult(WireModel):
    agents: list[AgentInfo]


class PermissionsListParams(WireModel):
    """`_cody/permissions/list {cwd?}`: the rules that apply in `cwd` (default: every rule of
    the user config, all projects, plus the read-only Codex and Claude Code files)."""

    cwd: str | None = None


class PermissionRuleInfo(WireModel):
    rule: str
    """As written: `exec(npm run test:*)`, `Bash(git diff:*)`, `mcp__github__delete_repo`."""
    decision: Literal["allow", "ask", "deny"]
    source: str
    """The file it comes from."""
    project: str | None = None
    """The project it is limited to (`[projects."<root>".permissions]`, a project's file)."""
    read_only: bool = False
    """From a file Cody only reads (Codex rules, Claude Code settings, a project's own
    config): `_cody/permissions/remove` cannot remove it."""


class PermissionsListResult(WireModel):
    rules: list[PermissionRuleInfo]
    warnings: list[str] = Field(default_factory=list)
    """Rules or files that were ignored, and why."""


class PermissionsRemoveParams(WireModel):
    """`_cody/permissions/remove`: remove one rule from the user config (as listed)."""

    rule: str
    decision: Literal["allow", "ask", "deny"]
    source: str
    project: str | None = None


class PermissionsRemoveResult(WireModel):
    removed: bool


class DiagnosticInfo(WireModel):
    """One problem a language server found (1-based lines and columns)."""

    line: int
    column: int
    end_line: int
    end_column: int
    severity: Literal["error", "warning", "information", "hint"]
    message: str
    code: str | None = None
    source: str | None = None
    """Who found it (`Ruff`, `basedpyright`)."""


class DiagnosticsNotification(WireModel):
    """`_cody/diagnostics`: what the language servers found new in a file a tool call
    changed (the same lines the model gets with the call's result). An empty `diagnostics`
    means nothing new; `late` names servers whose answer did not come in time."""

    session_id: str
    tool_call_id: str | None = None
    path: str
    diagnostics: list[DiagnosticInfo]
    servers: list[str] = Field(default_factory=list)
    """The servers that checked the file."""
    late: list[str] = Field(default_factory=list)


class LanguageServersParams(WireModel):
    """`_cody/lsp/servers {cwd?, start?}`: the language servers a session in `cwd` (default:
    the daemon's directory) would get; with `start`, each found one is started there,
    initialized and stopped again (what `cody-client doctor` shows)."""

    cwd: str | None = None
    start: bool = False


class LanguageServerInfo(WireModel):
    name: str
    command: list[str]
    extensions: list[str]
    path: str | None = None
    """Where its program was found (null: not found, never started)."""
    state: Literal["found", "not found", "started", "failed", "not started"]
    sandboxed: bool
    """It runs in the read-only sandbox (the project is not trusted)."""
    problem: str | None = None


class LanguageServersResult(WireModel):
    cwd: str
    enabled: bool
    """False when `[lsp] enabled = false` (or `CODY_LSP=off`) turns them all off."""
    servers: list[LanguageServerInfo]


class ConfigFileInfo(WireModel):
    """A config file `session/new` reads for the checked cwd."""

    path: str
    scope: Literal["user", "project"]
    exists: bool
    trusted: bool | None = None
    """The project file only: whether the user file lists the project in `trusted_projects`
    (if not, the keys a project may not set are ignored, with a warning)."""


class ConfigCheckResult(WireModel):
    """`_cody/config/check` (params as `session/new`): what `session/new` would say about the
    configuration, found by the same checks, with no session created.

    `ok` is false exactly when `session/new` would fail; `error` is then the JSON-RPC error it
    would answer (a -32602 naming each key, value, source file and the valid values).
    `warnings` are the `_meta.cody.warnings` it would report (e.g. an untrusted project's
    ignored keys)."""

    ok: bool
    files: list[ConfigFileInfo]
    warnings: list[str] = Field(default_factory=list)
    error: RpcError | None = None
