"""The composition root: configuration, store, providers, tools, engine and rpc, wired once.

No module-level state: two apps can live in one process (the tests do this).

Startup: the rpc server and its handlers exist from the start; the engine (store, tools,
providers, session manager) and the client link are built on first use, so `initialize`
is answered without importing what sessions and turns need (bench/README.md, "startup";
tests/unit/test_lazy_imports.py keeps it so).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .config.paths import CodyPaths
from .initialize_answer import daemon_locations_of, initialize_answer
from .providers.catalog import ProviderCatalog, default_claude_dir, default_codex_home
from .providers.listing import validated_listing
from .rpc.handlers import register_handlers
from .rpc.server import CodyServer

if TYPE_CHECKING:
    from cody_protocol.initialize import ClientCapabilities

    from .config.model import ToolConfig
    from .engine.deps import EngineDeps
    from .engine.manager import SessionManager
    from .engine.subagents.lineage import Lineage
    from .rpc.link import RpcClientLink

__all__ = ["DaemonApp", "Engine"]


class Engine:
    """The store, tools, providers and session manager: built on first use, one per daemon
    (every connection of a warm daemon shares its app's, rpc/connections.py)."""

    def __init__(self, *, env: Mapping[str, str], paths: CodyPaths) -> None:
        self.env = dict(env)
        self.paths = paths

    @property
    def codex_home(self) -> Path:
        return default_codex_home(self.env)

    @property
    def claude_dir(self) -> Path:
        return default_claude_dir(self.env)

    @property
    def built(self) -> bool:
        """Whether the session manager exists (if not, there is no session to persist)."""
        return "manager" in vars(self)

    @cached_property
    def deps(self) -> EngineDeps:
        from .checkpoints.store import CheckpointStore
        from .engine.deps import EngineDeps
        from .lsp.service import LanguageServers  # no pygls: the pool loads on first use
        from .providers.pool import ProviderPool
        from .store.store import SessionStore
        from .tools.registry import ToolRegistry
        from .tools.symbols import SymbolsTool

        code = LanguageServers(env=self.env)
        tools = ToolRegistry.builtin()
        tools.register(SymbolsTool(code))
        return EngineDeps(
            paths=self.paths,
            store=SessionStore(self.paths.sessions_dir),
            tools=tools,
            providers=ProviderPool(env=self.env),
            env=self.env,
            codex_home=self.codex_home,
            claude_dir=self.claude_dir,
            version=__version__,
            checkpoints=CheckpointStore(self.paths.data_dir, self.env),
            code=code,
        )

    @cached_property
    def manager(self) -> SessionManager:
        from .engine.manager import SessionManager

        return SessionManager(self.deps)


class DaemonApp:
    """One client's daemon: its pygls server, link and client capabilities over an `Engine`
    (its own, or with `engine`, a warm daemon's shared one; `server`: a server of a kind the
    caller chose, rpc/connections.py). Every app, a warm connection's included, is built by
    this constructor (tests/unit/test_warm_connection_app.py)."""

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        paths: CodyPaths,
        engine: Engine | None = None,
        server: CodyServer | None = None,
    ) -> None:
        self.engine = engine if engine is not None else Engine(env=env, paths=paths)
        self.env = self.engine.env
        self.paths = self.engine.paths
        self.server = server if server is not None else CodyServer()
        self._client_capabilities: dict[str, Any] = {}
        """What `initialize` said, in its wire form (a valid `ClientCapabilities`)."""
        self._shutdown_started = False
        register_handlers(self.server, self)

    @property
    def codex_home(self) -> Path:
        return self.engine.codex_home

    @property
    def claude_dir(self) -> Path:
        return self.engine.claude_dir

    @property
    def deps(self) -> EngineDeps:
        return self.engine.deps

    @property
    def manager(self) -> SessionManager:
        """The engine's session manager; events outside any request go to this app's link
        unless the engine's owner chose a link for them first (a warm daemon's broadcast)."""
        manager = self.engine.manager
        if manager.link is None:
            manager.link = self.link
        return manager

    @cached_property
    def link(self) -> RpcClientLink:
        link = self._new_link()
        link.capabilities = self._capabilities_model()
        link.lineage_of = self._lineage_of
        return link

    def _new_link(self) -> RpcClientLink:
        """The client link over this app's server (a warm connection's shares sessions)."""
        from .rpc.link import RpcClientLink

        return RpcClientLink(self.server.protocol)

    def _lineage_of(self, session_id: str) -> Lineage | None:
        """A live child session's parent (none while the engine is not built)."""
        return self.engine.manager.lineage_of(session_id) if self.engine.built else None

    def set_client_capabilities(self, wire: dict[str, Any]) -> None:
        """What `initialize` said, as the wire form of a valid `ClientCapabilities`; the
        client link (built now or later) follows it."""
        self._client_capabilities = wire
        if "link" in vars(self):
            self.link.capabilities = self._capabilities_model()

    def _capabilities_model(self) -> ClientCapabilities:
        from cody_protocol.initialize import ClientCapabilities

        return ClientCapabilities.model_validate(self._client_capabilities)

    def user_catalog(self) -> ProviderCatalog:
        """Providers as the user config defines them (defaults if that config is invalid)."""
        return validated_listing(
            self.paths, env=self.env, codex_home=self.codex_home, claude_dir=self.claude_dir
        ).catalog

    def default_tool_config(self) -> dict[str, ToolConfig]:
        """`[tools.*]` of the user config (none when it is invalid): what a tool listing
        without a session judges the tools by."""
        from .config.loader import load_user_config
        from .errors import InvalidParams

        try:
            return dict(load_user_config(self.paths).tools)
        except InvalidParams:
            return {}

    def initialize_result(self) -> dict[str, Any]:
        """`initialize`'s answer as JSON (initialize_answer.py: no pydantic import)."""
        return initialize_answer(self.env, self.paths)

    def locations(self) -> dict[str, str]:
        """Where this daemon reads from, as `initialize` reports it (`DaemonLocations`)."""
        return daemon_locations_of(self.env, self.paths)

    async def shutdown(self) -> None:
        """Cancel running turns, persist and close every session (idempotent)."""
        if self._shutdown_started:
            return
        self._shutdown_started = True
        if self.engine.built:  # else no session to persist
            await self.engine.manager.shutdown()
