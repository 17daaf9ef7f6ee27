"""The daemon's live sessions: each one's `Session` and the provider catalog it sees.

Invariants: a session is listed exactly while its file is open and locked (it is added
once its MCP servers are attached and removed before its file is closed); `get` of a
session that is not listed is NotFound, never a stale one; a turn task is cancelled at most
once (`cancel_turn`), so a repeated `session/cancel` cannot land in the turn's own cleanup.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from typing import Any

from ..errors import NotFound
from ..policy.secrets import SecretGuard
from ..providers.catalog import ProviderCatalog
from .secrets import secret_guard
from .session import Session

__all__ = ["LiveSessions"]


class LiveSessions:
    """The live sessions of one daemon (shared by every connection of a warm daemon)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self._sessions: dict[str, Session] = {}
        self._catalogs: dict[str, ProviderCatalog] = {}
        self._cancelled: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        """Turns already cancelled: a turn is cancelled once (see `cancel_turn`)."""

    def add(self, session: Session, catalog: ProviderCatalog) -> None:
        self._sessions[session.id] = session
        self._catalogs[session.id] = catalog

    def remove(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._catalogs.pop(session_id, None)

    def clear(self) -> None:
        self._sessions.clear()
        self._catalogs.clear()

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    def live(self, session_id: str) -> Session | None:
        """The live session `session_id`, or None."""
        return self._sessions.get(session_id)

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise NotFound(
                f"Session {session_id} is not live in this daemon; "
                "use session/load or session/resume first."
            )
        return session

    def catalog_of(self, session: Session) -> ProviderCatalog:
        """The providers as this session sees them (its configuration)."""
        return self._catalogs[session.id]

    def wire_api_of(self, session: Session) -> str:
        """The wire API of the session's provider."""
        return self.catalog_of(session).get(session.settings.provider).wire_api

    def secrets(self, session: Session) -> SecretGuard:
        """What the session's tools (and a backend CLI) must not get or pass on."""
        settings = session.settings
        return secret_guard(
            env=self._env,
            providers=self.catalog_of(session).all(),
            tool_config=settings.tool_config,
            mcp_config=settings.mcp_config,
            mcp_servers=session.mcp.specs() if session.mcp is not None else (),
        )

    def cancel_turn(self, task: asyncio.Task[Any]) -> None:
        """Cancel a turn once. A second cancel (editors repeat `session/cancel`) would land
        in the turn's own cleanup: abandon a tool being stopped, skip closing its calls, and
        answer the prompt with an error instead of `cancelled`."""
        if task.done() or task in self._cancelled:
            return
        self._cancelled.add(task)
        task.cancel()
