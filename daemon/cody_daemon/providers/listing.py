"""The providers `initialize` lists, known without the config models when config.toml is unchanged.

`initialize` reports every provider (built-in and configured), whether it has credentials
now, and which one the configured `model_provider` means. Knowing the configured providers
means validating the user's config.toml, and the validation models (pydantic) cost about
100 ms of imports: more than the rest of the daemon's start (docs/architecture.md,
"Starting fast"). So:

- No user config file: the built-in providers (nothing to validate).
- Otherwise the listing is read from `<data_dir>/cache/providers.json` when the entry's key
  matches, and the file is validated (and the entry rewritten) when it does not. The key is
  the SHA-256 of: the daemon version, the source of the modules that turn config.toml into
  specs (`_DERIVED_BY`: the version stays the same across `git pull && install.py`), the
  config file's bytes, the packaged model catalog and the base-URL environment variables
  (`BASE_URL_ENV`); the provider specs are a function of these (and of the pydantic version,
  which is not in the key: an upgrade of pydantic that changes what validates is seen when
  config.toml next changes). A missing, unreadable or damaged entry (any JSON, any shape, an
  entry without every built-in provider) is a miss. Writing the entry is atomic
  (core/atomic_write.py), and a failed write is only logged. A config file edited while it
  is validated is not cached.
- An invalid config file lists the defaults, as the daemon always did; that is cached too.
- An entry holds only what a listing shows or needs to find credentials: per provider its
  id, name, wire API, whether its base URL is the official one (not the URL: one may hold
  credentials), `env_key`, default model and models, and the configured `model_provider`.
  Never a header or query value, never a credential: the catalog looks credentials up on
  every call, so a login or an exported key is seen at once.
- The listing's catalog lists; it never calls a provider (its specs lack headers, query
  parameters, retry settings and, unless official, the base URL). Sessions and
  `authenticate` use `validated_listing`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, get_args

from ..config.paths import CodyPaths
from ..config.provider_ids import AUTO, BUILTIN_PROVIDER_IDS
from ..core.atomic_write import write_atomic
from ..core.safe_read import CONFIG_FILE_LIMIT, JSON_FILE_LIMIT, read_regular
from ..errors import InvalidParams
from .catalog import ProviderCatalog
from .models import packaged_text
from .specs import (
    BASE_URL_ENV,
    ModelSpec,
    ProviderSpec,
    ProviderWireApi,
    builtin_providers,
    official_base_url,
)

__all__ = ["CACHE_FILE", "ProviderListing", "provider_listing", "validated_listing"]

logger = logging.getLogger(__name__)

CACHE_FILE: Final = Path("cache") / "providers.json"
"""The listing cache, relative to the data directory."""

_WIRE_APIS: Final = frozenset(get_args(ProviderWireApi))

_DERIVED_BY: Final = (
    "config/loader.py",
    "config/model.py",
    "config/provider_ids.py",
    "providers/catalog.py",
    "providers/models.py",
    "providers/specs.py",
    "providers/listing.py",
    "validation.py",
)
"""The modules that turn config.toml into the listing: their bytes are part of the key (the
version stays the same across `git pull && python3 install.py`)."""


@dataclass(frozen=True, slots=True)
class ProviderListing:
    """The providers as the user config defines them, for `initialize`."""

    catalog: ProviderCatalog
    model_provider: str
    """As configured: `auto` or a provider id (an unknown one resolves as `auto`)."""

    def default(self) -> ProviderSpec:
        """The provider sessions get unless they choose: `model_provider`, resolved now."""
        try:
            return self.catalog.resolve(self.model_provider)
        except InvalidParams:
            return self.catalog.resolve_auto()


def provider_listing(
    paths: CodyPaths, *, env: Mapping[str, str], codex_home: Path, claude_dir: Path
) -> ProviderListing:
    """The listing of the user config at `paths` (see the module invariants)."""

    def catalog_of(specs: list[ProviderSpec]) -> ProviderCatalog:
        return ProviderCatalog(specs, env=env, codex_home=codex_home, claude_dir=claude_dir)

    try:
        config_bytes = read_regular(paths.config_file, CONFIG_FILE_LIMIT)
    except (FileNotFoundError, NotADirectoryError):
        return ProviderListing(catalog_of(list(builtin_providers(env))), AUTO)
    except OSError:
        config_bytes = None  # unreadable: validation reports it, and lists the defaults
    cache = paths.data_dir / CACHE_FILE
    key = _key(config_bytes, env) if config_bytes is not None else None
    cached = _read_entry(cache, key, env) if key is not None else None
    if cached is not None:
        specs, model_provider = cached
        return ProviderListing(catalog_of(specs), model_provider)

    listing = validated_listing(paths, env=env, codex_home=codex_home, claude_dir=claude_dir)
    if key is not None and _unchanged(paths.config_file, config_bytes):
        _write_entry(cache, key, listing, env)
    return listing


def validated_listing(
    paths: CodyPaths, *, env: Mapping[str, str], codex_home: Path, claude_dir: Path
) -> ProviderListing:
    """The providers of the user config, validated (pydantic), with complete specs: the
    defaults when the config is invalid. Never cached: sessions and `authenticate` use it."""
    from ..config.loader import load_user_config
    from ..config.model import CodyConfig

    try:
        config = load_user_config(paths)
    except InvalidParams:
        config = CodyConfig()
    catalog = ProviderCatalog.from_config(
        config, env=env, codex_home=codex_home, claude_dir=claude_dir
    )
    return ProviderListing(catalog, config.model_provider)


def _key(config_bytes: bytes, env: Mapping[str, str]) -> str:
    from .. import __version__

    digest = hashlib.sha256()
    for part in (
        __version__.encode(),
        _code_digest(),
        hashlib.sha256(config_bytes).digest(),
        hashlib.sha256(packaged_text().encode()).digest(),
        json.dumps({name: env.get(name) for name in sorted(BASE_URL_ENV.values())}).encode(),
    ):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _code_digest() -> bytes:
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for name in _DERIVED_BY:
        digest.update((root / name).read_bytes())
    return digest.digest()


def _unchanged(path: Path, expected: bytes | None) -> bool:
    try:
        return read_regular(path, CONFIG_FILE_LIMIT) == expected
    except OSError:
        return False


def _read_entry(
    cache: Path, key: str, env: Mapping[str, str]
) -> tuple[list[ProviderSpec], str] | None:
    try:
        entry = json.loads(read_regular(cache, JSON_FILE_LIMIT))
    except (OSError, ValueError, RecursionError):
        return None
    try:
        if entry["key"] != key:
            return None
        model_provider = entry["model_provider"]
        specs = [_spec_from(item, env) for item in entry["providers"]]
    except (KeyError, TypeError, ValueError):
        logger.info("the provider listing cache %s is damaged; validating config", cache)
        return None
    ids = [spec.id for spec in specs]
    if not isinstance(model_provider, str) or len(set(ids)) != len(ids):
        return None
    if not set(BUILTIN_PROVIDER_IDS) <= set(ids):  # every listing has them (resolve_auto)
        return None
    return specs, model_provider


def _spec_from(item: Any, env: Mapping[str, str]) -> ProviderSpec:
    """A listed provider from its cache entry; ValueError/TypeError/KeyError if damaged."""
    wire_api = item["wire_api"]
    if wire_api not in _WIRE_APIS:
        raise ValueError(f"unknown wire_api {wire_api!r}")
    models = tuple(
        ModelSpec(id=_text(model_id), context_window=_window(window))
        for model_id, window in item["models"]
    )
    default_model = _text(item["default_model"])
    if default_model not in {model.id for model in models}:
        raise ValueError("the default model is not one of the models")
    provider_id = _text(item["id"])
    if type(item["official_base_url"]) is not bool:
        raise TypeError("expected a boolean")
    return ProviderSpec(
        id=provider_id,
        name=_text(item["name"]),
        wire_api=wire_api,
        # Only whether it is the official one is kept (a URL may hold credentials); that
        # is all the listing uses it for (ProviderCatalog._uses_codex_login).
        base_url=official_base_url(provider_id, env) if item["official_base_url"] else None,
        env_key=_optional_text(item["env_key"]),
        default_model=default_model,
        models=models,
        builtin=bool(item["builtin"]),
    )


def _write_entry(cache: Path, key: str, listing: ProviderListing, env: Mapping[str, str]) -> None:
    providers = [
        {
            "id": spec.id,
            "name": spec.name,
            "wire_api": spec.wire_api,
            "official_base_url": spec.base_url == official_base_url(spec.id, env),
            "env_key": spec.env_key,
            "default_model": spec.default_model,
            "models": [[model.id, model.context_window] for model in spec.models],
            "builtin": spec.builtin,
        }
        for spec in listing.catalog.all()
    ]
    entry = {"key": key, "model_provider": listing.model_provider, "providers": providers}
    try:
        cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(cache, json.dumps(entry, indent=1).encode(), mode=0o600)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        logger.info("cannot write the provider listing cache %s: %s", cache, reason)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _window(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise TypeError("expected an integer or null")
