"""The system prompt Cody sends with every model call, and the request every call starts from."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..providers.base import ModelRequest
from ..tools.registry import ToolRegistry

if TYPE_CHECKING:
    from .session import Session

__all__ = ["base_request", "build_instructions"]

_BASE = """You are Cody, a coding agent working in the user's repository through tools.

- Use the tools to inspect files before changing them; prefer small, precise edits.
- `exec` runs commands (an argv list or a shell string) in the workspace; read-only commands
  such as ls, cat, rg and git status are cheap. Long-running or destructive commands need care.
- Every change that can modify the system may need the user's approval; if a call is denied,
  do not retry it in another form: explain what you wanted and ask.
- Keep answers short and concrete. Mention the files you changed."""


def build_instructions(
    *, cwd: Path, sandbox_mode: str, approval_policy: str, tools: list[str]
) -> str:
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    return (
        f"{_BASE}\n\n"
        f"Environment:\n"
        f"- cwd: {cwd}\n"
        f"- os: {platform.system()} {platform.release()}\n"
        f"- date: {today}\n"
        f"- sandbox: {sandbox_mode}\n"
        f"- approval policy: {approval_policy}\n"
        f"- tools: {', '.join(tools) if tools else 'none'}"
    )


def base_request(
    session: Session, registry: ToolRegistry, allowed: frozenset[str] | None
) -> ModelRequest:
    """A model call of `session` with its instructions, tools and settings, and no history
    yet (turns and compaction fill it in): both use the same prefix, so it stays cached."""
    settings = session.settings
    tools = registry.tools(allowed, session_id=session.id)
    return ModelRequest(
        model=settings.model,
        instructions=build_instructions(
            cwd=session.cwd,
            sandbox_mode=settings.sandbox_mode,
            approval_policy=settings.approval_policy,
            tools=[tool.name for tool in tools],
        ),
        history=[],
        tools=[tool.spec() for tool in tools],
        session_id=session.id,
        reasoning_effort=settings.reasoning_effort,
        reasoning_summary=settings.reasoning_summary,
    )
