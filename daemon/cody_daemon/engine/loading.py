"""Creating sessions and making stored ones live again (config -> settings -> locked file).

Invariants: a stored session keeps its own settings (they override the config files); its
interrupted tool calls are closed in the file before it runs again; session grants and
rejections recorded in the file are restored, and so are its context items (the project
instructions and permissions it sent: engine/context_items.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cody_protocol.prompt import TokenUsage
from cody_protocol.session import CodySessionMeta, McpServer

from ..config.loader import LoadedConfig, deep_merge, load_effective_config
from ..config.provider_ids import AUTO
from ..core.history import FunctionCallOutputItem
from ..errors import InvalidParams, Issue
from ..ids import new_id
from ..policy.approval import Grants
from ..policy.rule_sources import RuleContext, RulesLoaded, load_rules
from ..providers.catalog import ProviderCatalog
from ..store.reader import read_session
from ..store.session_file import SessionFile
from ..tools.mcp import SESSION_TOOLS as MCP_SESSION_TOOLS
from ..tools.mcp.specs import McpServerSpec, McpSpecError, build_specs
from ..worktrees.worktree import WORKTREES_DIR, Worktree
from .compaction import Compaction
from .context_items import ContextEntry
from .deps import EngineDeps
from .session import Session
from .settings import BACKEND_DEFAULT_MODEL, SessionSettings
from .subagents.lineage import ChildTotals, Lineage
from .workdir import workdir_for

__all__ = [
    "META_TO_CONFIG",
    "SessionLoader",
    "added_dirs",
    "check_cwd",
    "mcp_specs",
    "offline_model_problem",
]

META_TO_CONFIG = {
    "provider": "model_provider",
    "model": "model",
    "approval_policy": "approval_policy",
    "sandbox_mode": "sandbox_mode",
    "reasoning_effort": "model_reasoning_effort",
    "reasoning_summary": "model_reasoning_summary",
    "backend": "backend",
}
"""`_meta.cody` field -> config key (docs/protocol.md "Settings" table)."""

_META_NAMES = {
    key: "_meta.cody."
    + "".join(part if i == 0 else part.capitalize() for i, part in enumerate(field.split("_")))
    for field, key in META_TO_CONFIG.items()
}
"""Config key -> the `_meta.cody` field a client sent it as (`_meta.cody.approvalPolicy`)."""


def check_cwd(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_dir():
        raise InvalidParams(
            f"cwd {cwd} is not an existing directory.",
            [Issue(key="cwd", message="not an existing directory", value=cwd, source="params")],
        )
    return path


def added_dirs(roots: list[str]) -> list[str]:
    """The real paths of `_meta.cody.writableRoots`; -32602 for one that is not an absolute
    path to an existing directory."""
    bad = [root for root in roots if not os.path.isabs(root) or not os.path.isdir(root)]
    if bad:
        raise InvalidParams(
            f"writableRoots must be absolute paths of existing directories: {', '.join(bad)}",
            [
                Issue(
                    key="_meta.cody.writableRoots",
                    message="not an absolute path to an existing directory",
                    value=root,
                    source="_meta.cody",
                )
                for root in bad
            ],
        )
    return list(dict.fromkeys(os.path.realpath(root) for root in roots))


def _refuse_session_rules(config: Mapping[str, Any]) -> None:
    """Permission rules live in files and are read again at each turn: a session layer
    (`_meta.cody.config`, `cody-client -c`) cannot hold them (-32602, not silently dropped)."""
    keys = [key for key in ("permissions", "projects") if key in config]
    if keys:
        raise InvalidParams(
            "permission rules cannot be set for one session: put them in config.toml "
            '([permissions], [projects."<root>".permissions])',
            [
                Issue(
                    key=f"_meta.cody.config.{key}",
                    message="permission rules are read from config.toml at each turn",
                    source="_meta.cody",
                )
                for key in keys
            ],
        )


def mcp_specs(
    settings: SessionSettings,
    servers: Sequence[McpServer],
    *,
    env: Mapping[str, str],
    cwd: Path,
) -> list[McpServerSpec]:
    """The session's MCP servers (config.toml's and the client's); InvalidParams when one
    cannot be built. Nothing is started."""
    try:
        return build_specs(settings.mcp_config, list(servers), env=env, cwd=str(cwd))
    except McpSpecError as exc:
        raise InvalidParams(
            str(exc), [Issue(key="mcpServers", message=str(exc), source="params")]
        ) from None


def offline_model_problem(
    model: str, catalog: ProviderCatalog, *, auto: bool, choose: str = "_meta.cody.provider"
) -> str:
    """A model asked of the offline provider: why it landed there and what would work (the
    generic advice, "add it to `models`", cannot apply: offline cannot be configured)."""
    owner = catalog.owner_of(model)
    if auto:
        text = (
            f"{model!r} needs a provider with credentials, and none has any: `auto` chose the "
            "built-in offline demo provider, whose only model is `offline`."
        )
        if owner is None:
            return text + (
                " Set the key of a provider that has it (see where each provider looks in "
                f"initialize's providers) and choose that provider ({choose})."
            )
        fix = catalog.missing_credentials_fix(owner, pick_another=False)
        return text + f" {model} is a model of {owner.name} ({owner.id}): {fix[0].lower()}{fix[1:]}"
    text = f"{model!r} is not a model of the built-in offline demo provider (only `offline` is)."
    if owner is None:
        return text
    return text + f" It is a model of {owner.name}: choose {owner.id} ({choose})."


class SessionLoader:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps

    def resolve(
        self, cwd: str, meta: CodySessionMeta | None
    ) -> tuple[Path, SessionSettings, ProviderCatalog]:
        """What `session/new` would run with, checked as it checks it (cwd, configuration,
        model, tool allowlist, backend installed); nothing is created. Raises InvalidParams."""
        cwd_path = check_cwd(cwd)
        named = {}
        if meta is not None:
            for field_name, key in META_TO_CONFIG.items():
                value = getattr(meta, field_name)
                if value is not None:
                    named[key] = value
        # `config` is a whole layer of config keys; the named fields above win over it.
        if meta is not None and meta.config:
            _refuse_session_rules(meta.config)
        overrides = deep_merge(meta.config or {}, named) if meta is not None else named
        settings, catalog = self.settings_for(cwd_path, overrides, "_meta.cody")
        if meta is not None:
            settings.allowed_tools = (
                list(meta.allowed_tools) if meta.allowed_tools is not None else None
            )
            settings.phase = meta.phase
            if meta.writable_roots:
                settings.added_dirs = added_dirs(meta.writable_roots)
        if settings.backend != "native":
            # The config file's `model` is the native provider's; a CLI gets only an explicit one.
            settings.model = (meta.model if meta is not None else None) or BACKEND_DEFAULT_MODEL
        self._check_allowlist(settings)
        if settings.backend != "native":
            from .agents import check_backend_installed  # the agents' table: CLI sessions only

            check_backend_installed(settings.backend, self.deps.env)
        return cwd_path, settings, catalog

    def create(
        self, cwd: str, meta: CodySessionMeta | None, header: Mapping[str, Any] | None = None
    ) -> tuple[Session, ProviderCatalog]:
        """A new session: config resolved for `cwd` and `meta`, file created and locked;
        `header`: more fields of its `session_meta` line (a child's `parent`, a worktree)."""
        cwd_path, settings, catalog = self.resolve(cwd, meta)
        created = datetime.now(UTC)
        session_id = new_id()
        handle = self.deps.store.create(session_id, created)
        try:
            handle.append(
                "session_meta",
                {
                    **(header or {}),  # never over the fields below
                    "id": session_id,
                    "cwd": str(cwd_path),
                    "created": created.isoformat().replace("+00:00", "Z"),
                    "cliVersion": self.deps.version,
                    "originator": "cody-daemon",
                    "settings": settings.persisted(),
                },
            )
        except BaseException:  # e.g. the disk is full: leave no headless file behind
            handle.close()
            handle.path.unlink(missing_ok=True)
            raise
        session = Session(
            id=session_id,
            cwd=cwd_path,
            created=created.isoformat(),
            settings=settings,
            file=handle,
            ephemeral=meta is not None and meta.ephemeral,
        )
        return session, catalog

    def settings_for(
        self, cwd: Path, overrides: dict[str, Any], source: str
    ) -> tuple[SessionSettings, ProviderCatalog]:
        loaded = load_effective_config(
            cwd=cwd,
            paths=self.deps.paths,
            session_overrides=overrides,
            session_overrides_source=source,
            session_overrides_names=_META_NAMES if source == "_meta.cody" else None,
        )
        config = loaded.config
        catalog = ProviderCatalog.from_config(
            config,
            env=self.deps.env,
            codex_home=self.deps.codex_home,
            claude_dir=self.deps.claude_dir,
        )
        spec = catalog.resolve(config.model_provider)
        warnings = list(loaded.warnings)
        model = config.model or spec.default_model
        # A codex/claude session's model is the CLI's to check (see create()).
        problem = spec.model_problem(model) if config.backend == "native" else None
        if problem is not None and "model" not in overrides and spec.wire_api == "offline":
            # `auto` fell back to offline (no credentials): the configured model is for another.
            warnings.append(f"model {model!r} from config.toml ignored: using the offline model")
            model, problem = spec.default_model, None
        if problem is not None:
            given = "model" in overrides
            if spec.wire_api == "offline":
                problem = offline_model_problem(model, catalog, auto=config.model_provider == AUTO)
            raise InvalidParams(
                problem,
                [
                    Issue(
                        key=f"{source}.model" if given else "model",
                        message="not a model of this provider",
                        value=model,
                        valid=spec.model_ids,
                        source=source if given else "config",
                    )
                ],
            )
        rules = self._rules(cwd, loaded)
        warnings += rules.warnings
        sandbox = config.sandbox_workspace_write
        settings = SessionSettings(
            provider=spec.id,
            model=model,
            approval_policy=config.approval_policy,
            sandbox_mode=config.sandbox_mode,
            reasoning_effort=config.model_reasoning_effort,
            reasoning_summary=config.model_reasoning_summary,
            max_tool_iterations=config.max_tool_iterations,
            approval_timeout_s=config.approval_timeout_s,
            sandbox_unavailable=config.sandbox_unavailable,
            backend=config.backend,
            backend_timeout_s=config.backend_timeout_s,
            checkpoints=config.checkpoints,
            project_trusted=loaded.project_trusted,
            network_access=sandbox.network_access,
            writable_roots=list(sandbox.writable_roots),
            rules=rules.rules,
            tool_config=dict(config.tools),
            mcp_config=dict(config.mcp_servers),
            lsp_config=config.lsp,
            warnings=warnings,
            context_window=config.model_context_window,
            auto_compact_token_limit=config.model_auto_compact_token_limit,
            auto_compact_ratio=config.model_auto_compact_ratio,
            tool_output_token_limit=config.tool_output_token_limit,
            project_doc_max_bytes=config.project_doc_max_bytes,
            project_doc_fallbacks=tuple(config.project_doc_fallback_filenames),
            agents=config.agents,
            skills=config.skills,
            notify=tuple(config.notify),
            hook_tables=tuple(loaded.hook_tables),
        )
        return settings, catalog

    def _rules(self, cwd: Path, loaded: LoadedConfig) -> RulesLoaded:
        home = self.deps.env.get("HOME") or os.path.expanduser("~")
        return load_rules(
            loaded.permissions,
            RuleContext(
                cwd=Path(os.path.realpath(cwd)),
                home=Path(home),
                codex_home=self.deps.codex_home,
                claude_dir=self.deps.claude_dir,
                project_trusted=loaded.project_trusted,
            ),
        )

    def current_rules(self, cwd: Path) -> RulesLoaded:
        """The rules as the files say now (re-read at each turn: a rule added by another
        session or by hand applies from the next turn). Raises InvalidParams."""
        return self._rules(cwd, load_effective_config(cwd=cwd, paths=self.deps.paths))

    def _check_allowlist(self, settings: SessionSettings) -> None:
        if settings.allowed_tools is None:
            return
        known = set(self.deps.tools.names())
        unknown = [
            name
            for name in settings.allowed_tools
            if name not in known and not name.startswith("mcp__") and name not in MCP_SESSION_TOOLS
        ]
        if unknown:
            raise InvalidParams(
                f"Unknown tool(s) in allowedTools: {', '.join(unknown)}.",
                [
                    Issue(
                        key="_meta.cody.allowedTools",
                        message="unknown tool",
                        value=name,
                        valid=tuple(sorted(known)),
                        source="_meta.cody",
                    )
                    for name in unknown
                ],
            )

    def open(
        self, session_id: str, relocate_to: str | None = None
    ) -> tuple[Session, ProviderCatalog]:
        """A stored session made live: locked, repaired (interrupted calls), settings restored.
        It runs in its own directory, or in `relocate_to` (engine/workdir.py)."""
        path = self.deps.store.find(session_id)
        record = read_session(path)
        persisted = dict(record.settings)
        workdir = workdir_for(
            record.session_id or session_id,
            record.cwd,
            relocate_to=relocate_to,
            backend=str(persisted.get("backend") or "native"),
        )
        cwd_path = workdir.path
        config_overrides = {
            key: persisted[key] for key in META_TO_CONFIG.values() if persisted.get(key) is not None
        }
        settings, catalog = self.settings_for(
            cwd_path, config_overrides, f"session file {path.name}"
        )
        if workdir.warning is not None:
            settings.warnings.append(workdir.warning)
        allowed = persisted.get("allowed_tools")
        settings.allowed_tools = list(allowed) if isinstance(allowed, list) else None
        phase = persisted.get("phase")
        settings.phase = phase if phase in ("research", "plan", "implement") else None
        roots = persisted.get("writable_roots")
        if isinstance(roots, list):
            settings.added_dirs = [
                os.path.realpath(root)
                for root in roots
                if isinstance(root, str) and os.path.isabs(root) and os.path.isdir(root)
            ]
        handle = SessionFile.open_existing(path)
        try:
            handle.ensure_newline()
            for item in record.items:
                if (
                    isinstance(item, FunctionCallOutputItem)
                    and item.call_id in record.interrupted_calls
                ):
                    handle.append("response_item", item.payload())
            if record.interrupted_calls:
                handle.append("event", {"kind": "interrupted", "callIds": record.interrupted_calls})
        except BaseException:
            handle.close()
            raise
        session = Session(
            id=record.session_id or session_id,
            cwd=cwd_path,
            created=record.created,
            settings=settings,
            file=handle,
            history=record.items,
            usage_total=TokenUsage.model_validate(record.usage_total or {}),
            cost_total_usd=record.cost_total_usd,
            title=record.title,
            grants=Grants(
                allowed=set() if workdir.moved else set(record.granted),
                rejected=set(record.rejected),
            ),
            compaction=Compaction.from_event(record.compaction),
            backend_resume_id=record.backend_resume_id,
            context_items=[
                entry for entry in map(ContextEntry.from_event, record.context) if entry
            ],
            checkpoints=record.checkpoints,
            lineage=Lineage.from_record(record.header.get("parent")),
            worktree=Worktree.from_record(
                record.header.get("worktree"), self.deps.paths.data_dir / WORKTREES_DIR
            ),
            children=ChildTotals.from_record(record.children),
        )
        if record.checkpoints.marks:  # rewound: a compaction may no longer apply
            from .rewind import forget_stale_compaction

            forget_stale_compaction(session)
        return session, catalog
