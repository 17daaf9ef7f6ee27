"""Ending sessions: `session/close`, `_cody/session/delete` and the daemon's shutdown.

Invariants: a closed session is taken off the live list before its file is closed (so a
client may load it again at once); a session never prompted, or ephemeral, leaves no file;
its children close first and its processes stop before its worktree is finished (kept when
something changed in it, else removed); `shutdown()` answers every queued prompt
`cancelled`, cancels every turn (each once), waits for their cleanup and closes every file
even when stopping an agent, MCP server or hook fails.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..errors import SessionBusy
from .checkpoints import Checkpoints
from .deps import EngineDeps
from .live_sessions import LiveSessions
from .notify import Notifier
from .session import Session
from .subagents.children import Subagents
from .worktree_sessions import WorktreeSessions

if TYPE_CHECKING:
    from cody_protocol.subagents import WorktreeInfo

__all__ = ["SessionCloser"]


class SessionCloser:
    """Closes the sessions of `live` (one per daemon, built by the SessionManager)."""

    def __init__(
        self,
        deps: EngineDeps,
        *,
        live: LiveSessions,
        checkpoints: Checkpoints,
        subagents: Subagents,
        worktrees: WorktreeSessions,
        notifier: Notifier,
    ) -> None:
        self._deps = deps
        self._live = live
        self._checkpoints = checkpoints
        self._subagents = subagents
        self._worktrees = worktrees
        self._notifier = notifier

    async def close(self, session: Session) -> WorktreeInfo | None:
        """Close the session (its children first); a worktree session's worktree is kept
        when something changed in it, else removed (what became of it is returned)."""
        session.queue.cancel_all()
        if session.turn is not None and not session.turn.done():
            self._live.cancel_turn(session.turn)
            await asyncio.wait({session.turn})
        await self._subagents.close_children(session)
        self._live.remove(session.id)
        await _stop_agent(session)
        await _close_mcp(session)
        if session.hooks is not None:
            await session.hooks.close()
        if self._deps.code is not None:
            await self._deps.code.release(session.id)
        await session.file.sync()
        _close_file(session)  # first: a client may load the session again at once
        if session.ephemeral and session.checkpoints.entries:
            self._checkpoints.forget(session.id)  # nobody can rewind it any more
        await _stop_processes(session)  # before its worktree may be removed
        return await self._worktrees.finish(session)

    async def delete(self, session_id: str) -> None:
        """Close the session if it is live (SessionBusy while a turn runs), then remove its
        file and checkpoints."""
        live = self._live.live(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn; cancel it first.")
            await self.close(live)
            if not _kept_on_close(live):
                return  # never prompted, or ephemeral: closing it removed its file
        self._deps.store.delete(session_id)
        self._checkpoints.forget(session_id)

    async def shutdown(self) -> None:
        """Every session closed and every engine resource released (see the docstring)."""
        sessions = self._live.all()
        for session in sessions:
            session.queue.cancel_all()
        turns = [s.turn for s in sessions if s.turn is not None and not s.turn.done()]
        for turn in turns:
            self._live.cancel_turn(turn)
        if turns:
            await asyncio.wait(turns, timeout=5)
        await self._subagents.stop_all()
        closing = self._live.all()
        for session in closing:
            try:
                await _stop_agent(session)
                await _close_mcp(session)
                if session.hooks is not None:
                    await session.hooks.close()
                await session.file.sync()
            finally:
                _close_file(session)
        ephemeral = [s for s in closing if s.ephemeral and s.checkpoints.entries]
        self._live.clear()
        await self._checkpoints.aclose()
        for session in ephemeral:  # its ref only: the objects go at the repository's next prune
            await self._checkpoints.drop_ref(session)
        await self._notifier.aclose()
        deps = self._deps
        await deps.processes.close()  # every session's processes, then the launcher
        for session in closing:  # after its processes: an unchanged worktree is removed
            await self._worktrees.finish(session)
        await deps.providers.aclose()
        await deps.tools.aclose()
        if deps.code is not None:
            await deps.code.aclose()
        deps.scans.shutdown()


def _kept_on_close(session: Session) -> bool:
    """Whether closing the session keeps its file: it was prompted (it has a history, or a
    turn's checkpoint when a rewind emptied its history) and is not ephemeral."""
    prompted = bool(session.history) or bool(session.checkpoints.entries)
    return prompted and not session.ephemeral


def _close_file(session: Session) -> None:
    """Close the session's file; a session never prompted leaves none behind (an empty chat is
    not saved), nor does an ephemeral one. A session whose history a rewind emptied was
    prompted: its turns' checkpoints (and the rewind's redo) are in its file, which stays."""
    if _kept_on_close(session):
        session.file.close()
    else:
        session.file.discard()


async def _close_mcp(session: Session) -> None:
    if session.mcp is not None:
        await session.mcp.aclose()


async def _stop_processes(session: Session) -> None:
    """Stop every process the session's commands run (SIGTERM, then SIGKILL); nothing more
    is reported to clients about them (the session is closed)."""
    if session.processes is not None:
        session.processes.listener = None
        await session.processes.close()


async def _stop_agent(session: Session) -> None:
    """Stop the session's agent CLI, if it has one (the agents module loads only then)."""
    if session.agent is not None:
        from .agents import stop_agent

        await stop_agent(session)
