"""The session manager: the engine's façade, many sessions per daemon, one running turn per
session. The rpc layer calls it; the work is done by the modules it delegates to:
opening.py (new and stored sessions made live), turn_setup.py (what a prompt runs as),
setting_changes.py, forking.py, listing.py, closing.py (close, delete, shutdown), with the
live sessions in live_sessions.py.

Invariants: a session is live exactly while its file is open and locked; a session closed
(or left at shutdown) without any history, or ephemeral, leaves no file; a second prompt on
a busy session fails with SessionBusy (-32011) and changes nothing (the session is claimed
before any await); `shutdown()` cancels every turn, waits for their cleanup and closes
every file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cody_protocol.content import ContentBlock
from cody_protocol.prompt import DryRunReport
from cody_protocol.session import McpServer, SessionConfigOption, SessionInfo

from ..errors import InvalidParams, Issue, ProviderError, SessionBusy
from ..policy.allowlist import allowed_tools
from ..providers.catalog import ProviderCatalog
from ..worktrees.worktree import WORKTREES_DIR
from .auth import OAUTH_KINDS, oauth_logins
from .checkpoints import Checkpoints
from .closing import SessionCloser
from .compaction import CompactionFailed, CompactionResult
from .deps import EngineDeps
from .final_answer import check_schema
from .forking import fork_session
from .images import refuse_audio
from .listing import list_sessions
from .live_sessions import LiveSessions
from .loading import SessionLoader
from .notify import Notifier, NotifyingLink
from .opening import SessionOpener
from .ports import ClientLink
from .processes import kill_process, list_processes
from .replay import prompt_to_text
from .session import Session, TurnOutcome
from .setting_changes import config_options, set_config_option, set_mode
from .slash import parse_command
from .slash_runner import run_local_command
from .steer_requests import dropped_outcome, join_turn
from .subagents.children import Subagents
from .subagents.lineage import Lineage
from .turn_setup import TurnSetup
from .workdir import require_workdir
from .worktree_sessions import WorktreeSessions

if TYPE_CHECKING:
    from cody_protocol.processes import ProcessInfo
    from cody_protocol.subagents import WorktreeInfo

__all__ = ["SessionManager"]


class SessionManager:
    """The engine as the rpc layer sees it (one per daemon; see the module docstring)."""

    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps
        self.sessions = LiveSessions(deps.env)
        """The live sessions and their provider catalogs (engine/live_sessions.py)."""
        self.logged_out: set[str] = set()
        """Providers whose OAuth login `logout` ended (until `authenticate` succeeds)."""
        self.link: ClientLink | None = None
        """Where out-of-turn events (MCP server status) go; set by the rpc layer."""
        self.checkpoints = Checkpoints(
            deps.checkpoints, protected=(deps.paths.config_dir, deps.paths.data_dir)
        )
        self.subagents = Subagents(self)
        """Child sessions started by `task` calls (engine/subagents/)."""
        self.worktrees = WorktreeSessions(deps.paths.data_dir / WORKTREES_DIR, deps.env)
        """Sessions that run in a git worktree of their own (engine/worktree_sessions.py)."""
        self.notifier = Notifier()
        """Runs the user's `notify` program (engine/notify.py)."""
        loader = SessionLoader(deps)
        self._opener = SessionOpener(
            deps,
            loader=loader,
            live=self.sessions,
            checkpoints=self.checkpoints,
            subagents=self.subagents,
            worktrees=self.worktrees,
            out=lambda: self.link,
        )
        self.new_session = self._opener.new_session
        """A new live session (engine/opening.py)."""
        self.open_session = self._opener.open_session
        """A stored session made live (`session/load` replays it, resume does not)."""
        self.turns = TurnSetup(
            deps,
            live=self.sessions,
            loader=loader,
            checkpoints=self.checkpoints,
            subagents=self.subagents,
            logged_out=self.logged_out,
        )
        """What a prompt runs as (engine/turn_setup.py)."""
        self._closer = SessionCloser(
            deps,
            live=self.sessions,
            checkpoints=self.checkpoints,
            subagents=self.subagents,
            worktrees=self.worktrees,
            notifier=self.notifier,
        )

    # -- finding ----------------------------------------------------------------------------

    def live(self, session_id: str) -> Session | None:
        """The live session `session_id`, or None."""
        return self.sessions.live(session_id)

    def get(self, session_id: str) -> Session:
        """The live session `session_id` (NotFound when it is not live here)."""
        return self.sessions.get(session_id)

    def lineage_of(self, session_id: str) -> Lineage | None:
        """A live child session's parent and agent (the rpc layer names them on the wire)."""
        session = self.sessions.live(session_id)
        return session.lineage if session is not None else None

    # -- turns ------------------------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        blocks: list[ContentBlock],
        link: ClientLink,
        *,
        queue: bool = False,
        output_schema: dict[str, Any] | None = None,
    ) -> TurnOutcome:
        """Run one turn. `queue`: while a turn runs (or prompts wait), wait for them instead of
        raising SessionBusy (engine/steering.py); `output_schema`: the final answer must
        validate against it (engine/final_answer.py)."""
        session = self.get(session_id)
        if output_schema is not None:
            check_schema(output_schema)
        if session.busy or session.queue:
            if not queue:
                raise SessionBusy(
                    f"Session {session_id} is already running a turn; wait, cancel it, or "
                    "queue the prompt (_meta.cody.queue)."
                )
            if await session.queue.wait() == "cancelled":
                return dropped_outcome(session)
        try:
            return await self._prompt(session, blocks, link, output_schema)
        finally:
            session.queue.release_soon()  # the next queued prompt, after this answer

    async def _prompt(
        self,
        session: Session,
        blocks: list[ContentBlock],
        link: ClientLink,
        output_schema: dict[str, Any] | None,
    ) -> TurnOutcome:
        refuse_audio(blocks)
        # `/compact`, `/init`, a custom command...: engine/slash.py
        command = parse_command(blocks, session.extensions.commands)
        if command is not None and command.command.kind == "local":
            return await run_local_command(self, session, command, link)
        require_workdir(session.id, session.cwd)  # a turn needs its directory
        checkpoint = (
            self.checkpoints.for_turn(session, prompt_to_text(blocks))
            if session.settings.checkpoints
            else None
        )
        secrets = self.sessions.secrets(session)
        notifying = (
            NotifyingLink(link, self.notifier, session, secrets)
            if session.settings.notify
            else None
        )
        link = notifying or link
        prepared = self.turns.prepare(
            session,
            blocks,
            command,
            link,
            checkpoint=checkpoint,
            secrets=secrets,
            output_schema=output_schema,
        )
        if notifying is not None:
            notifying.turn_id = prepared.turn_id
        start = len(session.history)
        # Claim the session before any await: a second prompt must see it busy (the MCP
        # servers' start-up and the rules are awaited inside the turn, where a cancel also
        # reaches them).
        task = asyncio.create_task(prepared.run)
        session.turn = task
        self.subagents.turn_started(session, link)
        stop = "error"
        session.asker = link  # an MCP server's elicitation goes to this client
        try:
            outcome = await task
            stop = outcome.stop_reason
            return outcome
        except asyncio.CancelledError:
            # The request itself was cancelled ($/cancelRequest): let the turn clean up.
            stop = "cancelled"
            self.sessions.cancel_turn(task)
            self.subagents.cancel_children(session.id)
            await asyncio.wait({task})
            raise
        finally:
            if session.turn is task:
                session.turn = None
            session.asker = None
            for ask in list(session.asks):  # an MCP server's question outlived the turn
                ask.cancel()
            if notifying is not None:
                turn_items = session.history[start:]
                self.notifier.turn_complete(session, prepared.turn_id, stop, turn_items, secrets)

    def steer(self, session_id: str, blocks: list[ContentBlock]) -> str:
        """`_cody/session/steer`: add `blocks` to the running turn (engine/steering.py); the
        turn's id. NoTurnRunning (-32011) when no native turn runs."""
        session = self.get(session_id)
        return join_turn(session, blocks, self.sessions.wire_api_of(session))

    async def compact(self, session_id: str, link: ClientLink) -> CompactionResult | None:
        """`/compact`: summarise the session now (see engine/compaction.py); None when there
        is nothing to summarise. Takes the session's turn slot (SessionBusy while a turn
        runs); `session/cancel` cancels it and nothing changes."""
        session = self.get(session_id)
        if session.busy or session.queue:
            raise SessionBusy(f"Session {session_id} is running a turn; wait or cancel it.")
        require_workdir(session.id, session.cwd)
        if session.settings.backend != "native":
            raise InvalidParams(
                f"Session {session_id} runs on the {session.settings.backend} backend, which "
                "manages (and compacts) its own conversation.",
                [Issue(key="sessionId", message="not a native session", source="params")],
            )
        task = asyncio.create_task(self.turns.compaction(session, link))
        session.turn = task
        try:
            return await task
        except CompactionFailed as exc:
            raise ProviderError(
                kind="provider",
                provider=session.settings.provider,
                message=f"Compaction failed: {exc}; nothing was changed. Try /compact again.",
            ) from None
        finally:
            if session.turn is task:
                session.turn = None
            await link.flush(session.id)

    async def dry_run(self, session_id: str, blocks: list[ContentBlock]) -> DryRunReport:
        """What a prompt would run in this session, without running or writing anything."""
        return await self.turns.dry_run(self.get(session_id), blocks)

    def cancel(self, session_id: str) -> bool:
        """Cancel the running turn, if any, and answer every queued prompt `cancelled`.
        Unknown sessions are ignored (a notification)."""
        session = self.sessions.live(session_id)
        if session is None:
            return False
        self.subagents.cancel_children(session_id)  # background ones too
        dropped = session.queue.cancel_all()
        if session.turn is None or session.turn.done():
            return dropped > 0
        self.sessions.cancel_turn(session.turn)
        return True

    async def refresh_rules(self, session: Session) -> None:
        """Re-read the session's permission rules, off the event loop (engine/turn_setup.py)."""
        await self.turns.refresh_rules(session)

    # -- processes --------------------------------------------------------------------------

    def processes(self, session_id: str) -> tuple[list[ProcessInfo], int]:
        """The session's processes and how many may outlive their call at once."""
        session = self.get(session_id)
        return list_processes(session.processes), self.deps.processes.per_session

    async def kill_process(self, session_id: str, process_id: int) -> tuple[ProcessInfo, bool]:
        """Stop one of the session's processes for a client; it, and whether it ran."""
        return await kill_process(self.get(session_id).processes, process_id)

    # -- settings and logins (engine/setting_changes.py) ------------------------------------

    def catalog_of(self, session: Session) -> ProviderCatalog:
        """The providers as this session sees them (its configuration)."""
        return self.sessions.catalog_of(session)

    def config_options(self, session: Session) -> list[SessionConfigOption]:
        return config_options(session, self.sessions.catalog_of(session))

    def set_config_option(
        self, session_id: str, config_id: str, value: Any, link: ClientLink | None
    ) -> list[SessionConfigOption]:
        session = self.get(session_id)
        catalog = self.sessions.catalog_of(session)
        return set_config_option(session, catalog, config_id, value, link, env=self.deps.env)

    def set_mode(self, session_id: str, mode_id: str, link: ClientLink | None) -> None:
        session = self.get(session_id)
        set_mode(session, self.sessions.catalog_of(session), mode_id, link)

    def allowed_tools_of(self, session_id: str) -> frozenset[str] | None:
        settings = self.get(session_id).settings
        return allowed_tools(settings.allowed_tools, settings.phase, self.deps.tools.facts())

    async def logout(self, catalog: ProviderCatalog) -> list[str]:
        """End the OAuth logins (see engine/auth.py): their providers need `authenticate`
        again, and the provider clients holding their tokens are closed."""
        ended = oauth_logins(catalog)
        self.logged_out.update(ended)
        await self.deps.providers.forget(OAUTH_KINDS)
        return ended

    # -- listing, forking, closing, deleting, shutdown --------------------------------------

    async def list_sessions(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        """One page of stored sessions (engine/listing.py)."""
        return await list_sessions(self.deps, cwd, cursor)

    async def fork(
        self,
        session_id: str,
        cwd: str,
        at_message: int | None,
        mcp_servers: Sequence[McpServer] = (),
    ) -> Session:
        """A new session with the history of `session_id` up to user message `at_message`
        (engine/forking.py)."""
        return await fork_session(
            self._opener,
            self.sessions,
            self.deps.store,
            session_id=session_id,
            cwd=cwd,
            at_message=at_message,
            mcp_servers=mcp_servers,
        )

    async def close(self, session_id: str) -> WorktreeInfo | None:
        """Close a live session (engine/closing.py); what became of its worktree, if any."""
        return await self._closer.close(self.get(session_id))

    async def delete(self, session_id: str) -> None:
        await self._closer.delete(session_id)

    async def shutdown(self) -> None:
        await self._closer.shutdown()
