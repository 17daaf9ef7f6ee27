"""Provider and model specs, credentials, and the built-in providers' data.

Invariants: a spec's `default_model` is one of its `models`; secrets live only in
`Credentials` fields that are excluded from repr.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from cody_protocol.settings import ProviderWireApi

from .models import catalog

__all__ = [
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENROUTER_BASE_URL",
    "CredentialKind",
    "Credentials",
    "ModelSpec",
    "ProviderSpec",
    "ProviderWireApi",
    "BASE_URL_ENV",
    "builtin_providers",
    "official_base_url",
]


_BUILTIN_MODEL_SHAPES: Final = {
    "openai": re.compile(r"^(?:gpt-\d|o[1-9]\b|o[1-9]-|codex-|chatgpt-)"),
    "anthropic": re.compile(r"^claude-"),
    "openrouter": re.compile(r"^[a-z0-9][\w.-]*/[\w.:-]+$"),
}
"""Ids a built-in provider's newer, not yet listed models have (the offline model has none)."""
CredentialKind = Literal["api_key", "chatgpt", "none"]

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
OPENROUTER_BASE_URL: Final = "https://openrouter.ai/api/v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """A model a provider offers; `context_window` is None when unknown (configured models)."""

    id: str
    context_window: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSpec:
    """Everything a provider implementation needs except the credentials."""

    id: str
    name: str
    wire_api: ProviderWireApi
    base_url: str | None
    """None only for `offline`."""
    env_key: str | None
    """Environment variable holding the API key; None when no key is needed."""
    headers: dict[str, str] = field(default_factory=dict, repr=False, hash=False)
    """Extra request headers from config (may hold secrets: not in repr)."""
    default_model: str
    models: tuple[ModelSpec, ...]
    max_retries: int = 4
    """`request_max_retries`: retries of a request whose stream never started."""
    stream_max_retries: int = 5
    """`stream_max_retries`: retries of a stream that failed before any model output."""
    retry_window_s: float = 60.0
    """`request_retry_window_ms`: the backoff of all retries spans at least this long."""
    stream_idle_timeout_s: float = 300.0
    """`stream_idle_timeout_ms`: the longest wait for the first event and between events."""
    env_headers: dict[str, str] = field(default_factory=dict, hash=False)
    """`env_http_headers`: header name -> environment variable holding its value."""
    query_params: dict[str, str] = field(default_factory=dict, repr=False, hash=False)
    """`query_params`: added to every request URL (may hold secrets: not in repr)."""
    env_key_instructions: str | None = None
    builtin: bool = False
    models_listed: bool = False
    """A configured provider whose config lists `models`: only those are its models."""

    @property
    def model_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.models)

    def model_problem(self, model: str) -> str | None:
        """Why `model` is not one of this provider's models, or None when it may be used.

        A configured provider takes the models its config lists (`models`, `default_model`);
        without a `models` list Cody cannot know them and takes any name (its server decides
        at the first prompt). A built-in one takes its listed models (config's `models`
        included) and ids shaped like its newer models (`gpt-6-...` on openai, `claude-...`
        on anthropic, `vendor/model` on openrouter).
        """
        if model in self.model_ids or (not self.builtin and not self.models_listed):
            return None
        if not self.builtin:
            return (
                f"{model!r} is not a model of {self.name}: its `models` in config.toml are "
                f"{', '.join(self.model_ids)}. If its server has it, add it to `models` under "
                f"[model_providers.{self.id}]."
            )
        shape = _BUILTIN_MODEL_SHAPES.get(self.id)
        if shape is not None and shape.search(model):
            return None
        return (
            f"{model!r} is not a model of {self.name}; its models are "
            f"{', '.join(self.model_ids)}. A model Cody does not list yet can be added to "
            f"`models` under [model_providers.{self.id}] in config.toml."
        )

    def context_window(self, model: str) -> int | None:
        """The context window of `model` when this provider knows it."""
        for spec in self.models:
            if spec.id == model:
                return spec.context_window
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """Where a provider's credentials come from; the secret values never appear in a repr.

    `kind`: `api_key` (sent as the provider's API key), `chatgpt` (a Codex CLI ChatGPT login:
    `secret` is the access token, `account_id` the ChatGPT account), `none` (nothing to send).
    `source` is safe to show: e.g. `env OPENAI_API_KEY` or `~/.codex/auth.json`.
    """

    kind: CredentialKind
    source: str
    secret: str | None = field(default=None, repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    account_id: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    """Access-token expiry (epoch seconds) when the login file records it."""


BASE_URL_ENV: Final = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
"""Environment variables that move a built-in provider (as in the official SDKs and CLIs).

A base URL the user sets in their own environment counts as the provider's official one (a
proxy to the same service): logins are used with it and prices apply. A base URL from a
config file does not.
"""


def official_base_url(provider_id: str, env: Mapping[str, str] | None = None) -> str | None:
    """The base URL of a built-in provider: its env override, else the default."""
    defaults = {
        "openai": OPENAI_BASE_URL,
        "anthropic": ANTHROPIC_BASE_URL,
        "openrouter": OPENROUTER_BASE_URL,
    }
    name = BASE_URL_ENV.get(provider_id)
    override = (env or {}).get(name, "").strip() if name else ""
    return override.rstrip("/") or defaults.get(provider_id)


def builtin_providers(env: Mapping[str, str] | None = None) -> tuple[ProviderSpec, ...]:
    """The built-in providers, in `BUILTIN_PROVIDER_IDS` order (fresh objects each call).

    Their models, default model and context windows come from the model catalog
    (`models.toml`). `env` supplies `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` overrides (see
    `BASE_URL_ENV`).
    """
    listed = catalog()

    def models(provider: str) -> tuple[ModelSpec, ...]:
        return tuple(
            ModelSpec(id=m.id, context_window=m.capabilities.context_window)
            for m in listed.models_of(provider)
        )

    def default(provider: str) -> str:
        found = listed.default_of(provider)
        assert found is not None, f"models.toml lists no default model for {provider}"
        return found

    return (
        ProviderSpec(
            id="openai",
            name="OpenAI",
            wire_api="responses",
            base_url=official_base_url("openai", env),
            env_key="OPENAI_API_KEY",
            default_model=default("openai"),
            models=models("openai"),
            builtin=True,
        ),
        ProviderSpec(
            id="anthropic",
            name="Anthropic",
            wire_api="anthropic",
            base_url=official_base_url("anthropic", env),
            env_key="ANTHROPIC_API_KEY",
            default_model=default("anthropic"),
            models=models("anthropic"),
            builtin=True,
        ),
        ProviderSpec(
            id="openrouter",
            name="OpenRouter",
            wire_api="chat",
            base_url=OPENROUTER_BASE_URL,
            env_key="OPENROUTER_API_KEY",
            default_model=default("openrouter"),
            models=models("openrouter"),
            builtin=True,
        ),
        ProviderSpec(
            id="offline",
            name="Offline (built-in demo)",
            wire_api="offline",
            base_url=None,
            env_key=None,
            default_model=default("offline"),
            models=models("offline"),
            max_retries=0,
            builtin=True,
        ),
    )
