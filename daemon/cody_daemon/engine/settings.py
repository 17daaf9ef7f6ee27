"""A session's settings, its ACP config options and modes (docs/protocol.md "Sessions").

Persisted settings (written to `session_meta` and `config` events, restored on resume):
provider, model, approval policy, sandbox mode, reasoning effort and summary, allowed tools
and phase. The remaining knobs (iteration cap, approval timeout, sandbox_unavailable) are
read from the configuration files each time the session becomes live.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cody_protocol.session import (
    ConfigOptionValue,
    SessionConfigOption,
    SessionMode,
    SessionModeState,
)
from cody_protocol.settings import (
    APPROVAL_POLICIES,
    BACKENDS,
    REASONING_EFFORTS,
    REASONING_SUMMARIES,
    SANDBOX_MODES,
    ApprovalPolicy,
    Backend,
    Phase,
    ReasoningEffort,
    ReasoningSummary,
    SandboxMode,
    SandboxUnavailable,
)

from ..config.loader import HookTable
from ..config.model import AgentsConfig, LspConfig, McpServerConfig, SkillsConfig, ToolConfig
from ..errors import InvalidParams, Issue
from ..policy.rules import RuleSet

__all__ = [
    "BACKEND_DEFAULT_MODEL",
    "CONFIG_KEYS",
    "MODES",
    "SessionSettings",
    "apply_config_option",
    "apply_mode",
    "build_config_options",
    "build_modes",
    "mode_of",
]

CONFIG_KEYS: dict[str, str] = {  # `mode` is a preset over two of them (MODES)
    "provider": "model_provider",
    "model": "model",
    "approval_policy": "approval_policy",
    "sandbox_mode": "sandbox_mode",
    "reasoning_effort": "model_reasoning_effort",
    "reasoning_summary": "model_reasoning_summary",
}
"""configOption id -> config key (docs/protocol.md "Settings" table)."""

BACKEND_DEFAULT_MODEL = "default"
"""The `model` of a codex/claude session that uses the CLI's own default model."""

MODES: dict[str, tuple[str, str, ApprovalPolicy, SandboxMode]] = {
    "ask": (
        "Ask",
        "Ask before every edit and command but known-safe reads; writes allowed in the workspace",
        "untrusted",
        "workspace-write",
    ),
    "auto": (
        "Auto",
        "Work inside the sandbox without asking; ask to go outside it (network, other "
        "directories, running unsandboxed)",
        "on-request",
        "workspace-write",
    ),
    "read-only": (
        "Read only",
        "Read and run sandboxed commands without asking; ask before every change",
        "on-request",
        "read-only",
    ),
    "full-access": (
        "Full access",
        "Never ask; no sandbox. Only for trusted work",
        "never",
        "danger-full-access",
    ),
}
"""The modes offered to editors, in this order (docs/protocol.md "Settings"); `custom` is
listed as well only while it is the current combination."""

CUSTOM_MODE = "custom"


@dataclass(kw_only=True)
class SessionSettings:
    provider: str
    model: str
    approval_policy: ApprovalPolicy
    sandbox_mode: SandboxMode
    reasoning_effort: ReasoningEffort | None = None
    reasoning_summary: ReasoningSummary | None = None
    """None: not configured (shown as `default`)."""
    allowed_tools: list[str] | None = None
    phase: Phase | None = None
    max_tool_iterations: int = 100
    approval_timeout_s: float = 300.0
    sandbox_unavailable: SandboxUnavailable = "ask"
    backend: Backend = "native"
    """Whose agent loop runs the session (fixed once the session has a turn)."""
    backend_timeout_s: float = 3600.0
    checkpoints: bool = True
    """Snapshot the workspace at every turn (engine/checkpoints.py)."""
    project_trusted: bool = False
    """The workspace is in the user's trusted_projects (a backend CLI may read its settings)."""
    network_access: bool = False
    """`[sandbox_workspace_write] network_access` (not persisted: re-read on resume)."""
    writable_roots: list[str] = field(default_factory=list)
    """`[sandbox_workspace_write] writable_roots` (not persisted: re-read on resume)."""
    added_dirs: list[str] = field(default_factory=list)
    """More writable roots given for this session (`_meta.cody.writableRoots`, `--add-dir`:
    real paths of existing directories); persisted with the session."""
    rules: RuleSet = field(default_factory=RuleSet)
    """The permission rules that apply (policy/rule_sources.py; not persisted: re-read)."""
    tool_config: dict[str, ToolConfig] = field(default_factory=dict)
    mcp_config: dict[str, McpServerConfig] = field(default_factory=dict)
    """`[mcp_servers.<name>]` from the configuration (not persisted: re-read on resume)."""
    lsp_config: LspConfig = field(default_factory=LspConfig)
    """`[lsp]` from the configuration (not persisted: re-read on resume)."""
    """`[tools.<name>]` from the configuration (not persisted: re-read on resume)."""
    warnings: list[str] = field(default_factory=list)
    context_window: int | None = None
    """`model_context_window`: overrides the catalog's window (not persisted)."""
    auto_compact_token_limit: int | None = None
    """`model_auto_compact_token_limit` (not persisted)."""
    auto_compact_ratio: float = 0.9
    """`model_auto_compact_ratio` (not persisted)."""
    tool_output_token_limit: int = 10_000
    """`tool_output_token_limit` (not persisted)."""
    project_doc_max_bytes: int = 32 * 1024
    """`project_doc_max_bytes` (not persisted: read when project instructions are read)."""
    project_doc_fallbacks: tuple[str, ...] = ("CLAUDE.md",)
    """`project_doc_fallback_filenames` (not persisted)."""
    agents: AgentsConfig = field(default_factory=AgentsConfig)
    """`[agents]`: subagent limits (not persisted)."""
    skills: SkillsConfig = field(default_factory=SkillsConfig)
    """`[skills]`: skills switched off, whether the model gets their list (not persisted:
    re-read when the session becomes live)."""
    notify: tuple[str, ...] = ()
    """`notify`: the program run when a turn ends or an approval waits (not persisted;
    engine/notify.py)."""
    hook_tables: tuple[HookTable, ...] = ()
    """The `[hooks]` of the user and project config files (not persisted: read again when
    the session becomes live; extensions/discovery.py decides which run)."""

    def persisted(self) -> dict[str, Any]:
        """The settings written to the session file, keyed like config.toml."""
        return {
            "model_provider": self.provider,
            "model": self.model,
            "approval_policy": self.approval_policy,
            "sandbox_mode": self.sandbox_mode,
            "model_reasoning_effort": self.reasoning_effort,
            "model_reasoning_summary": self.reasoning_summary,
            "allowed_tools": self.allowed_tools,
            "phase": self.phase,
            "backend": self.backend,
            "writable_roots": list(self.added_dirs),
        }

    def copy(self) -> SessionSettings:
        return replace(
            self,
            allowed_tools=None if self.allowed_tools is None else list(self.allowed_tools),
            writable_roots=list(self.writable_roots),
            added_dirs=list(self.added_dirs),
            tool_config=dict(self.tool_config),
            mcp_config=dict(self.mcp_config),
        )


def mode_of(settings: SessionSettings) -> str:
    for mode_id, (_, _, policy, sandbox) in MODES.items():
        if settings.approval_policy == policy and settings.sandbox_mode == sandbox:
            return mode_id
    return CUSTOM_MODE


def build_modes(settings: SessionSettings) -> SessionModeState:
    current = mode_of(settings)
    modes = [
        SessionMode(id=mode_id, name=name, description=description)
        for mode_id, (name, description, _, _) in MODES.items()
    ]
    if current == CUSTOM_MODE:
        modes.append(
            SessionMode(
                id=CUSTOM_MODE,
                name="Custom",
                description=(
                    f"approval policy {settings.approval_policy}, sandbox {settings.sandbox_mode}"
                ),
            )
        )
    return SessionModeState(current_mode_id=current, available_modes=modes)


def _select(
    option_id: str,
    name: str,
    current: str,
    values: list[str],
    *,
    category: str | None = None,
    description: str | None = None,
) -> SessionConfigOption:
    if current not in values:
        values = [current, *values]
    return SessionConfigOption(
        id=option_id,
        name=name,
        description=description,
        category=category,
        current_value=current,
        options=[ConfigOptionValue(value=value, name=value) for value in values],
    )


def build_config_options(
    settings: SessionSettings, providers: list[str], models: list[str]
) -> list[SessionConfigOption]:
    """All config options with their current values (the current provider's models).

    Exactly one option per ACP category (schema `SessionConfigOptionCategory`): `model` is
    the model, `mode` the mode preset, `thought_level` the reasoning effort. Clients pick an
    option by its category (CodeCompanion's model picker takes the first `model` one), so
    every other option carries no category (the backend a `_`-prefixed one).

    A codex/claude session has no provider or reasoning summary of Cody's: its `model` is the
    CLI's (`default` = the CLI's own choice).
    """
    mode = mode_of(settings)
    backend = _select(
        "backend",
        "Agent",
        settings.backend,
        list(BACKENDS),
        category="_cody_backend",
        description="native: Cody's own loop; codex: the Codex CLI; claude: Claude Code",
    )
    mode_option = _select(
        "mode",
        "Mode",
        mode,
        list(MODES),
        category="mode",
        description="A preset of approval policy and sandbox (same as session/set_mode)",
    )
    effort = _select(
        "reasoning_effort",
        "Reasoning effort",
        settings.reasoning_effort or "default",
        ["default", *REASONING_EFFORTS],
        category="thought_level",
    )
    approval = _select(
        "approval_policy", "Approval policy", settings.approval_policy, list(APPROVAL_POLICIES)
    )
    sandbox = _select("sandbox_mode", "Sandbox", settings.sandbox_mode, list(SANDBOX_MODES))
    if settings.backend != "native":
        model = _select("model", "Model", settings.model, [BACKEND_DEFAULT_MODEL], category="model")
        return [model, mode_option, effort, approval, sandbox, backend]
    return [
        _select("model", "Model", settings.model, models, category="model"),
        mode_option,
        effort,
        _select("provider", "Provider", settings.provider, providers),
        approval,
        sandbox,
        _select(
            "reasoning_summary",
            "Reasoning summary",
            settings.reasoning_summary or "default",
            ["default", *REASONING_SUMMARIES],
        ),
        backend,
    ]


def _invalid(
    config_id: str, value: Any, valid: tuple[str, ...] | None, message: str
) -> InvalidParams:
    return InvalidParams(
        f"Invalid value {value!r} for config option {config_id}"
        + (f"; valid values: {', '.join(valid)}" if valid else f": {message}"),
        [Issue(key=config_id, message=message, value=value, valid=valid, source="params")],
    )


def apply_config_option(
    settings: SessionSettings, config_id: str, value: Any, *, providers: Mapping[str, str]
) -> SessionSettings:
    """A copy of `settings` with one config option changed (`providers`: id -> default model).

    Changing the provider resets the model to that provider's default. Raises InvalidParams
    naming the valid values.
    """
    if config_id == "mode":
        if value == CUSTOM_MODE and mode_of(settings) == CUSTOM_MODE:
            return settings.copy()  # the current mode: a no-op
        if not isinstance(value, str) or value not in MODES:
            raise _invalid(config_id, value, tuple(MODES), "unknown mode")
        return apply_mode(settings, value)
    changed = settings.copy()
    text = value if isinstance(value, str) else None
    choices: dict[str, tuple[str, ...]] = {
        "approval_policy": APPROVAL_POLICIES,
        "sandbox_mode": SANDBOX_MODES,
        "reasoning_effort": ("default", *REASONING_EFFORTS),
        "reasoning_summary": ("default", *REASONING_SUMMARIES),
        "provider": tuple(providers),
        "backend": BACKENDS,
    }
    if config_id == "model":
        if not text or not text.strip():
            raise _invalid(config_id, value, None, "a model name is required")
        changed.model = text.strip()
        return changed
    if config_id not in choices:
        valid = ("model", "mode", *choices)
        raise InvalidParams(
            f"Unknown config option {config_id!r}; valid ids: {', '.join(valid)}",
            [
                Issue(
                    key="configId",
                    message="unknown config option",
                    value=config_id,
                    valid=valid,
                    source="params",
                )
            ],
        )
    if text not in choices[config_id]:
        raise _invalid(config_id, value, choices[config_id], "invalid value")
    if config_id == "backend":
        changed.backend = text  # type: ignore[assignment]
        if text != settings.backend:
            changed.model = (
                BACKEND_DEFAULT_MODEL if text != "native" else providers[changed.provider]
            )
    elif config_id == "provider":
        changed.provider = text
        changed.model = providers[text]
    elif config_id == "approval_policy":
        changed.approval_policy = text  # type: ignore[assignment]
    elif config_id == "sandbox_mode":
        changed.sandbox_mode = text  # type: ignore[assignment]
    elif config_id == "reasoning_effort":
        changed.reasoning_effort = None if text == "default" else text  # type: ignore[assignment]
    else:
        changed.reasoning_summary = None if text == "default" else text  # type: ignore[assignment]
    return changed


def apply_mode(settings: SessionSettings, mode_id: str) -> SessionSettings:
    """A copy of `settings` with a mode preset's approval policy and sandbox mode (choosing
    `custom` while it is the current mode changes nothing)."""
    if mode_id == CUSTOM_MODE and mode_of(settings) == CUSTOM_MODE:
        return settings.copy()
    preset = MODES.get(mode_id)
    if preset is None:
        valid = tuple(MODES)
        raise InvalidParams(
            f"Unknown mode {mode_id!r}; valid modes: {', '.join(valid)}",
            [
                Issue(
                    key="modeId",
                    message="unknown mode",
                    value=mode_id,
                    valid=valid,
                    source="params",
                )
            ],
        )
    changed = settings.copy()
    changed.approval_policy, changed.sandbox_mode = preset[2], preset[3]
    return changed
