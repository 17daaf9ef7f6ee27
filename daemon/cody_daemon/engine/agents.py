"""A session's agent CLI (codex/claude backends): making it, stopping it, describing it.

Invariants: a session has at most one live `AgentBackend` (`session.agent`), made at its
first prompt with the session's resume id; it is stopped (process tree killed) when the
session closes, is deleted, or the daemon shuts down. A session whose CLI is missing fails
`session/new` with -32602 saying how to install it, and a prompt with -32010 (kind
`provider`), so a stored session can still be loaded and replayed without the CLI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from cody_protocol.extensions import AgentInfo
from cody_protocol.prompt import DryRunReport
from cody_protocol.settings import Backend

from ..backends.base import AgentBackend
from ..backends.discovery import cli_version, find_cli, login_status, not_installed_message
from ..backends.info import KINDS, BackendKind, backend_info
from ..backends.select import make_backend
from ..core.tooling import ToolFacts
from ..errors import InvalidParams, Issue, ProviderError
from ..policy.allowlist import allowed_tools
from ..policy.secrets import SecretGuard
from ..providers.catalog import ProviderCatalog, ProviderSpec
from .backend_turn import backend_settings_of
from .session import Session

__all__ = [
    "missing_credentials_fix",
    "agent_for",
    "agents_list",
    "check_backend_installed",
    "dry_run_report",
    "stop_agent",
]


def missing_credentials_fix(
    catalog: ProviderCatalog, spec: ProviderSpec, env: Mapping[str, str]
) -> str:
    """What to do when `spec` has no credentials; a Claude login is pointed to Claude Code.

    A claude.ai subscription may only be used by Claude Code itself, so Cody's own loop never
    sends it; the `claude` backend is how a subscriber uses Cody (and it must be installed).
    """
    login = catalog.claude_login_file(spec)
    if login is None:
        return catalog.missing_credentials_fix(spec)
    text = (
        f"Your Claude login ({login}) can only be used by Claude Code itself, not by Cody's own "
        "agent loop: start the session with the `claude` backend (`cody-client --backend "
        'claude`, or `_meta.cody.backend = "claude"` in session/new), or set ANTHROPIC_API_KEY '
        "to use the API directly."
    )
    if not find_cli("claude", env).found:
        text += f" Claude Code is not installed: {backend_info('claude').install_hint}."
    return text


def check_backend_installed(backend: Backend, env: Mapping[str, str]) -> None:
    """InvalidParams (key `backend`) when a codex/claude session's CLI is not installed."""
    if backend == "native":
        return
    location = find_cli(backend, env)
    if not location.found:
        message = not_installed_message(backend, location)
        raise InvalidParams(
            message,
            [Issue(key="backend", message="not installed", value=backend, source="_meta.cody")],
        )


def agent_for(session: Session, env: Mapping[str, str], secrets: SecretGuard) -> AgentBackend:
    """The session's live agent (made now if needed); -32010 when its CLI is missing.

    `env` is the daemon's environment; the CLI gets it without the credentials `secrets`
    withholds (backends/env.py)."""
    kind = session.settings.backend
    assert kind != "native"
    agent = session.agent
    if agent is None or agent.kind != kind or agent.launch.cli is None:
        agent = make_backend(
            kind,
            cwd=session.cwd,
            env=env,
            resume_id=session.backend_resume_id,
            secrets=secrets,
        )
        session.agent = agent
    if agent.launch.cli is None:
        raise ProviderError(kind="provider", message=agent.launch.install_hint, provider=kind)
    return agent


async def stop_agent(session: Session) -> None:
    agent, session.agent = session.agent, None
    if agent is not None:
        await agent.stop()


def dry_run_report(
    session: Session,
    prompt: str,
    env: Mapping[str, str],
    secrets: SecretGuard,
    *,
    tool_facts: Mapping[str, ToolFacts],
    protected: tuple[Path, ...] = (),
) -> DryRunReport:
    """What a prompt would run (`tool_facts`: what Cody's tools can do, `ToolRegistry.facts()`;
    `protected`: Cody's own directories, as a turn gets them)."""
    settings = session.settings
    if settings.backend == "native":
        allowed = allowed_tools(settings.allowed_tools, settings.phase, tool_facts)
        return DryRunReport(
            backend="native",
            cwd=str(session.cwd),
            flags={
                "provider": settings.provider,
                "model": settings.model,
                "approvalPolicy": settings.approval_policy,
                "sandbox": settings.sandbox_mode,
            },
            allowed_tools=sorted(allowed) if allowed is not None else None,
        )
    agent = session.agent or make_backend(
        settings.backend,
        cwd=session.cwd,
        env=env,
        resume_id=session.backend_resume_id,
        secrets=secrets,
    )
    settings_now = backend_settings_of(
        session, tool_facts, protected=protected, hidden_files=secrets.sources.login_files
    )
    return agent.dry_run(prompt, settings_now)


async def agents_list(env: Mapping[str, str]) -> list[AgentInfo]:
    """Each backend CLI: found or not, where, its version, its login, and what to do."""

    async def one(kind: BackendKind) -> AgentInfo:
        info = backend_info(kind)
        location = find_cli(kind, env)
        login = login_status(kind, env)
        version = None
        if location.path is not None:
            version = await asyncio.to_thread(cli_version, location.path, env)
        if not location.found:
            hint = f"{location.problem}: {info.install_hint}"
        elif login.state == "missing":
            hint = f"no login found: {info.login_hint}"
        else:
            hint = None
        return AgentInfo(
            id=kind,
            name=info.display_name,
            found=location.found,
            path=str(location.path) if location.path is not None else None,
            found_via=location.via,
            version=version,
            login=login.state,
            login_source=login.source,
            hint=hint,
        )

    return list(await asyncio.gather(*(one(kind) for kind in KINDS)))
