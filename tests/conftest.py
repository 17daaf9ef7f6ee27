"""Shared by every test: a failing test's report shows the stderr of the daemons it started
(tests/support/stderr_report.py); fixtures can tell whether the test itself failed
(`call_failed`)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from tests.support import stderr_report


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    stderr_report.forget()
    yield
    stderr_report.forget()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed:
        for title, text in stderr_report.sections():
            report.sections.append((title, text))
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed


CALL_FAILED = pytest.StashKey[bool]()
"""Whether the test itself failed (fixtures skip their own end checks then: one failure)."""


def call_failed(request: pytest.FixtureRequest) -> bool:
    return request.node.stash.get(CALL_FAILED, True)
