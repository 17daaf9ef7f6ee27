"""Making a session live: a new one (in a git worktree of its own when asked) or a stored
one opened again, with its project instructions, agent profiles, commands, skills, hooks,
MCP servers and processes.

Invariants: a session becomes live (`LiveSessions.add`) only once all of that succeeded;
on any failure before, its file is closed (the lock released), a new session's file and
worktree are removed, and nothing is listed; project instructions and extensions are read
off the event loop; an agent CLI's session reads its own (none are read for it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from cody_protocol.session import CodySessionMeta, McpServer

from ..errors import SessionBusy
from ..extensions.discovery import Locations, discover
from ..providers.catalog import ProviderCatalog
from ..tools.mcp.prompts import PREFIX as MCP_PREFIX
from .checkpoints import Checkpoints
from .context_items import project_docs_entry, record
from .deps import EngineDeps
from .hooks import SessionHooks
from .live_sessions import LiveSessions
from .loading import SessionLoader, mcp_specs
from .ports import ClientLink
from .processes import attach_processes
from .project_docs import ProjectDocs, global_candidates, read_project_docs
from .replay import replay_events
from .session import Session
from .slash import BUILTIN_NAMES
from .subagents.children import Subagents
from .subagents.lineage import Lineage
from .workdir import refuse_live_move
from .worktree_sessions import WorktreeSessions

__all__ = ["SessionOpener"]


class SessionOpener:
    """Creates and opens sessions into `live` (one per daemon, built by the SessionManager)."""

    def __init__(
        self,
        deps: EngineDeps,
        *,
        loader: SessionLoader,
        live: LiveSessions,
        checkpoints: Checkpoints,
        subagents: Subagents,
        worktrees: WorktreeSessions,
        out: Callable[[], ClientLink | None],
    ) -> None:
        self._deps = deps
        self._loader = loader
        self._live = live
        self._checkpoints = checkpoints
        self._subagents = subagents
        self._worktrees = worktrees
        self._out = out
        """Where out-of-turn events (MCP server status, processes) go."""

    async def new_session(
        self,
        cwd: str,
        meta: CodySessionMeta | None,
        mcp_servers: Sequence[McpServer] = (),
        *,
        read_docs: bool = True,
        start_source: str = "startup",
        lineage: Lineage | None = None,
    ) -> Session:
        """A new live session; `read_docs`: read its project instructions now (a fork copies
        its source's instead); `start_source`: what its SessionStart hooks are told;
        `lineage`: a child session's parent (engine/subagents/). With `_meta.cody.worktree` it
        runs in a new git worktree of its project."""
        place = await self._worktrees.place(cwd, meta.worktree if meta is not None else None)
        header = {"parent": lineage.record()} if lineage is not None else {}
        if place.worktree is not None:
            header["worktree"] = place.worktree.record()
        try:
            session, catalog = self._loader.create(place.cwd, meta, header)
        except BaseException:
            await self._worktrees.discard(place)
            raise
        session.lineage, session.worktree = lineage, place.worktree
        try:
            if read_docs:
                await self.read_project_docs(session)
            await self._subagents.load_profiles(session)
            await self._discover(session, start_source)
        except BaseException:
            session.file.close()
            session.file.path.unlink(missing_ok=True)
            await self._worktrees.discard(place)
            raise
        live = self._go_live(session, catalog, mcp_servers)
        self._checkpoints.warm(live, new=True)  # the first turn's snapshot, ahead
        return live

    async def open_session(
        self,
        session_id: str,
        link: ClientLink | None,
        *,
        replay: bool,
        mcp_servers: Sequence[McpServer] = (),
        relocate_to: str | None = None,
    ) -> Session:
        """Make a stored session live (`session/load` replays it to `link`, resume does not);
        in `relocate_to` instead of its own directory when given (engine/workdir.py)."""
        live = self._live.live(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn.")
            if relocate_to is not None:
                refuse_live_move(session_id, live.cwd, relocate_to)
        else:
            live = await self._open_from_disk(session_id, mcp_servers, relocate_to)
        if replay and link is not None:
            for event in replay_events(live.history, self._deps.tools, live.checkpoints.marks):
                link.emit(live.id, event)
                await link.wait_writable()
            await link.flush(live.id)
        return live

    async def read_project_docs(self, session: Session) -> None:
        """Read and record the project instructions of a native session (an agent CLI reads
        its own); the files are read off the event loop (engine/project_docs.py)."""
        settings = session.settings
        if settings.backend != "native":
            return
        deps = self._deps
        paths = global_candidates(deps.paths.config_dir, deps.codex_home, deps.claude_dir)
        docs: ProjectDocs = await asyncio.to_thread(
            read_project_docs,
            session.cwd,
            max_bytes=settings.project_doc_max_bytes,
            fallbacks=settings.project_doc_fallbacks,
            global_paths=paths,
        )
        entry = project_docs_entry(session.history, docs.text, [doc.wire() for doc in docs.files])
        record(session, entry)

    async def _open_from_disk(
        self, session_id: str, mcp_servers: Sequence[McpServer], relocate_to: str | None
    ) -> Session:
        session, catalog = self._loader.open(session_id, relocate_to)
        try:
            if not any(entry.kind == "project_docs" for entry in session.context_items):
                # A session from before Cody read project instructions: read them once now
                # (appended after its history, so nothing it sent before changes).
                await self.read_project_docs(session)
            await self._subagents.load_profiles(session)
            await self._discover(session, "resume")
        except BaseException:
            session.file.close()
            raise
        live = self._go_live(session, catalog, mcp_servers)
        self._checkpoints.warm(live, new=False)
        return live

    async def _discover(self, session: Session, start_source: str) -> None:
        """Find the session's commands, skills and hooks (native sessions: an agent CLI reads
        its own), off the event loop (extensions/discovery.py)."""
        if session.settings.backend != "native":
            return
        deps = self._deps
        home = deps.env.get("HOME")
        where = Locations(
            cody_dir=deps.paths.config_dir,
            claude_dir=deps.claude_dir,
            codex_home=deps.codex_home,
            home=Path(home) if home else None,
            config_file=deps.paths.config_file,
        )
        found = await asyncio.to_thread(
            discover,
            session.cwd,
            where,
            trusted=session.settings.project_trusted,
            hook_tables=session.settings.hook_tables,
            reserved=BUILTIN_NAMES,
            reserved_prefixes={MCP_PREFIX: "the MCP servers' prompts"},
            skill_selectors=session.settings.skills.config,
        )
        session.extensions = found
        session.settings.warnings.extend(found.warnings)
        if found.hooks:
            session.hooks = SessionHooks(
                specs=found.hooks,
                session_id=session.id,
                cwd=session.cwd,
                transcript_path=session.file.path,
            )
            session.start_source = start_source

    def _attach_mcp(self, session: Session, servers: Sequence[McpServer]) -> None:
        """Give the session its MCP servers and start them in the background (lazily, once)."""
        if not session.cwd.is_dir():
            return  # its directory is gone: it can be read, not continued (engine/workdir.py)
        specs = mcp_specs(session.settings, servers, env=self._deps.env, cwd=session.cwd)
        if not specs:
            return
        from .mcp_session import start_mcp

        session.mcp = start_mcp(
            session, specs, out=self._out, secrets=lambda: self._live.secrets(session)
        )

    def _go_live(
        self, session: Session, catalog: ProviderCatalog, mcp_servers: Sequence[McpServer]
    ) -> Session:
        """Attach the MCP servers and list the session as live; its file is closed (the
        lock released) when that fails."""
        try:
            self._attach_mcp(session, mcp_servers)
        except BaseException:
            session.file.close()
            raise
        session.processes = attach_processes(self._deps.processes, session.id, self._out)
        self._live.add(session, catalog)
        return session
