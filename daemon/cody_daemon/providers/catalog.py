"""The provider catalog: built-in and configured providers, where their credentials come from,
and what `model_provider = "auto"` means.

Invariants:
- Built-ins are `openai`, `anthropic`, `openrouter` and `offline` (`BUILTIN_PROVIDER_IDS`).
  `[model_providers.<id>]` adds a provider, or overrides only the fields it sets on a built-in
  one; `offline` cannot be configured. `all()` lists built-ins first, then configured ones in
  config order.
- A spec's `default_model` is always one of its `models`.
- `auto` is the first of openai, anthropic, openrouter that has credentials, else `offline`
  (README "Point it at a real model"). `offline`, and a provider whose `env_key` is unset or
  `""`, needs none.
- Credentials are read when asked for (a login made while the daemon runs is seen): env var
  first, then the Codex CLI login (`$CODEX_HOME/auth.json`) for `openai`. A login file is only
  used while that provider still points at its official `base_url`, so a token is never sent
  to a server it was not issued for. Unreadable or malformed login files count as absent.
- A Claude subscription login (`$CLAUDE_CONFIG_DIR/.credentials.json`) is never a credential:
  only Claude Code itself may use it (a session with the `claude` backend does).
  `claude_login_file` only says whether one exists, so errors can point there.
- Secrets live only in `Credentials` fields excluded from repr; no message, repr or log here
  contains a secret (nor does a `ProviderSpec` repr show its headers).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..config.provider_ids import AUTO, BUILTIN_PROVIDER_IDS
from ..core.safe_read import JSON_FILE_LIMIT, read_regular
from ..errors import InvalidParams, Issue
from .specs import (
    CredentialKind,
    Credentials,
    ModelSpec,
    ProviderSpec,
    ProviderWireApi,
    builtin_providers,
    official_base_url,
)

if TYPE_CHECKING:
    from ..config.model import CodyConfig, ProviderConfig

__all__ = [
    "AUTO",
    "AUTO_ORDER",
    "BUILTIN_PROVIDER_IDS",
    "CredentialKind",
    "Credentials",
    "ModelSpec",
    "ProviderCatalog",
    "ProviderSpec",
    "ProviderWireApi",
    "builtin_providers",
    "default_claude_dir",
    "default_codex_home",
]


AUTO_ORDER: Final[tuple[str, ...]] = ("openai", "anthropic", "openrouter")
CODEX_AUTH_FILE: Final = "auth.json"
CLAUDE_CREDENTIALS_FILE: Final = ".credentials.json"
_PICK_ANOTHER: Final = (
    "pick another provider with model_provider / session/set_config_option provider"
)


def default_codex_home(env: Mapping[str, str]) -> Path:
    """`$CODEX_HOME`, else `~/.codex` (where the Codex CLI keeps `auth.json`)."""
    return Path(env.get("CODEX_HOME") or "~/.codex").expanduser()


def default_claude_dir(env: Mapping[str, str]) -> Path:
    """`$CLAUDE_CONFIG_DIR`, else `~/.claude` (where Claude Code keeps `.credentials.json`)."""
    return Path(env.get("CLAUDE_CONFIG_DIR") or "~/.claude").expanduser()


class ProviderCatalog:
    """The providers this daemon can use, and their credentials. Cheap to build per session."""

    def __init__(
        self,
        specs: Iterable[ProviderSpec],
        *,
        env: Mapping[str, str],
        codex_home: Path,
        claude_dir: Path,
    ) -> None:
        self._specs: dict[str, ProviderSpec] = {spec.id: spec for spec in specs}
        self._env = env
        self._codex_home = codex_home
        self._claude_dir = claude_dir

    @classmethod
    def from_config(
        cls,
        config: CodyConfig,
        *,
        env: Mapping[str, str],
        codex_home: Path,
        claude_dir: Path,
    ) -> ProviderCatalog:
        """Built-ins overridden/extended by `config.model_providers`.

        Raises `InvalidParams` for a provider config the loader would have rejected (a new
        provider without `base_url` or a model, or `[model_providers.offline]`).
        """
        specs = {spec.id: spec for spec in builtin_providers(env)}
        for pid, provider in config.model_providers.items():
            base = specs.get(pid)
            specs[pid] = (
                _configured(pid, provider, config.model)
                if base is None
                else _override(base, provider)
            )
        return cls(specs.values(), env=env, codex_home=codex_home, claude_dir=claude_dir)

    @classmethod
    def from_environment(
        cls, config: CodyConfig, env: Mapping[str, str] | None = None
    ) -> ProviderCatalog:
        """`from_config` with the login directories taken from `env` (default: os.environ)."""
        environ = os.environ if env is None else env
        return cls.from_config(
            config,
            env=environ,
            codex_home=default_codex_home(environ),
            claude_dir=default_claude_dir(environ),
        )

    def ids(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def all(self) -> tuple[ProviderSpec, ...]:
        return tuple(self._specs.values())

    def get(self, provider_id: str) -> ProviderSpec:
        """The provider with this id; `InvalidParams` (key `model_provider`) when unknown."""
        spec = self._specs.get(provider_id)
        if spec is None:
            raise self._unknown(provider_id, self.ids())
        return spec

    def resolve(self, name: str) -> ProviderSpec:
        """`get`, with `auto` resolved by `resolve_auto`."""
        if name == AUTO:
            return self.resolve_auto()
        if name not in self._specs:
            raise self._unknown(name, (AUTO, *self.ids()))
        return self._specs[name]

    def resolve_auto(self) -> ProviderSpec:
        """The first of openai, anthropic, openrouter with credentials, else offline."""
        for pid in AUTO_ORDER:
            spec = self._specs.get(pid)
            if spec is not None and self.credentials(spec) is not None:
                return spec
        return self.get("offline")

    def credentials(self, spec: ProviderSpec) -> Credentials | None:
        """Usable credentials for `spec`, or None when there are none at all."""
        if spec.wire_api == "offline":
            return Credentials(kind="none", source="none needed (built-in offline provider)")
        if spec.env_key:
            value = self._env.get(spec.env_key, "").strip()
            if value:
                return Credentials(kind="api_key", source=f"env {spec.env_key}", secret=value)
        if self._uses_codex_login(spec):
            found = self._codex_login()
            if found is not None:
                return found
        if not spec.env_key:
            return Credentials(kind="none", source="none needed (no env_key configured)")
        return None

    def auth_description(self, spec: ProviderSpec) -> str:
        """Where credentials for `spec` are looked for, e.g. for `initialize`'s authMethods."""
        places: list[str] = []
        if spec.env_key:
            places.append(f"env {spec.env_key}")
        if self._uses_codex_login(spec):
            places.append(f"ChatGPT login in {_display(self._codex_home / CODEX_AUTH_FILE)}")
        return " or ".join(places) if places else "no credentials needed"

    def owner_of(self, model: str) -> ProviderSpec | None:
        """The first built-in provider (offline aside) that has `model`, or None."""
        for spec in self.all():
            if spec.builtin and spec.wire_api != "offline" and spec.model_problem(model) is None:
                return spec
        return None

    def missing_credentials_fix(self, spec: ProviderSpec, *, pick_another: bool = True) -> str:
        """What the user can do when `credentials(spec)` is None (one sentence, no secrets)."""
        steps: list[str] = []
        if spec.env_key:
            steps.append(f"set {spec.env_key}")
            if spec.env_key_instructions:
                steps[-1] += f" ({spec.env_key_instructions.strip().rstrip('.')})"
        if self._uses_codex_login(spec):
            path = _display(self._codex_home / CODEX_AUTH_FILE)
            steps.append(f"log in with the Codex CLI (codex login) so {path} exists")
        if spec.id == "anthropic":
            steps.append(
                "to use a Claude subscription, start the session with the `claude` backend "
                "(Claude Code runs it with its own login: `/login` in `claude`)"
            )
        if pick_another:
            steps.append(_PICK_ANOTHER)
        text = ", or ".join(steps)
        return text[0].upper() + text[1:] + "."

    @staticmethod
    def _unknown(name: str, valid: tuple[str, ...]) -> InvalidParams:
        shown = json.dumps(name[:80], ensure_ascii=False)
        issue = Issue(key="model_provider", message="unknown provider", value=name, valid=valid)
        return InvalidParams(
            f"invalid configuration: model_provider = {shown}: unknown provider; "
            f"valid values: {', '.join(valid)}",
            [issue],
        )

    def _uses_codex_login(self, spec: ProviderSpec) -> bool:
        return spec.id == "openai" and spec.base_url == official_base_url("openai", self._env)

    def _uses_claude_login(self, spec: ProviderSpec) -> bool:
        return spec.id == "anthropic" and spec.base_url == official_base_url("anthropic", self._env)

    def _codex_login(self) -> Credentials | None:
        path = self._codex_home / CODEX_AUTH_FILE
        data = _read_json_object(path)
        if data is None:
            return None
        tokens = data.get("tokens")
        if isinstance(tokens, dict):
            access = _str_or_none(tokens.get("access_token"))
            if access:
                return Credentials(
                    kind="chatgpt",
                    source=_display(path),
                    secret=access,
                    refresh_token=_str_or_none(tokens.get("refresh_token")),
                    account_id=_str_or_none(tokens.get("account_id")),
                )
        key = _str_or_none(data.get("OPENAI_API_KEY"))
        if key:
            return Credentials(
                kind="api_key", source=f"{_display(path)} (OPENAI_API_KEY)", secret=key
            )
        return None

    def claude_login_file(self, spec: ProviderSpec) -> str | None:
        """Where a Claude subscription login for `spec` is (shown as `~/...`), if there is one.

        It is not a credential (see the module docstring); this is for error messages only.
        """
        if not self._uses_claude_login(spec):
            return None
        path = self._claude_dir / CLAUDE_CREDENTIALS_FILE
        data = _read_json_object(path)
        oauth = data.get("claudeAiOauth") if data is not None else None
        if isinstance(oauth, dict) and _str_or_none(oauth.get("accessToken")):
            return _display(path)
        return None


def _override(base: ProviderSpec, provider: ProviderConfig) -> ProviderSpec:
    """`base` with the fields `provider` explicitly sets."""
    if base.wire_api == "offline":
        raise _config_error(
            "model_providers.offline", "the built-in offline provider cannot be configured"
        )
    written = provider.model_fields_set
    changes: dict[str, Any] = {}
    if "name" in written and provider.name:
        changes["name"] = provider.name
    if "base_url" in written and provider.base_url:
        changes["base_url"] = provider.base_url
    if "wire_api" in written:
        changes["wire_api"] = provider.wire_api
    if "env_key" in written:
        changes["env_key"] = provider.env_key or None
    if "http_headers" in written:
        changes["headers"] = {**base.headers, **provider.http_headers}
    if "env_key_instructions" in written:
        changes["env_key_instructions"] = provider.env_key_instructions
    if "env_http_headers" in written:
        changes["env_headers"] = {**base.env_headers, **provider.env_http_headers}
    if "query_params" in written:
        changes["query_params"] = {**base.query_params, **provider.query_params}
    if "request_max_retries" in written:
        changes["max_retries"] = provider.request_max_retries
    if "stream_max_retries" in written:
        changes["stream_max_retries"] = provider.stream_max_retries
    if "request_retry_window_ms" in written:
        changes["retry_window_s"] = provider.request_retry_window_ms / 1000
    if "stream_idle_timeout_ms" in written:
        changes["stream_idle_timeout_s"] = provider.stream_idle_timeout_ms / 1000
    known = {m.id: m.context_window for m in base.models}
    model_ids = list(provider.models) if "models" in written else list(base.model_ids)
    default = provider.default_model or (
        provider.models[0] if "models" in written and provider.models else base.default_model
    )
    changes["default_model"] = default
    changes["models"] = _model_specs(default, model_ids, known)
    return replace(base, **changes)


def _configured(pid: str, provider: ProviderConfig, top_level_model: str | None) -> ProviderSpec:
    """A provider that is not built in, entirely from config; without `default_model` or
    `models`, the top-level `model` is its model (as a Codex config has it)."""
    key = f"model_providers.{pid}"
    if provider.base_url is None:
        raise _config_error(f"{key}.base_url", "required for a provider that is not built in")
    default = (
        provider.default_model
        or (provider.models[0] if provider.models else None)
        or top_level_model
    )
    if default is None:
        raise _config_error(
            f"{key}.default_model",
            "required for a provider that is not built in (or list `models`, or set the "
            "top-level `model`)",
        )
    return ProviderSpec(
        id=pid,
        name=provider.name or pid,
        wire_api=provider.wire_api,
        base_url=provider.base_url,
        env_key=provider.env_key or None,
        headers=dict(provider.http_headers),
        default_model=default,
        models=_model_specs(default, list(provider.models), {}),
        models_listed=bool(provider.models),
        max_retries=provider.request_max_retries,
        stream_max_retries=provider.stream_max_retries,
        retry_window_s=provider.request_retry_window_ms / 1000,
        stream_idle_timeout_s=provider.stream_idle_timeout_ms / 1000,
        env_headers=dict(provider.env_http_headers),
        query_params=dict(provider.query_params),
        env_key_instructions=provider.env_key_instructions,
    )


def _model_specs(
    default: str, model_ids: list[str], known: Mapping[str, int | None]
) -> tuple[ModelSpec, ...]:
    """Model specs in the given order, the default first if missing, without duplicates."""
    ordered = list(dict.fromkeys(model_ids if default in model_ids else [default, *model_ids]))
    return tuple(ModelSpec(id=mid, context_window=known.get(mid)) for mid in ordered)


def _config_error(key: str, message: str) -> InvalidParams:
    return InvalidParams(
        f"invalid configuration: {key}: {message}", [Issue(key=key, message=message)]
    )


def _read_json_object(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_regular(path, JSON_FILE_LIMIT))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _display(path: Path) -> str:
    """`path` with the home directory shown as `~` (for messages)."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)
