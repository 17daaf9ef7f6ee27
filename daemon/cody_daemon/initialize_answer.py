"""`initialize`'s answer, as JSON: what `DaemonApp.initialize_result` returns and what
rpc/first_answer.py writes before the server exists (one function, so the two are the same).
Beside app.py (the composition root) because it reads the config, provider and program
layers, which rpc/ does not import; cli.py hands it to rpc/first_answer.py.

Built without the models (rpc/initialize_wire.py) from the provider listing
(providers/listing.py) and the bwrap/rg probe (policy/programs.py): no pydantic, no asyncio,
no pygls import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cody_protocol.methods import extensions

from . import __version__
from .config.paths import CodyPaths
from .engine.auth import AUTH_METHOD_SUFFIX
from .policy.programs import binaries_report
from .providers.catalog import ProviderCatalog, default_claude_dir, default_codex_home
from .providers.listing import provider_listing
from .providers.models import takes_images
from .rpc.initialize_wire import initialize_result

__all__ = ["daemon_locations_of", "initialize_answer"]


def initialize_answer(env: Mapping[str, str], paths: CodyPaths) -> dict[str, Any]:
    """The result of `initialize` for a daemon with `env` and `paths`."""
    codex_home, claude_dir = default_codex_home(env), default_claude_dir(env)
    listing = provider_listing(paths, env=env, codex_home=codex_home, claude_dir=claude_dir)
    catalog = listing.catalog
    default = listing.default().id
    providers = []
    auth_methods = []
    for spec in catalog.all():
        where = catalog.auth_description(spec)
        providers.append(
            {
                "id": spec.id,
                "name": spec.name,
                "wireApi": spec.wire_api,
                "defaultModel": spec.default_model,
                "available": catalog.credentials(spec) is not None,
                "credentials": where,
            }
        )
        auth_methods.append(
            {"id": f"{spec.id}{AUTH_METHOD_SUFFIX}", "name": spec.name, "description": where}
        )

    # The default provider's method first: some ACP clients authenticate with the first one.
    auth_methods.sort(key=lambda method: method["id"] != f"{default}{AUTH_METHOD_SUFFIX}")
    return initialize_result(
        version=__version__,
        images=_any_takes_images(catalog),
        auth_methods=auth_methods,
        providers=providers,
        default_provider=default,
        extensions=list(extensions()),
        data_dir=str(paths.data_dir),
        config_file=str(paths.config_file),
        binaries=binaries_report(),
        locations=daemon_locations_of(env, paths),
    )


def daemon_locations_of(env: Mapping[str, str], paths: CodyPaths) -> dict[str, str]:
    """Where a daemon with `env` and `paths` reads from, as `initialize` reports it
    (`DaemonLocations`): the paths it really uses, so a client whose environment names
    others is not served."""
    from cody_protocol.locations import home_dir

    def clean(path: Path) -> str:
        return os.path.normpath(os.path.abspath(path))

    return {
        "home": home_dir(env),
        "configDir": clean(paths.config_dir),
        "dataDir": clean(paths.data_dir),
        "codexHome": clean(default_codex_home(env)),
        "claudeConfigDir": clean(default_claude_dir(env)),
    }


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
