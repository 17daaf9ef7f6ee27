"""Making the backend of a session: find its CLI and build the `AgentBackend` for it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .base import AgentBackend, BackendKind, Launch
from .discovery import find_cli, not_installed_message

__all__ = ["make_backend"]


def make_backend(
    kind: BackendKind, *, cwd: Path, env: Mapping[str, str], resume_id: str | None
) -> AgentBackend:
    """The backend for a session (its CLI looked up now; `launch.cli` is None when missing)."""
    location = find_cli(kind, env)
    launch = Launch(
        cli=location.path,
        cwd=cwd,
        env=env,
        install_hint=not_installed_message(kind, location),
        resume_id=resume_id,
    )
    if kind == "codex":
        from .codex_app_server import CodexBackend

        return CodexBackend(launch)
    from .claude_code import ClaudeBackend

    return ClaudeBackend(launch)
