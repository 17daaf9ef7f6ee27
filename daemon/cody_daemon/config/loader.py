"""Load the effective configuration: defaults < user file < project file < session overrides.

Invariants:
- Each layer is validated on its own, so every `Issue` names the file (or `_meta.cody`) that
  supplied the bad value; then the layers are deep-merged (tables key by key, scalars and lists
  replace) and the result is validated as a whole (rules that span layers).
- All problems are collected and raised together as one `InvalidParams`; its message has one
  line per problem naming key, value, source and the valid values or keys. Values under
  `http_headers`/`env` tables and values of unknown keys are never echoed (they may be secrets).
- A missing file is an empty layer. Nothing is written or created.
- A project file (`<cwd>/.cody/config.toml`) may set the keys in `PROTECTED_KEYS` (and a tool's
  `base_url`/`env_key`, a language server's `command`/`env`/`init_options`/`settings`) only
  when `cwd` is listed in the *user* file's `trusted_projects` (compared as resolved real
  paths). Otherwise those keys are dropped with a warning (a server table of its own with a
  `command`, whole). A project file cannot trust itself: its own `trusted_projects` is always
  ignored with a warning.
- An untrusted project may not switch `model_provider` to another of the user's providers
  either: the provider decides where prompts (and the code they quote) are sent and which of
  the user's accounts pays. A `model_provider` that differs from the user file's (default
  `auto`) is dropped with the same warning, together with the project's `model` (a model
  name chosen for that provider would be wrong for the user's).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from ..core.safe_read import CONFIG_FILE_LIMIT, read_regular
from ..errors import InvalidParams, Issue
from ..validation import issues_from_validation_error
from .model import BUILTIN_LSP_SERVERS, PARTIAL, CodyConfig, PermissionsConfig
from .paths import PROJECT_CONFIG, CodyPaths
from .provider_ids import AUTO, BUILTIN_PROVIDER_IDS

__all__ = [
    "PROTECTED_KEYS",
    "PROTECTED_LSP_KEYS",
    "PROTECTED_TOOL_KEYS",
    "HookTable",
    "LoadedConfig",
    "PermissionLayer",
    "user_permission_layers",
    "deep_merge",
    "load_effective_config",
    "load_user_config",
    "project_trusted",
]

PROTECTED_KEYS: Final[tuple[str, ...]] = (
    "approval_policy",
    "sandbox_mode",
    "sandbox_unavailable",
    "mcp_servers",
    "model_providers",
    "backend",
    "project_doc_max_bytes",
    "project_doc_fallback_filenames",
    "permissions",
    "sandbox_workspace_write",
    "notify",
    "checkpoints",
    "agents",
    "skills",
)
"""Top-level keys an untrusted project file may not set: they run code (`backend` starts an
external agent CLI, `notify` a program of the daemon's own, outside the sandbox), lift the
sandbox or the approvals (`permissions` rules, network and writable roots), decide where
prompts and API keys are sent, decide which files reach the model as instructions (a
repository must not pick files to send, nor silence the user's global instructions), take
away the user's undo (`checkpoints`), or set how many subagents a turn may start (`agents`: a
repository must not multiply the user's model calls), or switch the user's skills on or off
(`skills`: as in Codex, whose skill rules come from the user's and the session's layers)."""

PROTECTED_TOOL_KEYS: Final[tuple[str, ...]] = ("base_url", "env_key", "allow_private")
"""Keys of `[tools.<name>]` an untrusted project may not set (they could send a key elsewhere,
or let the model reach the user's own network)."""

PROTECTED_LSP_KEYS: Final[tuple[str, ...]] = ("command", "env", "init_options", "settings")
"""Keys of `[lsp.<name>]` an untrusted project may not set: they choose the program that runs
(and what it runs: an interpreter path in `settings`). It may still switch servers off."""

CODEX_ONLY_KEYS: Final[frozenset[str]] = frozenset(
    {
        "review_model",
        "model_verbosity",
        "model_supports_reasoning_summaries",
        "model_reasoning_summary_format",
        "model_catalog_json",
        "personality",
        "model_personality",
        "shell_environment_policy",
        "instructions",
        "developer_instructions",
        "base_instructions",
        "experimental_instructions_file",
        "compact_prompt",
        "profile",
        "profiles",
        "history",
        "file_opener",
        "tui",
        "hide_agent_reasoning",
        "show_raw_agent_reasoning",
        "disable_response_storage",
        "chatgpt_base_url",
        "features",
        "preferred_auth_method",
        "forced_login_method",
        "forced_chatgpt_workspace_id",
        "cli_auth_credentials_store",
        "mcp_oauth_credentials_store",
        "otel",
        "analytics",
        "feedback",
        "windows_wsl_setup_acknowledged",
        "check_for_update_on_startup",
        "web_search",
        "oss_provider",
        "notice",
        "include_apply_patch_tool",
        "zsh_path",
        "approvals_reviewer",
        "plugins",
        "apps",
        "memories",
        "ghost_snapshot",
    }
)
"""Top-level keys of a Codex `config.toml` (https://developers.openai.com/codex/config-reference,
read 2026-11-22) that Cody has no use for: they are ignored with a warning, so a Codex user's
file works unchanged, while a misspelt Cody key is still an error."""

CODEX_ONLY_SANDBOX_KEYS: Final[frozenset[str]] = frozenset(
    {"exclude_tmpdir_env_var", "exclude_slash_tmp"}
)
"""`[sandbox_workspace_write]` keys of Codex that Cody ignores (with a warning): Cody's temp
dir is always writable under `workspace-write`."""

CODEX_ONLY_PROVIDER_KEYS: Final[frozenset[str]] = frozenset(
    {"requires_openai_auth", "supports_websockets", "websocket_connect_timeout_ms"}
)
"""`[model_providers.<id>]` keys of Codex that Cody ignores (with a warning)."""

_SECRET_TABLES: Final[frozenset[str]] = frozenset({"http_headers", "headers", "env"})
_UNKNOWN_KEY: Final = "unknown key"
_MAX_VALUE_CHARS: Final = 80
_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True, slots=True)
class HookTable:
    """The `[hooks]` table of one config file, kept out of the merge: every file's hooks run
    (a project's only when it is trusted), each named with its file (extensions/discovery.py
    reads and checks them; this loader only sets them aside)."""

    source: str
    table: Any
    project: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionLayer:
    """The `[permissions]` of one config file (rules keep their file: listing, audit)."""

    source: str
    permissions: PermissionsConfig
    project: str | None = None
    """The real path of the project the rules are limited to (`[projects."<root>"]`, or the
    project's own file); None: everywhere."""
    key: str | None = None
    """The `[projects."<key>"]` as written in the file (for removing a rule)."""
    writable: bool = False
    """The user file: Cody may add and remove its rules."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedConfig:
    """The merged configuration, plus what the user should know about how it was made."""

    config: CodyConfig
    warnings: list[str] = field(default_factory=list)
    """Human-readable notes (e.g. keys ignored from an untrusted project file)."""
    sources: list[str] = field(default_factory=list)
    """The config files that were read, lowest precedence first."""
    project_trusted: bool = False
    """`cwd` is listed in the user file's `trusted_projects`."""
    hook_tables: list[HookTable] = field(default_factory=list)
    """The `[hooks]` of the user file and of the project file, in that order."""
    permissions: list[PermissionLayer] = field(default_factory=list)
    """The rules of each file that applies in `cwd`, in load order (policy/rule_sources.py)."""


@dataclass(slots=True)
class _Layer:
    source: str
    data: dict[str, Any]
    """Canonical form: field names (not aliases), only the keys the layer set."""


@dataclass(slots=True)
class _Problem:
    issue: Issue
    text: str


@dataclass(slots=True)
class _Loader:
    """Collects layers, warnings and problems for one load."""

    layers: list[_Layer] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    problems: list[_Problem] = field(default_factory=list)
    hook_tables: list[HookTable] = field(default_factory=list)
    names: dict[str, Mapping[str, str]] = field(default_factory=dict)
    """source -> config key -> the name its caller used (`_meta.cody.provider`)."""

    def read_file(self, path: Path) -> dict[str, Any] | None:
        """The parsed TOML table, or None when the file is missing or unreadable."""
        try:
            raw = read_regular(path, CONFIG_FILE_LIMIT)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self._file_problem(path, f"cannot read the file: {reason}")
            return None
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            self._file_problem(path, "the file is not UTF-8 text")
            return None
        except tomllib.TOMLDecodeError as exc:
            detail = _TOML_POSITION.sub("", str(exc)).strip()
            position = _toml_position(exc)
            self._file_problem(
                path,
                f"TOML syntax error{position}: {detail}",
                f"{path} is not valid TOML{position}: {detail}",
            )
            return None
        self.sources.append(str(path))
        return data

    def add_layer(
        self, data: Mapping[str, Any], source: str, *, project: bool = False
    ) -> CodyConfig | None:
        """Validate one layer on its own; keep its canonical form when it is valid. Its
        `[hooks]` are set aside (`hook_tables`), never merged."""
        data = _without_codex_only_keys(data, source, self.warnings)
        if "hooks" in data:
            self.hook_tables.append(HookTable(source, data.pop("hooks"), project))
        try:
            partial = CodyConfig.model_validate(dict(data), context=PARTIAL)
        except ValidationError as exc:
            for issue in issues_from_validation_error(exc, CodyConfig, source=source):
                self.add_issue(issue)
            return None
        self.layers.append(_Layer(source, partial.model_dump(exclude_unset=True)))
        return partial

    def add_issue(self, issue: Issue) -> None:
        issue = _sanitize(issue)
        name = self.names.get(issue.source or "", {}).get(issue.key)
        self.problems.append(_Problem(issue, _describe(issue, name)))

    def merge(self) -> CodyConfig | None:
        """Validate the merged layers as a whole; None (with problems recorded) if invalid."""
        merged: dict[str, Any] = {}
        for layer in self.layers:
            merged = deep_merge(merged, layer.data)
        try:
            config = CodyConfig.model_validate(merged)
        except ValidationError as exc:
            for issue in issues_from_validation_error(exc, CodyConfig):
                self.add_issue(_with_source(issue, self._source_of(issue.key.split(".")[:2])))
            return None
        for issue in self._cross_checks(config):
            self.add_issue(issue)
        return None if self.problems else config

    def raise_if_problems(self) -> None:
        if not self.problems:
            return
        message = "\n".join(f"invalid configuration: {p.text}" for p in self.problems)
        raise InvalidParams(message, [p.issue for p in self.problems])

    def _cross_checks(self, config: CodyConfig) -> list[Issue]:
        issues: list[Issue] = []
        for pid, provider in config.model_providers.items():
            prefix = f"model_providers.{pid}"
            source = self._source_of(["model_providers", pid])
            if pid == "offline":
                issues.append(
                    Issue(
                        key=prefix,
                        message="the built-in offline provider cannot be configured",
                        source=source,
                    )
                )
                continue
            if pid in BUILTIN_PROVIDER_IDS:
                continue
            if provider.base_url is None:
                issues.append(
                    Issue(
                        key=f"{prefix}.base_url",
                        message="required for a provider that is not built in "
                        f"(built in: {', '.join(BUILTIN_PROVIDER_IDS)})",
                        source=source,
                    )
                )
            if provider.default_model is None and not provider.models and config.model is None:
                issues.append(
                    Issue(
                        key=f"{prefix}.default_model",
                        message="required for a provider that is not built in (or list "
                        "`models`, or set the top-level `model`)",
                        source=source,
                    )
                )
        for name, server in config.lsp.servers().items():
            if name in BUILTIN_LSP_SERVERS or not server.enabled:
                continue
            missing = [k for k in ("command", "extensions") if getattr(server, k) is None]
            if missing:
                issues.append(
                    Issue(
                        key=f"lsp.{name}.{missing[0]}",
                        message="required for a language server that is not built in "
                        f"(built in: {', '.join(BUILTIN_LSP_SERVERS)})",
                        source=self._source_of(["lsp", name]),
                    )
                )
        known = (AUTO, *BUILTIN_PROVIDER_IDS, *config.model_providers)
        if config.model_provider not in known:
            issues.append(
                Issue(
                    key="model_provider",
                    message="unknown provider",
                    value=config.model_provider,
                    valid=tuple(dict.fromkeys(known)),
                    source=self._source_of(["model_provider"]),
                )
            )
        return issues

    def _source_of(self, path: list[str]) -> str | None:
        """The highest-precedence layer that set `path` (a key prefix), if any."""
        for layer in reversed(self.layers):
            node: Any = layer.data
            for part in path:
                if not isinstance(node, dict) or part not in node:
                    break
                node = node[part]
            else:
                return layer.source
        return None

    def _file_problem(self, path: Path, message: str, text: str | None = None) -> None:
        issue = Issue(key="config", message=message, source=str(path))
        self.problems.append(_Problem(issue, text or f"{path}: {message}"))


def load_effective_config(
    *,
    cwd: Path,
    paths: CodyPaths,
    session_overrides: Mapping[str, Any] | None = None,
    session_overrides_source: str = "_meta.cody",
    session_overrides_names: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Merge defaults < user file < `<cwd>/.cody/config.toml` < `session_overrides`.

    `session_overrides` uses config keys (`{"approval_policy": "never"}`), already translated
    from wire names by the caller; `session_overrides_names` gives those names back
    (`{"model_provider": "_meta.cody.provider"}`) so a message names what the caller sent.
    Raises `InvalidParams` listing every problem.
    """
    loader = _Loader()
    if session_overrides_names:
        loader.names[session_overrides_source] = session_overrides_names
    trusted: list[str] = []
    permissions: list[PermissionLayer] = []
    user_provider = CodyConfig.model_fields["model_provider"].default
    user_data = loader.read_file(paths.config_file)
    if user_data is not None:
        user = loader.add_layer(user_data, str(paths.config_file))
        if user is not None:
            trusted = list(user.trusted_projects)
            user_provider = user.model_provider
            permissions += user_permission_layers(user, str(paths.config_file), cwd=cwd)

    project_file = cwd / PROJECT_CONFIG
    if not _same_file(project_file, paths.config_file):
        project_data = loader.read_file(project_file)
        if project_data is not None:
            kept = _apply_trust(
                project_data,
                project_file=project_file,
                cwd=cwd,
                trusted=trusted,
                user_provider=user_provider,
                paths=paths,
                warnings=loader.warnings,
            )
            project = loader.add_layer(kept, str(project_file), project=True)
            if project is not None and "permissions" in project.model_fields_set:
                permissions.append(
                    PermissionLayer(
                        source=str(project_file),
                        permissions=project.permissions,
                        project=_real(cwd),
                    )
                )

    if session_overrides:
        loader.add_layer(session_overrides, session_overrides_source)

    loader.raise_if_problems()
    config = loader.merge()
    loader.raise_if_problems()
    assert config is not None
    return LoadedConfig(
        config=config,
        warnings=loader.warnings,
        sources=loader.sources,
        project_trusted=_is_trusted(cwd, trusted),
        hook_tables=loader.hook_tables,
        permissions=permissions,
    )


def user_permission_layers(
    user: CodyConfig, source: str, *, cwd: Path | None
) -> list[PermissionLayer]:
    """The user file's `[permissions]` and its `[projects."<root>".permissions]` tables (only
    those of projects that hold `cwd`; all of them when `cwd` is None)."""
    layers = [PermissionLayer(source=source, permissions=user.permissions, writable=True)]
    here = _real(cwd) if cwd is not None else None
    for key, project in user.projects.items():
        root = _real(Path(key))
        if here is None or here == root or here.startswith(root.rstrip("/") + "/"):
            layers.append(
                PermissionLayer(
                    source=source,
                    permissions=project.permissions,
                    project=root,
                    key=key,
                    writable=True,
                )
            )
    return layers


def load_user_config(paths: CodyPaths) -> CodyConfig:
    """Defaults < user file only (for daemon-level needs such as listing providers)."""
    loader = _Loader()
    data = loader.read_file(paths.config_file)
    if data is not None:
        loader.add_layer(data, str(paths.config_file))
    loader.raise_if_problems()
    config = loader.merge()
    loader.raise_if_problems()
    assert config is not None
    return config


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: tables (mappings) merge key by key, anything else in `over` replaces."""
    merged = dict(base)
    for key, value in over.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def _without_codex_only_keys(
    data: Mapping[str, Any], source: str, warnings: list[str]
) -> dict[str, Any]:
    """`data` without the Codex keys Cody ignores (see `CODEX_ONLY_KEYS`); one warning names
    what was dropped. Codex's boolean tool switches (`[tools] web_search = true`) are dropped
    too: Cody's `[tools.<name>]` entries are tables."""
    kept = dict(data)
    dropped = sorted(key for key in kept if key in CODEX_ONLY_KEYS)
    for key in dropped:
        del kept[key]
    providers = kept.get("model_providers")
    if isinstance(providers, dict):
        cleaned: dict[str, Any] = {}
        for pid, table in providers.items():
            if not isinstance(table, dict):
                cleaned[pid] = table
                continue
            extra = sorted(k for k in table if k in CODEX_ONLY_PROVIDER_KEYS)
            dropped.extend(f"model_providers.{pid}.{k}" for k in extra)
            cleaned[pid] = {k: v for k, v in table.items() if k not in CODEX_ONLY_PROVIDER_KEYS}
        kept["model_providers"] = cleaned
    projects = kept.get("projects")
    if isinstance(projects, dict):
        trimmed: dict[str, Any] = {}
        for root, table in projects.items():
            if isinstance(table, dict) and "trust_level" in table:
                dropped.append(f"projects.{root}.trust_level")
                trimmed[root] = {k: v for k, v in table.items() if k != "trust_level"}
            else:
                trimmed[root] = table
        kept["projects"] = trimmed
    sandbox = kept.get("sandbox_workspace_write")
    if isinstance(sandbox, dict):
        extra = sorted(k for k in sandbox if k in CODEX_ONLY_SANDBOX_KEYS)
        dropped.extend(f"sandbox_workspace_write.{k}" for k in extra)
        kept["sandbox_workspace_write"] = {
            k: v for k, v in sandbox.items() if k not in CODEX_ONLY_SANDBOX_KEYS
        }
    tools = kept.get("tools")
    if isinstance(tools, dict):
        switches = sorted(name for name, value in tools.items() if isinstance(value, bool))
        dropped.extend(f"tools.{name}" for name in switches)
        kept["tools"] = {k: v for k, v in tools.items() if k not in switches}
    if dropped:
        warnings.append(
            f"ignored Codex settings Cody does not use in {source}: {', '.join(dropped)}"
        )
    return kept


def _apply_trust(
    data: dict[str, Any],
    *,
    project_file: Path,
    cwd: Path,
    trusted: list[str],
    user_provider: str,
    paths: CodyPaths,
    warnings: list[str],
) -> dict[str, Any]:
    """The project layer minus what it may not set; warnings say what was dropped and why."""
    kept = dict(data)
    if "trusted_projects" in kept:
        del kept["trusted_projects"]
        warnings.append(
            f"ignored trusted_projects from {project_file}: only the user config "
            f"({paths.config_file}) can trust projects"
        )
    if "projects" in kept:
        del kept["projects"]
        warnings.append(
            f"ignored projects from {project_file}: rules for a project go in its own "
            f"[permissions] table, or in [projects] of the user config ({paths.config_file})"
        )
    if _is_trusted(cwd, trusted):
        return kept
    ignored = [key for key in PROTECTED_KEYS if key in kept]
    if kept.get("model_provider", user_provider) != user_provider:
        ignored += [key for key in ("model_provider", "model") if key in kept]
    for key in ignored:
        del kept[key]
    tools = kept.get("tools")
    if isinstance(tools, dict):
        kept_tools: dict[str, Any] = {}
        for name, table in tools.items():
            if isinstance(table, dict):
                dropped = [k for k in PROTECTED_TOOL_KEYS if k in table]
                ignored.extend(f"tools.{name}.{k}" for k in dropped)
                kept_tools[name] = {k: v for k, v in table.items() if k not in dropped}
            else:
                kept_tools[name] = table
        kept["tools"] = kept_tools
    servers = kept.get("lsp")
    if isinstance(servers, dict):
        kept_servers: dict[str, Any] = {}
        for name, table in servers.items():
            if isinstance(table, dict) and "command" in table and name not in BUILTIN_LSP_SERVERS:
                ignored.append(f"lsp.{name}")  # a server of its own: nothing of it is kept
            elif isinstance(table, dict):
                dropped = [k for k in PROTECTED_LSP_KEYS if k in table]
                ignored.extend(f"lsp.{name}.{k}" for k in dropped)
                kept_servers[name] = {k: v for k, v in table.items() if k not in dropped}
            else:
                kept_servers[name] = table
        kept["lsp"] = kept_servers
    if ignored:
        warnings.append(
            f"ignored {', '.join(ignored)} from {project_file}: this project is not trusted. "
            f'To trust it, add "{_real(cwd)}" to trusted_projects in {paths.config_file}.'
        )
    return kept


def project_trusted(paths: CodyPaths, cwd: Path) -> bool:
    """Whether the user's config lists `cwd` in `trusted_projects` (False when it is invalid)."""
    try:
        trusted = load_user_config(paths).trusted_projects
    except InvalidParams:
        return False
    return _is_trusted(cwd, list(trusted))


def _is_trusted(cwd: Path, trusted: list[str]) -> bool:
    here = _real(cwd)
    return any(_real(Path(entry)) == here for entry in trusted)


def _real(path: Path) -> str:
    return os.path.realpath(os.path.expanduser(path))


def _same_file(a: Path, b: Path) -> bool:
    return _real(a) == _real(b)


def _toml_position(exc: tomllib.TOMLDecodeError) -> str:
    match = _TOML_POSITION.search(str(exc))
    return f" at line {match.group(1)}, column {match.group(2)}" if match else ""


def _with_source(issue: Issue, source: str | None) -> Issue:
    return Issue(
        key=issue.key, message=issue.message, value=issue.value, valid=issue.valid, source=source
    )


def _sanitize(issue: Issue) -> Issue:
    """Drop values that may be secrets or are not worth echoing (tables, unknown keys)."""
    parts = issue.key.split(".")
    hide = (
        issue.message == _UNKNOWN_KEY
        or isinstance(issue.value, dict)
        or any(part in _SECRET_TABLES for part in parts)
    )
    if not hide:
        return issue
    return Issue(key=issue.key, message=issue.message, valid=issue.valid, source=issue.source)


def _describe(issue: Issue, name: str | None = None) -> str:
    """`key = value in source: message; valid values: ...` (parts omitted when unknown);
    `name = value: ...` when the caller named the key itself (`_meta.cody.provider`)."""
    where = f" in {issue.source}" if issue.source and name is None else ""
    if issue.message == _UNKNOWN_KEY:
        text = f"unknown key {issue.key}{where}"
        return text + (f"; valid keys: {', '.join(map(str, issue.valid))}" if issue.valid else "")
    value = "" if issue.value is None else f" = {_render(issue.value)}"
    text = f"{name or issue.key}{value}{where}"
    if issue.valid:
        return text + f"; valid values: {', '.join(map(str, issue.valid))}"
    return f"{text}: {issue.message}"


def _render(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text
