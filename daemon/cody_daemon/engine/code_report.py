"""`_cody/lsp/servers` (`cody-client doctor`): the language servers a session in a directory
would get, with that directory's configuration, trust and scrubbed environment."""

from __future__ import annotations

from pathlib import Path

from ..config.loader import load_effective_config
from ..core.code_intel import ServerReport
from ..providers.catalog import ProviderCatalog
from .deps import EngineDeps
from .secrets import secret_guard

__all__ = ["language_servers_report"]


async def language_servers_report(
    deps: EngineDeps, cwd: Path, *, start: bool
) -> tuple[bool, list[ServerReport]]:
    """(whether servers are on, the servers); raises `InvalidParams` for a bad config."""
    loaded = load_effective_config(cwd=cwd, paths=deps.paths)
    config = loaded.config
    if deps.code is None or deps.code.switched_off or not config.lsp.enabled:
        return False, []
    catalog = ProviderCatalog.from_config(
        config, env=deps.env, codex_home=deps.codex_home, claude_dir=deps.claude_dir
    )
    guard = secret_guard(
        env=deps.env,
        providers=catalog.all(),
        tool_config=config.tools,
        mcp_config=config.mcp_servers,
    )
    servers = await deps.code.report(
        cwd=cwd,
        config=config.lsp,
        trusted=loaded.project_trusted,
        env=guard.child_environment(deps.env),
        start=start,
    )
    return True, servers
