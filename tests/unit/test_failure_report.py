"""A failing test's report shows the stderr of the daemons it started (tests/conftest.py,
tests/support/stderr_report.py): before, an e2e failure said "see the daemon log" and the log
was nowhere. Run on a small test session of its own (pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SESSION = """
from tests.support import stderr_report


def test_fails() -> None:
    lines = []
    stderr_report.watch("daemon (pid 1)", lines)
    lines.extend(f"noise {n}" for n in range(100))
    lines.append("ERROR cody_daemon.rpc.errors: internal error")
    lines.append("KeyError: 'the cause'")
    assert False, "Internal error (KeyError); see the daemon log for details."


def test_passes() -> None:
    stderr_report.watch("daemon (pid 2)", ["a quiet daemon"])


def test_fails_without_a_daemon() -> None:
    assert False, "no daemon here"
"""


def test_a_failing_test_shows_the_end_of_its_daemons_stderr(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from tests.conftest import pytest_runtest_makereport, pytest_runtest_protocol\n"
    )
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:asyncio")

    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*daemon (pid 1) stderr (last 80 of 102 lines)*",
            "noise 22",
            "*KeyError: 'the cause'*",
        ]
    )
    text = result.stdout.str()
    assert "noise 21\n" not in text, "only the tail is shown"
    assert "daemon (pid 2)" not in text, "a passing test's daemon is not shown"
    assert text.count("stderr (last") == 1, "nothing carried over to the next test"
