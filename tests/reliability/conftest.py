"""The standing reliability suite (issue 8): fuzzed frames, kill -9 rounds, many sessions.

Every test here drives the real daemon over stdio (tests/support/daemon.py) and is marked
`reliability` (and `e2e`): `pytest -m reliability` runs just this suite; CI runs it with
everything else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import call_failed
from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.reliability)
            item.add_marker(pytest.mark.e2e)


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
