"""One provider instance per configured provider (and login), created on first use.

HTTP adapters (and httpx) are imported only when a session first uses them, so a daemon on
the offline provider never pays for them. Instances are keyed by where their credentials come
from (not by the secret itself: an OAuth token changes on every refresh, and one login must
share one refreshing auth source).

`ADAPTERS` is the one table from a wire API (`cody_protocol.settings.WireApi`) to the provider
module that speaks it; tests/unit/test_wire_apis.py holds it to the `WireApi` names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from cody_protocol.settings import WIRE_APIS, ReasoningSummary, WireApi

from .base import ModelProvider
from .offline import OfflineProvider
from .specs import Credentials, ProviderSpec, official_base_url

if TYPE_CHECKING:
    from .http_provider import HttpOptions

__all__ = ["ADAPTERS", "ProviderPool", "UnsupportedWireApi"]

Adapter = Callable[["HttpOptions", Credentials | None, bool], ModelProvider]
"""(options, credentials, whether the provider is OpenAI's own endpoint) -> the provider."""


def _responses(
    common: HttpOptions, credentials: Credentials | None, openai_endpoint: bool
) -> ModelProvider:
    from .openai_responses import OpenAIResponsesProvider

    chatgpt = credentials is not None and credentials.kind == "chatgpt"
    # A ChatGPT login gets summaries by default; an API key only when configured.
    summary: ReasoningSummary | None = "auto" if chatgpt else None
    # OpenAI's cache routing hint: only OpenAI's own endpoints take it.
    return OpenAIResponsesProvider(
        **common, default_summary=summary, prompt_cache_key=chatgpt or openai_endpoint
    )


def _chat(
    common: HttpOptions, credentials: Credentials | None, openai_endpoint: bool
) -> ModelProvider:
    from .openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(**common)


def _anthropic(
    common: HttpOptions, credentials: Credentials | None, openai_endpoint: bool
) -> ModelProvider:
    from .anthropic_messages import AnthropicMessagesProvider

    return AnthropicMessagesProvider(**common)


ADAPTERS: Final[dict[WireApi, Adapter]] = {
    "responses": _responses,
    "chat": _chat,
    "anthropic": _anthropic,
}
"""Each wire API's provider (its module is imported when a session first uses it)."""


class UnsupportedWireApi(Exception):
    def __init__(self, spec: ProviderSpec) -> None:
        names = ", ".join(f'"{name}"' for name in WIRE_APIS)
        super().__init__(
            f"Provider '{spec.id}' uses wire_api = \"{spec.wire_api}\", which Cody cannot talk to; "
            f"use one of {names}."
        )
        self.spec = spec


class ProviderPool:
    def __init__(
        self, *, env: Mapping[str, str] | None = None, offline_delay_s: float = 0.015
    ) -> None:
        self._env = dict(env or {})
        self._instances: dict[tuple[object, ...], ModelProvider] = {}
        self._offline_delay_s = offline_delay_s

    def get(self, spec: ProviderSpec, credentials: Credentials | None) -> ModelProvider:
        key = (
            spec.id,
            spec.wire_api,
            spec.base_url,
            tuple(sorted(self._headers(spec).items())),
            tuple(sorted(spec.query_params.items())),
            spec.max_retries,
            spec.stream_max_retries,
            spec.retry_window_s,
            spec.stream_idle_timeout_s,
            credentials.kind if credentials else None,
            credentials.source if credentials else None,
            credentials.secret if credentials and credentials.kind == "api_key" else None,
        )
        instance = self._instances.get(key)
        if instance is None:
            instance = self._create(spec, credentials)
            self._instances[key] = instance
        return instance

    def _create(self, spec: ProviderSpec, credentials: Credentials | None) -> ModelProvider:
        if spec.wire_api == "offline":
            return OfflineProvider(provider_id=spec.id, delay_s=self._offline_delay_s)
        adapter = ADAPTERS.get(spec.wire_api)
        if adapter is None:
            raise UnsupportedWireApi(spec)
        from .auth import NoAuth
        from .auth_sources import auth_for, base_url_for

        auth = auth_for(spec, credentials, env=self._env) if credentials is not None else NoAuth()
        common: HttpOptions = {
            "provider_id": spec.id,
            "base_url": base_url_for(spec, credentials, self._env),
            "auth": auth,
            "env_key": spec.env_key,
            "headers": self._headers(spec),
            "max_retries": spec.max_retries,
            "stream_max_retries": spec.stream_max_retries,
            "retry_window_s": spec.retry_window_s,
            "stream_idle_timeout_s": spec.stream_idle_timeout_s,
            "query_params": dict(spec.query_params),
        }
        openai_endpoint = spec.id == "openai" and spec.base_url == official_base_url(
            "openai", self._env
        )
        return adapter(common, credentials, openai_endpoint)

    def _headers(self, spec: ProviderSpec) -> dict[str, str]:
        """`http_headers`, plus each `env_http_headers` entry whose variable is set (Codex's
        rule: an unset or empty variable sends no header)."""
        headers = dict(spec.headers)
        for name, variable in spec.env_headers.items():
            value = self._env.get(variable, "").strip()
            if value:
                headers[name] = value
        return headers

    async def forget(self, credential_kinds: frozenset[str]) -> None:
        """Close and drop the instances using these kinds of credentials (their tokens go
        with them); the next use reads the credentials again."""
        keys = [key for key in self._instances if key[10] in credential_kinds]
        for key in keys:
            await self._instances.pop(key).aclose()

    async def aclose(self) -> None:
        instances = list(self._instances.values())
        self._instances.clear()
        for instance in instances:
            await instance.aclose()
