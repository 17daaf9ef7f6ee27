"""Making the backend of a session: find its CLI and build the `AgentBackend` for it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..policy.secrets import SecretGuard
from .base import AgentBackend, BackendKind, Launch
from .discovery import codex_provider_env_key, find_cli, not_installed_message
from .env import cli_credentials, cli_environment

__all__ = ["make_backend"]


def make_backend(
    kind: BackendKind,
    *,
    cwd: Path,
    env: Mapping[str, str],
    resume_id: str | None,
    secrets: SecretGuard,
) -> AgentBackend:
    """The backend for a session (its CLI looked up now; `launch.cli` is None when missing).

    `env` is the daemon's environment; the CLI gets `backends/env.py`'s `cli_environment` of
    it (credentials withheld by `secrets`, except the ones the CLI itself needs)."""
    location = find_cli(kind, env)
    key = codex_provider_env_key(env) if kind == "codex" else None
    own = cli_credentials(kind, env, key)
    launch = Launch(
        cli=location.path,
        cwd=cwd,
        env=cli_environment(kind, env, secrets, own_credentials=own),
        own_credentials=own,
        install_hint=not_installed_message(kind, location),
        resume_id=resume_id,
    )
    if kind == "codex":
        from .codex_app_server import CodexBackend

        return CodexBackend(launch)
    from .claude_code import ClaudeBackend

    return ClaudeBackend(launch)
