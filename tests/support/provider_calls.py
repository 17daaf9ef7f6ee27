"""Calling a model provider in a unit test: the request, the events, the error.

Shared by the tests of the three HTTP providers (Responses, Chat Completions, Messages) and
the offline one; each test module names its own default model and provider options.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from cody_daemon.core.history import HistoryItem, user_message
from cody_daemon.providers.base import (
    ModelEvent,
    ModelProvider,
    ModelRequest,
    ProviderError,
    TextDelta,
)

from tests.support.mock_responses import MockResponsesServer

__all__ = [
    "ModelCalls",
    "provider_fixtures",
    "Sleeps",
    "TokenAuth",
    "collect_events",
    "collect_failure",
    "model_calls",
    "model_request",
    "texts",
]


class Sleeps:
    """Injected sleep: records the requested delays instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class TokenAuth:
    """An OAuth-like `AuthSource`: `refresh()` moves on to the next token while there is one."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = list(tokens)
        self.refreshes = 0

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.tokens[0],)

    async def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[0]}"}

    async def refresh(self) -> bool:
        self.refreshes += 1
        if len(self.tokens) < 2:
            return False
        self.tokens.pop(0)
        return True


def model_request(history: list[HistoryItem] | None, *, model: str, **kw: Any) -> ModelRequest:
    """A request for `model`: Cody's instructions, `history` (else one user "hi"), no tools."""
    options: dict[str, Any] = {
        "model": model,
        "instructions": "You are Cody.",
        "history": history or [user_message("u1", "hi")],
        "tools": [],
        "session_id": "session-1",
    }
    options.update(kw)
    return ModelRequest(**options)


async def collect_events(provider: ModelProvider, request: ModelRequest) -> list[ModelEvent]:
    """Every event of a call that must succeed."""
    return [event async for event in provider.stream(request)]


async def collect_failure(
    provider: ModelProvider, request: ModelRequest
) -> tuple[list[ModelEvent], ProviderError]:
    """The events before a call failed, and its `ProviderError` (the test fails without one)."""
    events: list[ModelEvent] = []
    with pytest.raises(ProviderError) as caught:
        async for event in provider.stream(request):
            events.append(event)
    return events, caught.value


def texts(events: list[ModelEvent]) -> list[str]:
    """The text deltas, in order."""
    return [e.text for e in events if isinstance(e, TextDelta)]


@dataclass(frozen=True)
class ModelCalls:
    """`request`, `collect` and `collect_error` for a test module whose default model is `model`.

    A request left out means `request()`: one user "hi" to `model`.
    """

    model: str

    def request(self, history: list[HistoryItem] | None = None, **kw: Any) -> ModelRequest:
        return model_request(history, **{"model": self.model, **kw})

    async def collect(
        self, provider: ModelProvider, request: ModelRequest | None = None
    ) -> list[ModelEvent]:
        return await collect_events(provider, request or self.request())

    async def collect_error(
        self, provider: ModelProvider, request: ModelRequest | None = None
    ) -> tuple[list[ModelEvent], ProviderError]:
        return await collect_failure(provider, request or self.request())


def model_calls(
    model: str,
) -> tuple[
    Callable[..., ModelRequest],
    Callable[..., Awaitable[list[ModelEvent]]],
    Callable[..., Awaitable[tuple[list[ModelEvent], ProviderError]]],
]:
    """`request, collect, collect_error = model_calls(model)`: `ModelCalls(model)`'s three."""
    calls = ModelCalls(model)
    return calls.request, calls.collect, calls.collect_error


S = TypeVar("S", bound=MockResponsesServer)
P = TypeVar("P", bound=ModelProvider)


def provider_fixtures(
    server_class: type[S], make_provider: Callable[[S, Sleeps], P]
) -> tuple[Any, Any]:
    """A test module's `server` and `provider` fixtures: `server, provider = provider_fixtures(...)`.

    `server` is a fresh `server_class` mock per test; `provider` is `make_provider(server,
    sleeps)` on it (`sleeps` from tests/unit/conftest.py), closed after the test.
    """

    @pytest.fixture
    async def server() -> AsyncIterator[S]:
        async with server_class() as srv:
            yield srv

    @pytest.fixture
    async def provider(server: S, sleeps: Sleeps) -> AsyncIterator[P]:
        p = make_provider(server, sleeps)
        yield p
        await p.aclose()

    return server, provider
