"""One provider instance per configured provider, created on first use.

HTTP adapters (and httpx) are imported only when a session first uses them, so a daemon on
the offline provider never pays for them.
"""

from __future__ import annotations

from .base import ModelProvider
from .catalog import Credentials, ProviderSpec
from .offline import OfflineProvider

__all__ = ["ProviderPool", "UnsupportedWireApi"]


class UnsupportedWireApi(Exception):
    def __init__(self, spec: ProviderSpec) -> None:
        super().__init__(
            f"Provider '{spec.id}' uses wire_api = \"{spec.wire_api}\", which this build of Cody "
            'cannot talk to yet; use a provider with wire_api = "responses" or the offline provider.'
        )
        self.spec = spec


class ProviderPool:
    def __init__(self, *, offline_delay_s: float = 0.015) -> None:
        self._instances: dict[tuple[object, ...], ModelProvider] = {}
        self._offline_delay_s = offline_delay_s

    def get(self, spec: ProviderSpec, credentials: Credentials | None) -> ModelProvider:
        key = (
            spec.id,
            spec.wire_api,
            spec.base_url,
            tuple(sorted(spec.headers.items())),
            credentials.secret if credentials else None,
        )
        instance = self._instances.get(key)
        if instance is None:
            instance = self._create(spec, credentials)
            self._instances[key] = instance
        return instance

    def _create(self, spec: ProviderSpec, credentials: Credentials | None) -> ModelProvider:
        if spec.wire_api == "offline":
            return OfflineProvider(provider_id=spec.id, delay_s=self._offline_delay_s)
        if spec.wire_api == "responses":
            from .openai_responses import OpenAIResponsesProvider

            return OpenAIResponsesProvider(
                provider_id=spec.id,
                base_url=spec.base_url or "",
                api_key=credentials.secret if credentials else None,
                env_key=spec.env_key,
                headers=dict(spec.headers),
                max_retries=spec.max_retries,
                stream_idle_timeout_s=spec.stream_idle_timeout_s,
            )
        raise UnsupportedWireApi(spec)

    async def aclose(self) -> None:
        instances = list(self._instances.values())
        self._instances.clear()
        for instance in instances:
            await instance.aclose()
