"""Fixtures for end-to-end tests: the real daemon over stdio, temp homes, a mock model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import call_failed
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer

pytestmark = pytest.mark.e2e


@pytest.fixture
def cody_env(tmp_path: Path) -> CodyEnv:
    return CodyEnv.create(tmp_path)


@pytest.fixture
async def model(request: pytest.FixtureRequest) -> AsyncIterator[MockResponsesServer]:
    """The mock model; after a test that passed, every scripted response must have been
    requested (`assert_complete`)."""
    async with MockResponsesServer() as server:
        yield server
        if not server.unused_ok and not call_failed(request):
            server.assert_complete()


@pytest.fixture
async def daemon(cody_env: CodyEnv, model: MockResponsesServer) -> AsyncIterator[Daemon]:
    """A daemon whose default provider is the mock model, initialized."""
    cody_env.use_mock_provider(model.base_url)
    running = await Daemon.start(cody_env)
    await running.initialize()
    yield running
    await running.close()


@pytest.fixture
async def offline_daemon(cody_env: CodyEnv) -> AsyncIterator[Daemon]:
    """A daemon with no configuration at all (so `auto` resolves to offline)."""
    running = await Daemon.start(cody_env)
    await running.initialize()
    yield running
    await running.close()
