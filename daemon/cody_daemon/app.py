"""The composition root: configuration, store, providers, tools, engine and rpc, wired once.

No module-level state: two apps can live in one process (the tests do this).
"""

from __future__ import annotations

from collections.abc import Mapping

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
from .engine.deps import EngineDeps
from .engine.images import takes_images
from .engine.manager import SessionManager
from .errors import InvalidParams
from .policy.programs import binaries_report
from .providers.catalog import ProviderCatalog, default_claude_dir, default_codex_home
from .providers.pool import ProviderPool
from .rpc.handlers import EXTENSIONS, register_handlers
from .rpc.link import RpcClientLink
from .rpc.server import CodyServer
from .store.store import SessionStore
from .tools.registry import ToolRegistry

__all__ = ["DaemonApp"]


class DaemonApp:
    def __init__(self, *, env: Mapping[str, str], paths: CodyPaths) -> None:
        self.env = dict(env)
        self.paths = paths
        self.deps = EngineDeps(
            paths=paths,
            store=SessionStore(paths.sessions_dir),
            tools=ToolRegistry.builtin(),
            providers=ProviderPool(env=self.env),
            env=self.env,
            codex_home=default_codex_home(self.env),
            claude_dir=default_claude_dir(self.env),
            version=__version__,
        )
        self.manager = SessionManager(self.deps)
        self.server = CodyServer()
        self.link = RpcClientLink(self.server.protocol)
        self.manager.link = self.link
        self.client_capabilities = ClientCapabilities()
        self._shutdown_started = False
        register_handlers(self.server, self)

    def user_catalog(self) -> ProviderCatalog:
        """Providers as the user config defines them (defaults if that config is invalid)."""
        try:
            config = load_user_config(self.paths)
        except InvalidParams:
            config = CodyConfig()
        return ProviderCatalog.from_config(
            config,
            env=self.env,
            codex_home=self.deps.codex_home,
            claude_dir=self.deps.claude_dir,
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
