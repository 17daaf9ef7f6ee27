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
from typing import TYPE_CHECKING

from cody_protocol.initialize import (
    AgentCapabilities,
    AuthMethod,
    ClientCapabilities,
    CodyInitializeMeta,
    Implementation,
    InitializeMeta,
    InitializeResult,
    PromptCapabilities,
    ProviderInfo,
)

from . import __version__
from .config.loader import load_user_config
from .config.model import CodyConfig
from .config.paths import CodyPaths
from .engine.auth import AUTH_METHOD_SUFFIX
from .errors import InvalidParams
from .policy.programs import binaries_report
from .providers.catalog import ProviderCatalog, default_claude_dir, default_codex_home
from .providers.models import takes_images
from .rpc.handlers import EXTENSIONS, register_handlers
from .rpc.server import CodyServer

if TYPE_CHECKING:
    from .engine.deps import EngineDeps
    from .engine.manager import SessionManager
    from .rpc.link import RpcClientLink

__all__ = ["DaemonApp"]


class DaemonApp:
    def __init__(self, *, env: Mapping[str, str], paths: CodyPaths) -> None:
        self.env = dict(env)
        self.paths = paths
        self.server = CodyServer()
        self._client_capabilities = ClientCapabilities()
        self._shutdown_started = False
        register_handlers(self.server, self)

    @property
    def codex_home(self) -> Path:
        return default_codex_home(self.env)

    @property
    def claude_dir(self) -> Path:
        return default_claude_dir(self.env)

    @cached_property
    def deps(self) -> EngineDeps:
        from .engine.deps import EngineDeps
        from .providers.pool import ProviderPool
        from .store.store import SessionStore
        from .tools.registry import ToolRegistry

        return EngineDeps(
            paths=self.paths,
            store=SessionStore(self.paths.sessions_dir),
            tools=ToolRegistry.builtin(),
            providers=ProviderPool(env=self.env),
            env=self.env,
            codex_home=self.codex_home,
            claude_dir=self.claude_dir,
            version=__version__,
        )

    @cached_property
    def link(self) -> RpcClientLink:
        from .rpc.link import RpcClientLink

        link = RpcClientLink(self.server.protocol)
        link.capabilities = self._client_capabilities
        return link

    @cached_property
    def manager(self) -> SessionManager:
        from .engine.manager import SessionManager

        manager = SessionManager(self.deps)
        manager.link = self.link
        return manager

    @property
    def client_capabilities(self) -> ClientCapabilities:
        return self._client_capabilities

    @client_capabilities.setter
    def client_capabilities(self, capabilities: ClientCapabilities) -> None:
        """What `initialize` said; the client link (built now or later) follows it."""
        self._client_capabilities = capabilities
        if "link" in vars(self):
            self.link.capabilities = capabilities

    def user_catalog(self) -> ProviderCatalog:
        """Providers as the user config defines them (defaults if that config is invalid)."""
        try:
            config = load_user_config(self.paths)
        except InvalidParams:
            config = CodyConfig()
        return ProviderCatalog.from_config(
            config,
            env=self.env,
            codex_home=self.codex_home,
            claude_dir=self.claude_dir,
        )

    def initialize_result(self) -> InitializeResult:
        catalog = self.user_catalog()
        try:
            default = catalog.resolve(load_user_config(self.paths).model_provider).id
        except InvalidParams:
            default = catalog.resolve_auto().id
        providers = []
        auth_methods = []
        for spec in catalog.all():
            available = catalog.credentials(spec) is not None
            where = catalog.auth_description(spec)
            providers.append(
                ProviderInfo(
                    id=spec.id,
                    name=spec.name,
                    wire_api=spec.wire_api,
                    default_model=spec.default_model,
                    available=available,
                    credentials=where,
                )
            )
            auth_methods.append(
                AuthMethod(
                    id=f"{spec.id}{AUTH_METHOD_SUFFIX}", name=f"{spec.name}", description=where
                )
            )

        # The default provider's method first: some ACP clients authenticate with the first one.
        auth_methods.sort(key=lambda method: method.id != f"{default}{AUTH_METHOD_SUFFIX}")
        return InitializeResult(
            agent_capabilities=AgentCapabilities(
                prompt_capabilities=PromptCapabilities(image=_any_takes_images(catalog))
            ),
            agent_info=Implementation(name="cody", title="Cody", version=__version__),
            auth_methods=auth_methods,
            meta=InitializeMeta(
                cody=CodyInitializeMeta(
                    version=__version__,
                    extensions=list(EXTENSIONS),
                    providers=providers,
                    default_provider=default,
                    data_dir=str(self.paths.data_dir),
                    config_file=str(self.paths.config_file),
                    binaries=binaries_report(),
                )
            ),
        )

    async def shutdown(self) -> None:
        """Cancel running turns, persist and close every session (idempotent)."""
        if self._shutdown_started:
            return
        self._shutdown_started = True
        if "manager" in vars(self):  # never built: no session to persist
            await self.manager.shutdown()


def _any_takes_images(catalog: ProviderCatalog) -> bool:
    """`promptCapabilities.image`: said once per daemon, so true when any model of a provider
    with credentials may take images (each prompt is then checked against its session's
    model: engine/images.py)."""
    for spec in catalog.all():
        if catalog.credentials(spec) is None:
            continue
        models = {spec.default_model, *(model.id for model in spec.models)}
        if any(takes_images(spec.id, model) for model in models):
            return True
    return False
