"""Fixtures shared by the provider unit tests."""

from __future__ import annotations

import pytest

from tests.support.provider_calls import Sleeps


@pytest.fixture
def sleeps() -> Sleeps:
    """The provider's sleep: records each backoff instead of waiting."""
    return Sleeps()
