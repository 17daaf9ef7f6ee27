"""The session manager: many sessions per daemon, one running turn per session.

Invariants: a session is live (in `_live`) exactly while its file is open and locked; a
session closed (or left at shutdown) without any history, or ephemeral, leaves no file; a
second prompt on a busy session fails with SessionBusy (-32011) and changes nothing;
`shutdown()` cancels every turn, waits for their cleanup and closes every file.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cody_protocol.content import ContentBlock
from cody_protocol.prompt import DryRunReport
from cody_protocol.session import (
    CodySessionInfoMeta,
    CodySessionMeta,
    ListedSessionMeta,
    McpServer,
    SessionConfigOption,
    SessionInfo,
)
from cody_protocol.settings import WIRE_APIS

from ..config.loader import project_trusted
from ..core.history import ImagePart, item_key
from ..errors import AuthRequired, InvalidParams, Issue, NotFound, ProviderError, SessionBusy
from ..extensions.discovery import Locations, discover
from ..ids import new_id
from ..policy.allowlist import allowed_tools
from ..policy.sandbox import SandboxPolicy
from ..policy.secrets import SecretGuard
from ..providers.base import takes_output_schema
from ..providers.catalog import ProviderCatalog
from ..providers.pool import UnsupportedWireApi
from ..providers.pricing import billable_price
from ..store.reader import read_session
from ..tools.registry import ToolRegistry
from ..worktrees.worktree import WORKTREES_DIR
from .auth import AUTH_METHOD_SUFFIX, OAUTH_KINDS, oauth_logins
from .checkpoints import Checkpoints
from .compaction import CompactionFailed, CompactionResult, compact_session
from .context_items import ContextEntry, project_docs_entry, record
from .deps import EngineDeps
from .events import ConfigChanged
from .final_answer import FinalAnswer, check_schema
from .hooks import SessionHooks
from .images import prompt_images, refuse_audio, refuse_images_for_backend, takes_images
from .instructions import base_request, prompt_family
from .loading import SessionLoader, mcp_specs, offline_model_problem
from .notify import Notifier, NotifyingLink
from .ports import ClientLink
from .processes import attach_processes, kill_process, list_processes
from .project_docs import ProjectDocs, global_candidates, read_project_docs
from .prompt_prep import run_native
from .replay import prompt_to_text, replay_events
from .secrets import login_files, secret_guard
from .session import Session, TurnOutcome
from .settings import (
    SessionSettings,
    apply_config_option,
    apply_mode,
    build_config_options,
    mode_of,
)
from .slash import BUILTIN_NAMES, McpCommandCall, parse_command, parse_mcp_command
from .slash_runner import Reply, answer, run_local_command
from .steer_requests import dropped_outcome, join_turn
from .subagents.children import Subagents
from .subagents.lineage import Lineage
from .turn import TurnEnv, TurnRunner
from .turn_hooks import TurnHooks
from .workdir import refuse_live_move, require_workdir
from .worktree_sessions import WorktreeSessions

if TYPE_CHECKING:
    from cody_protocol.processes import ProcessInfo
    from cody_protocol.subagents import WorktreeInfo

    from .backend_turn import BackendTurnRunner

__all__ = ["LIST_PAGE_SIZE", "PROVIDER_OPTION", "SessionManager"]

PROVIDER_OPTION = "the `provider` config option"
"""How a session's provider is changed (session/set_config_option), as messages name it."""

logger = logging.getLogger(__name__)

LIST_PAGE_SIZE = 100


class SessionManager:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps
        self._live: dict[str, Session] = {}
        self._catalogs: dict[str, ProviderCatalog] = {}
        self._loader = SessionLoader(deps)
        self._cancelled: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self.logged_out: set[str] = set()
        """Providers whose OAuth login `logout` ended (until `authenticate` succeeds)."""
        """Turns already cancelled: a turn is cancelled once (see `_cancel_turn`)."""
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

    # -- creating and opening ---------------------------------------------------------------

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
        place = await self.worktrees.place(cwd, meta.worktree if meta is not None else None)
        header = {"parent": lineage.record()} if lineage is not None else {}
        if place.worktree is not None:
            header["worktree"] = place.worktree.record()
        try:
            session, catalog = self._loader.create(place.cwd, meta, header)
        except BaseException:
            await self.worktrees.discard(place)
            raise
        session.lineage, session.worktree = lineage, place.worktree
        try:
            if read_docs:
                await self._read_project_docs(session)
            await self.subagents.load_profiles(session)
            await self._discover(session, start_source)
        except BaseException:
            session.file.close()
            session.file.path.unlink(missing_ok=True)
            await self.worktrees.discard(place)
            raise
        live = self._go_live(session, catalog, mcp_servers)
        self.checkpoints.warm(live, new=True)  # the first turn's snapshot, ahead
        return live

    async def _read_project_docs(self, session: Session) -> None:
        """Read and record the project instructions of a native session (an agent CLI reads
        its own); the files are read off the event loop (engine/project_docs.py)."""
        settings = session.settings
        if settings.backend != "native":
            return
        paths = global_candidates(
            self.deps.paths.config_dir, self.deps.codex_home, self.deps.claude_dir
        )
        docs: ProjectDocs = await asyncio.to_thread(
            read_project_docs,
            session.cwd,
            max_bytes=settings.project_doc_max_bytes,
            fallbacks=settings.project_doc_fallbacks,
            global_paths=paths,
        )
        entry = project_docs_entry(session.history, docs.text, [doc.wire() for doc in docs.files])
        record(session, entry)

    async def _discover(self, session: Session, start_source: str) -> None:
        """Find the session's commands, skills and hooks (native sessions: an agent CLI reads
        its own), off the event loop (extensions/discovery.py)."""
        if session.settings.backend != "native":
            return
        home = self.deps.env.get("HOME")
        where = Locations(
            cody_dir=self.deps.paths.config_dir,
            claude_dir=self.deps.claude_dir,
            codex_home=self.deps.codex_home,
            home=Path(home) if home else None,
            config_file=self.deps.paths.config_file,
        )
        found = await asyncio.to_thread(
            discover,
            session.cwd,
            where,
            trusted=session.settings.project_trusted,
            hook_tables=session.settings.hook_tables,
            reserved=BUILTIN_NAMES,
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
        specs = mcp_specs(session.settings, servers, env=self.deps.env, cwd=session.cwd)
        if not specs:
            return
        from .mcp_session import start_mcp

        session.mcp = start_mcp(
            session, specs, out=lambda: self.link, secrets=lambda: self._secrets(session)
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
        session.processes = attach_processes(self.deps.processes, session.id, lambda: self.link)
        self._live[session.id] = session
        self._catalogs[session.id] = catalog
        return session

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
        live = self._live.get(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn.")
            if relocate_to is not None:
                refuse_live_move(session_id, live.cwd, relocate_to)
        else:
            live = await self._open_from_disk(session_id, mcp_servers, relocate_to)
        if replay and link is not None:
            for event in replay_events(live.history, self.deps.tools, live.checkpoints.marks):
                link.emit(live.id, event)
                await link.wait_writable()
            await link.flush(live.id)
        return live

    async def _open_from_disk(
        self, session_id: str, mcp_servers: Sequence[McpServer], relocate_to: str | None
    ) -> Session:
        session, catalog = self._loader.open(session_id, relocate_to)
        try:
            if not any(entry.kind == "project_docs" for entry in session.context_items):
                # A session from before Cody read project instructions: read them once now
                # (appended after its history, so nothing it sent before changes).
                await self._read_project_docs(session)
            await self.subagents.load_profiles(session)
            await self._discover(session, "resume")
        except BaseException:
            session.file.close()
            raise
        live = self._go_live(session, catalog, mcp_servers)
        self.checkpoints.warm(live, new=False)
        return live

    def live(self, session_id: str) -> Session | None:
        """The live session `session_id`, or None."""
        return self._live.get(session_id)

    def lineage_of(self, session_id: str) -> Lineage | None:
        """A live child session's parent and agent (the rpc layer names them on the wire)."""
        session = self._live.get(session_id)
        return session.lineage if session is not None else None

    def get(self, session_id: str) -> Session:
        session = self._live.get(session_id)
        if session is None:
            raise NotFound(
                f"Session {session_id} is not live in this daemon; "
                "use session/load or session/resume first."
            )
        return session

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
        text = prompt_to_text(blocks)
        checkpoint = (
            self.checkpoints.for_turn(session, text) if session.settings.checkpoints else None
        )
        secrets = self._secrets(session)
        notifying = (
            NotifyingLink(link, self.notifier, session, secrets)
            if session.settings.notify
            else None
        )
        link = notifying or link
        runner: TurnRunner | BackendTurnRunner
        run: Coroutine[Any, Any, TurnOutcome]
        if session.settings.backend != "native":
            if command is not None:
                blocks = command.turn_prompt()
            text = prompt_to_text(blocks)
            from .agents import agent_for
            from .backend_guard import BackendGuard
            from .backend_turn import BackendTurnRunner

            if output_schema is not None:
                raise InvalidParams(
                    f"An output schema needs a native session; session {session.id} runs on "
                    f"the {session.settings.backend} backend.",
                    [Issue(key="_meta.cody.outputSchema", message="native sessions only")],
                )
            refuse_images_for_backend(blocks, session.settings.backend)
            guard = BackendGuard(
                secrets=secrets,
                read_only_tools=frozenset(
                    tool.name for tool in self.deps.tools.tools() if not tool.requires_approval
                ),
                protected=(self.deps.paths.config_dir, self.deps.paths.data_dir),
            )
            agent = agent_for(session, self.deps.env, secrets)
            runner = BackendTurnRunner(
                session,
                agent,
                link,
                None,
                guard,
                checkpoint=checkpoint,
                rules_file=self.deps.paths.config_file,
                refresh_rules=lambda: self.refresh_rules(session),
            )
            run = runner.run(text)
        else:
            env = self._turn_env(session, link)
            if session.mcp is not None:
                env.extra_tools = session.mcp.turn_tools
                session.mcp.roots_changed()
            env.checkpoint = checkpoint
            if output_schema is not None:
                env.final_answer = FinalAnswer(
                    output_schema, structured_output=takes_output_schema(env.provider)
                )
            runner = TurnRunner(session, env)
            if (mcp_call := parse_mcp_command(blocks)) is not None:
                run = self._mcp_prompt_turn(runner, mcp_call, link)
            else:
                run = run_native(runner, blocks, command, self._prompt_images(session, blocks))
        if notifying is not None:
            notifying.turn_id = runner.state.turn_id
        start = len(session.history)
        # Claim the session before any await: a second prompt must see it busy (the MCP
        # servers' start-up and the rules are awaited inside the turn, where a cancel also
        # reaches them).
        task = asyncio.create_task(run)
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
            self._cancel_turn(task)
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
                self.notifier.turn_complete(
                    session, runner.state.turn_id, stop, turn_items, secrets
                )

    def _prompt_images(self, session: Session, blocks: list[ContentBlock]) -> list[ImagePart]:
        """The prompt's images, checked against the session's model (InvalidParams: one the
        model cannot take, before anything starts)."""
        settings = session.settings
        return prompt_images(
            blocks,
            provider=settings.provider,
            model=settings.model,
            wire_api=self._catalogs[session.id].get(settings.provider).wire_api,
            history=session.history,
        )

    async def _mcp_prompt_turn(
        self, runner: TurnRunner, call: McpCommandCall, link: ClientLink
    ) -> TurnOutcome:
        """`/mcp:<server>:<prompt> args`: the prompt's text as a turn of `runner`
        (engine/mcp_session.py); a mistake is answered as text."""
        from .mcp_session import expand_prompt

        session = runner.session
        expanded = await expand_prompt(session, call)
        if isinstance(expanded, str):
            return await answer(session, link, Reply(expanded))
        return await run_native(runner, expanded, None, self._prompt_images(session, expanded))

    def steer(self, session_id: str, blocks: list[ContentBlock]) -> str:
        """`_cody/session/steer`: add `blocks` to the running turn (engine/steering.py); the
        turn's id. NoTurnRunning (-32011) when no native turn runs."""
        session = self.get(session_id)
        wire_api = self._catalogs[session.id].get(session.settings.provider).wire_api
        return join_turn(session, blocks, wire_api)

    def reload_rules(self, session: Session) -> None:
        """Re-read the session's permission rules (blocking: see `refresh_rules`). A config
        that became invalid keeps the rules the session had."""
        try:
            loaded = self._loader.current_rules(session.cwd)
        except InvalidParams as exc:
            logger.warning("kept the session's permission rules: %s", exc)
            return
        for warning in loaded.warnings:
            logger.info("permission rules: %s", warning)
        session.settings.rules = loaded.rules

    async def refresh_rules(self, session: Session) -> None:
        """`reload_rules` off the event loop: at each turn's start (inside the turn, so a
        cancel reaches it; a rule added by another session or by hand applies from the next
        turn) and after `allow_project` saved one."""
        await asyncio.to_thread(self.reload_rules, session)

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
        env = self._turn_env(session, link)

        async def compact() -> CompactionResult | None:
            # MCP tools are awaited inside the task: the session is claimed before any await.
            if session.mcp is not None:
                extra = await session.mcp.turn_tools()
                env.tools = ToolRegistry([*env.tools.tools(), *extra])
            hooks = TurnHooks(
                session,
                turn_id=new_id(),
                env=env.secrets.child_environment(env.env),
                emit=lambda event: link.emit(session.id, event),
            )
            return await compact_session(
                session,
                env.provider,
                base_request(session, env.offer(session)[0], env.allowed, env.family),
                context_window=env.context_window,
                price=env.price,
                emit=lambda event: link.emit(session.id, event),
                before=hooks.pre_compact if hooks.wants("PreCompact") else None,
            )

        task = asyncio.create_task(compact())
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
        """What a prompt would run in this session, without running or writing anything (a
        backend's report may scan the workspace for protected paths: off the event loop)."""
        from .agents import dry_run_report

        session = self.get(session_id)
        return await asyncio.to_thread(
            dry_run_report,
            session,
            prompt_to_text(blocks),
            self.deps.env,
            self._secrets(session),
            protected=(self.deps.paths.config_dir, self.deps.paths.data_dir),
        )

    def _secrets(self, session: Session) -> SecretGuard:
        """What the session's tools (and a backend CLI) must not get or pass on."""
        settings = session.settings
        return secret_guard(
            env=self.deps.env,
            providers=self._catalogs[session.id].all(),
            tool_config=settings.tool_config,
            mcp_config=settings.mcp_config,
            mcp_servers=session.mcp.specs() if session.mcp is not None else (),
        )

    def _turn_env(self, session: Session, link: ClientLink) -> TurnEnv:
        catalog = self._catalogs[session.id]
        spec = catalog.get(session.settings.provider)
        credentials = catalog.credentials(spec)
        if credentials is None:
            from .agents import missing_credentials_fix

            raise AuthRequired(spec.id, missing_credentials_fix(catalog, spec, self.deps.env))
        if spec.id in self.logged_out and credentials.kind in OAUTH_KINDS:
            raise AuthRequired(
                spec.id,
                f'Call authenticate with methodId "{spec.id}{AUTH_METHOD_SUFFIX}" to use it again.',
                why=f"You logged out of provider '{spec.id}' in this connection.",
            )
        try:
            provider = self.deps.providers.get(spec, credentials)
        except UnsupportedWireApi as exc:
            raise InvalidParams(
                str(exc),
                [
                    Issue(
                        key=f"model_providers.{spec.id}.wire_api",
                        message="not supported yet",
                        value=spec.wire_api,
                        valid=WIRE_APIS,
                    )
                ],
            ) from None
        settings = session.settings
        window = settings.context_window or spec.context_window(settings.model)
        return TurnEnv(
            provider=provider,
            context_window=window or 128_000,
            tools=self.subagents.tools_for(session, self.deps.tools),
            family=prompt_family(spec.wire_api, settings.model),
            allowed=allowed_tools(settings.allowed_tools, settings.phase),
            link=link,
            sandbox=SandboxPolicy.create(
                settings.sandbox_mode,
                session.cwd,
                settings.sandbox_unavailable,
                protected=(self.deps.paths.config_dir, self.deps.paths.data_dir),
                hidden_files=login_files(self.deps.env),
                hidden_dirs=self.checkpoints.hidden_dirs(),
                guard_project_config=project_trusted(self.deps.paths, session.cwd),
                network=settings.network_access,
                extra_roots=(*settings.writable_roots, *settings.added_dirs),
            ),
            rules_file=self.deps.paths.config_file,
            refresh_rules=lambda: self.refresh_rules(session),
            env=self.deps.env,
            accepts_images=takes_images(spec.id, settings.model),
            price=billable_price(spec, credentials, settings.model, self.deps.env),
            model_problem=spec.model_problem,
            secrets=self._secrets(session),
            code=self.deps.code,
        )

    async def logout(self, catalog: ProviderCatalog) -> list[str]:
        """End the OAuth logins (see engine/auth.py): their providers need `authenticate`
        again, and the provider clients holding their tokens are closed."""
        ended = oauth_logins(catalog)
        self.logged_out.update(ended)
        await self.deps.providers.forget(OAUTH_KINDS)
        return ended

    def allowed_tools_of(self, session_id: str) -> frozenset[str] | None:
        settings = self.get(session_id).settings
        return allowed_tools(settings.allowed_tools, settings.phase)

    def cancel(self, session_id: str) -> bool:
        """Cancel the running turn, if any, and answer every queued prompt `cancelled`.
        Unknown sessions are ignored (a notification)."""
        session = self._live.get(session_id)
        if session is None:
            return False
        self.subagents.cancel_children(session_id)  # background ones too
        dropped = session.queue.cancel_all()
        if session.turn is None or session.turn.done():
            return dropped > 0
        self._cancel_turn(session.turn)
        return True

    def _cancel_turn(self, task: asyncio.Task[Any]) -> None:
        """Cancel a turn once. A second cancel (editors repeat `session/cancel`) would land
        in the turn's own cleanup: abandon a tool being stopped, skip closing its calls, and
        answer the prompt with an error instead of `cancelled`."""
        if task.done() or task in self._cancelled:
            return
        self._cancelled.add(task)
        task.cancel()

    # -- processes --------------------------------------------------------------------------

    def processes(self, session_id: str) -> tuple[list[ProcessInfo], int]:
        """The session's processes and how many may outlive their call at once."""
        session = self.get(session_id)
        return list_processes(session.processes), self.deps.processes.per_session

    async def kill_process(self, session_id: str, process_id: int) -> tuple[ProcessInfo, bool]:
        """Stop one of the session's processes for a client; it, and whether it ran."""
        return await kill_process(self.get(session_id).processes, process_id)

    # -- settings ---------------------------------------------------------------------------

    def catalog_of(self, session: Session) -> ProviderCatalog:
        """The providers as this session sees them (its configuration)."""
        return self._catalogs[session.id]

    def config_options(self, session: Session) -> list[SessionConfigOption]:
        catalog = self._catalogs[session.id]
        providers = [spec.id for spec in catalog.all()]
        spec = catalog.get(session.settings.provider)
        return build_config_options(session.settings, providers, [m.id for m in spec.models])

    def set_config_option(
        self, session_id: str, config_id: str, value: Any, link: ClientLink | None
    ) -> list[SessionConfigOption]:
        session = self.get(session_id)
        catalog = self._catalogs[session.id]
        self._check_option(session, catalog, config_id, value)
        changed = apply_config_option(
            session.settings,
            config_id,
            value,
            providers={s.id: s.default_model for s in catalog.all()},
        )
        if changed.backend != session.settings.backend:
            if session.history or session.busy:
                raise InvalidParams(
                    "The agent (backend) of a session is fixed once it has a turn; start a new "
                    "session with _meta.cody.backend instead.",
                    [Issue(key="backend", message="fixed after the first turn", value=value)],
                )
            from .agents import check_backend_installed

            check_backend_installed(changed.backend, self.deps.env)
        self._apply_settings(session, changed, mode_of(session.settings), link)
        return self.config_options(session)

    @staticmethod
    def _check_option(
        session: Session, catalog: ProviderCatalog, config_id: str, value: Any
    ) -> None:
        """Refuse at once what would only fail at the next prompt: a model the provider does
        not have, a provider without credentials."""
        if config_id == "model" and isinstance(value, str) and value.strip():
            spec = catalog.get(session.settings.provider)
            problem = spec.model_problem(value.strip())
            if problem is not None and spec.wire_api == "offline":
                problem = offline_model_problem(
                    value.strip(), catalog, auto=False, choose=PROVIDER_OPTION
                )
            if problem is not None:
                raise InvalidParams(
                    problem,
                    [
                        Issue(
                            key="model",
                            message="not a model of this provider",
                            value=value,
                            valid=spec.model_ids,
                            source="params",
                        )
                    ],
                )
        if config_id == "provider" and isinstance(value, str) and value in catalog.ids():
            spec = catalog.get(value)
            if catalog.credentials(spec) is None:
                raise AuthRequired(spec.id, catalog.missing_credentials_fix(spec))

    def set_mode(self, session_id: str, mode_id: str, link: ClientLink | None) -> None:
        session = self.get(session_id)
        changed = apply_mode(session.settings, mode_id)
        self._apply_settings(session, changed, mode_of(session.settings), link)

    def _apply_settings(
        self, session: Session, settings: SessionSettings, before_mode: str, link: ClientLink | None
    ) -> None:
        session.settings = settings
        session.file.append("event", {"kind": "config", "settings": settings.persisted()})
        if link is not None:
            mode = mode_of(settings)
            link.emit(
                session.id,
                ConfigChanged(
                    options=self.config_options(session),
                    mode_id=mode,
                    mode_changed=mode != before_mode,
                ),
            )

    # -- listing, closing, deleting, forking ------------------------------------------------

    async def list_sessions(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        """One page of stored sessions; the files are read in the scan pool, off the loop."""
        start = 0
        if cursor:
            try:
                start = int(cursor)
            except ValueError:
                raise InvalidParams(
                    "Invalid cursor; pass the nextCursor of a previous session/list answer.",
                    [Issue(key="cursor", message="not a cursor from session/list", value=cursor)],
                ) from None
        # Only sessions that were prompted (as codex-acp lists them): a chat's own new,
        # untitled session would otherwise top every list.
        stored = await self.deps.scans.run(self.deps.store.list, cwd)
        summaries = [s for s in stored if s.has_turn]
        page = summaries[start : start + LIST_PAGE_SIZE]
        infos = [
            SessionInfo(
                session_id=s.session_id,
                cwd=s.cwd,
                title=s.title,
                updated_at=s.updated_at,
                meta=_listed_meta(s.forked_from, s.at_message, s.parent_session_id),
            )
            for s in page
        ]
        next_cursor = (
            str(start + LIST_PAGE_SIZE) if start + LIST_PAGE_SIZE < len(summaries) else None
        )
        return infos, next_cursor

    async def close(self, session_id: str) -> WorktreeInfo | None:
        session = self.get(session_id)
        return await self._close(session)

    async def _close(self, session: Session) -> WorktreeInfo | None:
        """Close the session (its children first); a worktree session's worktree is kept
        when something changed in it, else removed (what became of it is returned)."""
        session.queue.cancel_all()
        if session.turn is not None and not session.turn.done():
            self._cancel_turn(session.turn)
            await asyncio.wait({session.turn})
        await self.subagents.close_children(session)
        self._live.pop(session.id, None)
        self._catalogs.pop(session.id, None)
        await _stop_agent(session)
        await _close_mcp(session)
        if session.hooks is not None:
            await session.hooks.close()
        if self.deps.code is not None:
            await self.deps.code.release(session.id)
        await session.file.sync()
        _close_file(session)  # first: a client may load the session again at once
        if session.ephemeral and session.checkpoints.entries:
            self.checkpoints.forget(session.id)  # nobody can rewind it any more
        await _stop_processes(session)  # before its worktree may be removed
        return await self.worktrees.finish(session)

    async def delete(self, session_id: str) -> None:
        live = self._live.get(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn; cancel it first.")
            await self._close(live)
            if not _kept_on_close(live):
                return  # never prompted, or ephemeral: closing it removed its file
        self.deps.store.delete(session_id)
        self.checkpoints.forget(session_id)

    async def fork(
        self,
        session_id: str,
        cwd: str,
        at_message: int | None,
        mcp_servers: Sequence[McpServer] = (),
    ) -> Session:
        """A new session with the history of `session_id` up to user message `at_message`,
        and the context items (project instructions, permissions) sent with that history."""
        live = self._live.get(session_id)
        if live is not None:
            source_items = list(live.history)
            source_context = list(live.context_items)
        else:
            stored = read_session(self.deps.store.find(session_id))
            source_items = stored.items
            source_context = [
                entry for entry in map(ContextEntry.from_event, stored.context) if entry is not None
            ]
        settings_source = live.settings.persisted() if live is not None else None
        users = sum(1 for item in source_items if _is_user_message(item))
        if at_message is not None and not 0 <= at_message < users:
            has = (
                f"has {users} user message{'s' if users != 1 else ''}, numbered 0 to {users - 1}"
                if users
                else "has no user message yet"
            )
            raise InvalidParams(
                f"There is no user message {at_message} to fork at: session {session_id} {has}.",
                [
                    Issue(
                        key="atMessage",
                        message="no such user message",
                        value=at_message,
                        source="params",
                    )
                ],
            )
        items = _cut_history(source_items, at_message)
        # A fork is a native session whatever config.toml chooses: the copied history is
        # Cody's, and no agent CLI has a thread for it.
        session = await self.new_session(
            cwd,
            CodySessionMeta(backend="native"),
            mcp_servers,
            read_docs=False,
            start_source="resume",
        )
        if settings_source is not None:
            self._apply_persisted(session, settings_source)
        session.file.append(
            "event", {"kind": "forked", "from": session_id, "atMessage": at_message}
        )
        kept = {item_key(item) for item in items}
        context = [e for e in source_context if e.after is None or e.after in kept]
        if not any(entry.kind == "project_docs" for entry in context):
            await self._read_project_docs(session)  # the source had none recorded
        for entry in context:  # the fork sends what the source sent with this history
            record(session, entry)
        for item in items:
            session.history.append(item)
            session.file.append("response_item", item.payload())
        return session

    def _apply_persisted(self, session: Session, persisted: dict[str, Any]) -> None:
        settings = session.settings.copy()
        settings.provider = persisted.get("model_provider") or settings.provider
        if persisted.get("backend", "native") == "native":  # a CLI's model is not the provider's
            settings.model = persisted.get("model") or settings.model
        settings.approval_policy = persisted.get("approval_policy") or settings.approval_policy
        settings.sandbox_mode = persisted.get("sandbox_mode") or settings.sandbox_mode
        session.settings = settings
        session.file.append("event", {"kind": "config", "settings": settings.persisted()})

    # -- shutdown ---------------------------------------------------------------------------

    async def shutdown(self) -> None:
        for session in self._live.values():
            session.queue.cancel_all()
        turns = [s.turn for s in self._live.values() if s.turn is not None and not s.turn.done()]
        for turn in turns:
            self._cancel_turn(turn)
        if turns:
            await asyncio.wait(turns, timeout=5)
        await self.subagents.stop_all()
        for session in list(self._live.values()):
            try:
                await _stop_agent(session)
                await _close_mcp(session)
                if session.hooks is not None:
                    await session.hooks.close()
                await session.file.sync()
            finally:
                _close_file(session)
        closing = list(self._live.values())
        ephemeral = [s for s in closing if s.ephemeral and s.checkpoints.entries]
        self._live.clear()
        await self.checkpoints.aclose()
        for session in ephemeral:  # its ref only: the objects go at the repository's next prune
            await self.checkpoints.drop_ref(session)
        await self.notifier.aclose()
        await self.deps.processes.close()  # every session's processes, then the launcher
        for session in closing:  # after its processes: an unchanged worktree is removed
            await self.worktrees.finish(session)
        await self.deps.providers.aclose()
        await self.deps.tools.aclose()
        if self.deps.code is not None:
            await self.deps.code.aclose()
        self.deps.scans.shutdown()


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


def _listed_meta(
    forked_from: str | None, at_message: int | None, parent_session_id: str | None
) -> ListedSessionMeta | None:
    """A listed session's `_meta`: whose fork it is, whose child (subagent) it is (none for a
    session that is neither)."""
    if forked_from is None and parent_session_id is None:
        return None
    return ListedSessionMeta(
        cody=CodySessionInfoMeta(
            forked_from=forked_from, at_message=at_message, parent_session_id=parent_session_id
        )
    )


def _is_user_message(item: Any) -> bool:
    return getattr(item, "type", None) == "message" and getattr(item, "role", None) == "user"


def _cut_history(items: list[Any], at_message: int | None) -> list[Any]:
    if at_message is None:
        return items
    seen = -1
    for index, item in enumerate(items):
        if _is_user_message(item):
            seen += 1
            if seen == at_message + 1:
                return items[:index]
    return items


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
