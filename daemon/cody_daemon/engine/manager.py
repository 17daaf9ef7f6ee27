"""The session manager: many sessions per daemon, one running turn per session.

Invariants: a session is live (in `_live`) exactly while its file is open and locked; a
second prompt on a busy session fails with SessionBusy (-32011) and changes nothing;
`shutdown()` cancels every turn, waits for their cleanup and closes every file.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from cody_protocol.content import ContentBlock
from cody_protocol.session import CodySessionMeta, McpServer, SessionConfigOption, SessionInfo

from ..errors import AuthRequired, InvalidParams, Issue, NotFound, SessionBusy
from ..policy.allowlist import allowed_tools
from ..policy.sandbox import SandboxPolicy
from ..providers.catalog import ProviderCatalog
from ..providers.pool import UnsupportedWireApi
from ..providers.pricing import billable_price
from ..store.reader import read_session
from ..tools.mcp import McpSessionManager, McpSpecError, McpStatus, build_specs
from ..tools.registry import ToolRegistry
from .deps import EngineDeps
from .events import ConfigChanged, McpStatusChanged
from .loading import SessionLoader
from .ports import ClientLink
from .replay import prompt_to_text, replay_events
from .session import Session, TurnOutcome
from .settings import (
    SessionSettings,
    apply_config_option,
    apply_mode,
    build_config_options,
    mode_of,
)
from .turn import TurnEnv, TurnRunner

__all__ = ["LIST_PAGE_SIZE", "SessionManager"]

logger = logging.getLogger(__name__)

LIST_PAGE_SIZE = 100


class SessionManager:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps
        self._live: dict[str, Session] = {}
        self._catalogs: dict[str, ProviderCatalog] = {}
        self._loader = SessionLoader(deps)
        self.link: ClientLink | None = None
        """Where out-of-turn events (MCP server status) go; set by the rpc layer."""

    # -- creating and opening ---------------------------------------------------------------

    def new_session(
        self, cwd: str, meta: CodySessionMeta | None, mcp_servers: Sequence[McpServer] = ()
    ) -> Session:
        session, catalog = self._loader.create(cwd, meta)
        try:
            self._attach_mcp(session, mcp_servers)
        except BaseException:
            session.file.close()
            raise
        self._register(session, catalog)
        return session

    def _attach_mcp(self, session: Session, servers: Sequence[McpServer]) -> None:
        """Give the session its MCP servers and start them in the background (lazily, once)."""
        try:
            specs = build_specs(
                session.settings.mcp_config, list(servers), env=self.deps.env, cwd=str(session.cwd)
            )
        except McpSpecError as exc:
            raise InvalidParams(
                str(exc), [Issue(key="mcpServers", message=str(exc), source="params")]
            ) from None
        if not specs:
            return
        session_id = session.id

        def report(status: McpStatus) -> None:
            if self.link is not None:
                self.link.emit(
                    session_id,
                    McpStatusChanged(
                        server=status.server,
                        state=status.state,
                        reason=status.reason,
                        tools=status.tools,
                    ),
                )

        session.mcp = McpSessionManager(specs, on_status=report)
        session.mcp_warmup = asyncio.get_running_loop().create_task(session.mcp.session_tools())

    def _register(self, session: Session, catalog: ProviderCatalog) -> None:
        self._live[session.id] = session
        self._catalogs[session.id] = catalog

    async def open_session(
        self,
        session_id: str,
        link: ClientLink | None,
        *,
        replay: bool,
        mcp_servers: Sequence[McpServer] = (),
    ) -> Session:
        """Make a stored session live (`session/load` replays it to `link`, resume does not)."""
        live = self._live.get(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn.")
        else:
            live = self._open_from_disk(session_id, mcp_servers)
        if replay and link is not None:
            for event in replay_events(live.history, self.deps.tools):
                link.emit(live.id, event)
                await link.wait_writable()
            await link.flush(live.id)
        return live

    def _open_from_disk(self, session_id: str, mcp_servers: Sequence[McpServer]) -> Session:
        session, catalog = self._loader.open(session_id)
        try:
            self._attach_mcp(session, mcp_servers)
        except BaseException:
            session.file.close()
            raise
        self._register(session, catalog)
        return session

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
        self, session_id: str, blocks: list[ContentBlock], link: ClientLink
    ) -> TurnOutcome:
        session = self.get(session_id)
        if session.busy:
            raise SessionBusy(f"Session {session_id} is already running a turn; wait or cancel it.")
        env = self._turn_env(session, link)
        if session.mcp is not None:
            extra = await session.mcp.session_tools()
            env.tools = ToolRegistry([*self.deps.tools.tools(), *extra])
        runner = TurnRunner(session, env)
        task = asyncio.create_task(runner.run(prompt_to_text(blocks)))
        session.turn = task
        try:
            return await task
        except asyncio.CancelledError:
            # The request itself was cancelled ($/cancelRequest): let the turn clean up.
            task.cancel()
            await asyncio.wait({task})
            raise
        finally:
            if session.turn is task:
                session.turn = None

    def _turn_env(self, session: Session, link: ClientLink) -> TurnEnv:
        catalog = self._catalogs[session.id]
        spec = catalog.get(session.settings.provider)
        credentials = catalog.credentials(spec)
        if credentials is None:
            raise AuthRequired(spec.id, catalog.missing_credentials_fix(spec))
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
                        valid=("responses", "chat", "anthropic"),
                    )
                ],
            ) from None
        window = spec.context_window(session.settings.model)
        settings = session.settings
        return TurnEnv(
            provider=provider,
            context_window=window or 128_000,
            tools=self.deps.tools,
            allowed=allowed_tools(settings.allowed_tools, settings.phase),
            link=link,
            sandbox=SandboxPolicy.create(
                settings.sandbox_mode, session.cwd, settings.sandbox_unavailable
            ),
            env=self.deps.env,
            price=billable_price(spec, credentials, settings.model, self.deps.env),
        )

    def allowed_tools_of(self, session_id: str) -> frozenset[str] | None:
        settings = self.get(session_id).settings
        return allowed_tools(settings.allowed_tools, settings.phase)

    def cancel(self, session_id: str) -> bool:
        """Cancel the running turn, if any. Unknown sessions are ignored (a notification)."""
        session = self._live.get(session_id)
        if session is None or session.turn is None or session.turn.done():
            return False
        session.turn.cancel()
        return True

    # -- settings ---------------------------------------------------------------------------

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
        changed = apply_config_option(
            session.settings,
            config_id,
            value,
            providers={s.id: s.default_model for s in catalog.all()},
        )
        self._apply_settings(session, changed, mode_of(session.settings), link)
        return self.config_options(session)

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

    def list_sessions(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        start = 0
        if cursor:
            try:
                start = int(cursor)
            except ValueError:
                raise InvalidParams(
                    "Invalid cursor; pass the nextCursor of a previous session/list answer.",
                    [Issue(key="cursor", message="not a cursor from session/list", value=cursor)],
                ) from None
        summaries = self.deps.store.list(cwd)
        page = summaries[start : start + LIST_PAGE_SIZE]
        infos = [
            SessionInfo(session_id=s.session_id, cwd=s.cwd, title=s.title, updated_at=s.updated_at)
            for s in page
        ]
        next_cursor = (
            str(start + LIST_PAGE_SIZE) if start + LIST_PAGE_SIZE < len(summaries) else None
        )
        return infos, next_cursor

    async def close(self, session_id: str) -> None:
        session = self.get(session_id)
        await self._close(session)

    async def _close(self, session: Session) -> None:
        if session.turn is not None and not session.turn.done():
            session.turn.cancel()
            await asyncio.wait({session.turn})
        self._live.pop(session.id, None)
        self._catalogs.pop(session.id, None)
        await _close_mcp(session)
        await session.file.sync()
        session.file.close()

    async def delete(self, session_id: str) -> None:
        live = self._live.get(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn; cancel it first.")
            await self._close(live)
        self.deps.store.delete(session_id)

    def fork(
        self,
        session_id: str,
        cwd: str,
        at_message: int | None,
        mcp_servers: Sequence[McpServer] = (),
    ) -> Session:
        """A new session with the history of `session_id` up to user message `at_message`."""
        live = self._live.get(session_id)
        source_items = (
            list(live.history)
            if live is not None
            else read_session(self.deps.store.find(session_id)).items
        )
        settings_source = live.settings.persisted() if live is not None else None
        items = _cut_history(source_items, at_message)
        session = self.new_session(cwd, None, mcp_servers)
        if settings_source is not None:
            self._apply_persisted(session, settings_source)
        session.file.append(
            "event", {"kind": "forked", "from": session_id, "atMessage": at_message}
        )
        for item in items:
            session.history.append(item)
            session.file.append("response_item", item.payload())
        return session

    def _apply_persisted(self, session: Session, persisted: dict[str, Any]) -> None:
        settings = session.settings.copy()
        settings.provider = persisted.get("model_provider") or settings.provider
        settings.model = persisted.get("model") or settings.model
        settings.approval_policy = persisted.get("approval_policy") or settings.approval_policy
        settings.sandbox_mode = persisted.get("sandbox_mode") or settings.sandbox_mode
        session.settings = settings
        session.file.append("event", {"kind": "config", "settings": settings.persisted()})

    # -- shutdown ---------------------------------------------------------------------------

    async def shutdown(self) -> None:
        turns = [s.turn for s in self._live.values() if s.turn is not None and not s.turn.done()]
        for turn in turns:
            turn.cancel()
        if turns:
            await asyncio.wait(turns, timeout=5)
        for session in list(self._live.values()):
            try:
                await _close_mcp(session)
                await session.file.sync()
            finally:
                session.file.close()
        self._live.clear()
        await self.deps.providers.aclose()
        await self.deps.tools.aclose()


async def _close_mcp(session: Session) -> None:
    if session.mcp_warmup is not None:
        session.mcp_warmup.cancel()
    if session.mcp is not None:
        await session.mcp.aclose()


def _cut_history(items: list[Any], at_message: int | None) -> list[Any]:
    if at_message is None:
        return items
    seen = -1
    for index, item in enumerate(items):
        if getattr(item, "type", None) == "message" and getattr(item, "role", None) == "user":
            seen += 1
            if seen == at_message + 1:
                return items[:index]
    return items
