"""How a provider authenticates its requests.

A provider asks its `AuthSource` for headers before each request. After a 401 it may call
`refresh()` once (OAuth sources exchange their refresh token; API keys cannot refresh) and
retry. `secrets` lists every string that must be scrubbed from error messages and logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["ApiKeyAuth", "AuthSource", "NoAuth"]


class AuthSource(Protocol):
    @property
    def secrets(self) -> tuple[str, ...]: ...

    async def headers(self) -> dict[str, str]:
        """The auth headers for the next request (refreshing first if known to be expired)."""
        ...

    async def refresh(self) -> bool:
        """Get new credentials after the server rejected them; False when that is impossible."""
        ...


@dataclass(frozen=True, slots=True)
class ApiKeyAuth:
    """A static API key: `Authorization: Bearer <key>` (OpenAI style) or `x-api-key: <key>`."""

    key: str = field(repr=False)
    header: str = "Authorization"
    scheme: str | None = "Bearer"

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.key,)

    async def headers(self) -> dict[str, str]:
        value = f"{self.scheme} {self.key}" if self.scheme else self.key
        return {self.header: value}

    async def refresh(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class NoAuth:
    """No credentials (local servers with `env_key = ""`)."""

    @property
    def secrets(self) -> tuple[str, ...]:
        return ()

    async def headers(self) -> dict[str, str]:
        return {}

    async def refresh(self) -> bool:
        return False
