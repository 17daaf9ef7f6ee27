"""`authenticate`: is a provider's login usable right now?

Usable means credentials exist and, for an OAuth login, that a current token can be had: an
expired login is refreshed (and written back) here, so a client learns of a dead login before
its first prompt. A Claude subscription login is not usable by Cody's own loop (only Claude
Code may use it): `anthropic-api-key` then answers -32000 pointing to the `claude` backend.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import AuthRequired, InvalidParams, Issue, ProviderError
from ..providers.catalog import ProviderCatalog
from .agents import missing_credentials_fix

__all__ = ["AUTH_METHOD_SUFFIX", "authenticate"]

AUTH_METHOD_SUFFIX = "-api-key"
"""Auth method ids are `<provider id>-api-key`."""


async def authenticate(catalog: ProviderCatalog, method_id: str, env: Mapping[str, str]) -> None:
    """Raise InvalidParams for an unknown method, AuthRequired when the login is not usable."""
    provider_id = method_id.removesuffix(AUTH_METHOD_SUFFIX)
    if provider_id not in catalog.ids():
        valid = tuple(f"{pid}{AUTH_METHOD_SUFFIX}" for pid in catalog.ids())
        raise InvalidParams(
            f"Unknown auth method {method_id!r}; valid: {', '.join(valid)}",
            [
                Issue(
                    key="methodId",
                    message="unknown auth method",
                    value=method_id,
                    valid=valid,
                    source="params",
                )
            ],
        )
    spec = catalog.get(provider_id)
    credentials = catalog.credentials(spec)
    if credentials is None:
        raise AuthRequired(spec.id, missing_credentials_fix(catalog, spec, env))
    if credentials.kind == "chatgpt":
        from ..providers.auth_sources import auth_for  # httpx: not at daemon start

        try:
            await auth_for(spec, credentials, env=env).headers()
        except ProviderError as exc:
            raise AuthRequired(spec.id, exc.message) from None
