"""What a session's MCP servers may ask of the session: its roots, and the user (elicitation).

The MCP client side of Cody (connection.py) answers a server's `roots/list` and
`elicitation/create` through an `McpClientHooks` the engine gives the session's manager, so
this package never imports the engine (docs/mcp.md "Roots", "Elicitation"). Invariants:

- `roots()` is called for every `roots/list` and must not block (it reads the session's
  settings);
- `elicit` never raises and always answers (the engine declines when no client can be asked,
  and cancels after the approval timeout): a server waiting for an answer never hangs;
- without an `elicit` hook every elicitation is declined.

This module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["Elicitation", "ElicitationAnswer", "ElicitationHandler", "McpClientHooks"]

ElicitationAction = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Elicitation:
    """A server's `elicitation/create`: it asks the user for input (form) or to visit a URL."""

    server: str
    mode: Literal["form", "url"]
    message: str
    requested_schema: dict[str, Any] | None = None
    """The form's restricted JSON Schema (form mode)."""
    url: str | None = None
    """Where the user is sent (URL mode)."""
    elicitation_id: str | None = None
    call_id: str | None = None
    """The tool call of the session it happens during, when there is exactly one."""


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    action: ElicitationAction
    content: dict[str, Any] | None = None
    """The form's values (only with `accept` in form mode)."""


ElicitationHandler = Callable[[Elicitation], Awaitable[ElicitationAnswer]]


def _no_roots() -> Sequence[Path]:
    return ()


@dataclass(frozen=True, slots=True)
class McpClientHooks:
    roots: Callable[[], Sequence[Path]] = field(default=_no_roots)
    """The session's roots (its directory and writable roots), absolute and resolved."""
    elicit: ElicitationHandler | None = None
    """Asks the user through the client; None: every elicitation is declined."""
