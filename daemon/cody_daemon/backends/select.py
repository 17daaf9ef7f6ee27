"""Making the backend of a session: find its CLI and build the `AgentBackend` for it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..policy.secrets import SecretGuard
from .base import AgentBackend, Launch
from .discovery import find_cli, not_installed_message
from .env import cli_credentials, cli_environment
from .info import BackendKind, backend_class, backend_info

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
    provider_key = backend_info(kind).provider_env_key
    own = cli_credentials(kind, env, provider_key(env) if provider_key is not None else None)
    launch = Launch(
        cli=location.path,
        cwd=cwd,
        env=cli_environment(kind, env, secrets, own_credentials=own),
        own_credentials=own,
        install_hint=not_installed_message(kind, location),
        resume_id=resume_id,
    )
    return backend_class(kind)(launch)
