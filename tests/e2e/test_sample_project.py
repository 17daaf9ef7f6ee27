"""A scripted model does real work in a small repository through the real daemon:
reads, greps, plans, patches two files, runs the tests, fixes the failing one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.daemon import Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

CALC = """def add(a, b):
    return a + b


def mul(a, b):
    return a + b  # bug
"""

TESTS = """from calc import add, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6
"""

README = "# calc\n\nTiny calculator.\n"


def fix_patch() -> str:
    return (
        "*** Begin Patch\n"
        "*** Update File: calc.py\n"
        "@@ def mul(a, b):\n"
        "-    return a + b  # bug\n"
        "+    return a * b\n"
        "*** Update File: README.md\n"
        "@@\n"
        " Tiny calculator.\n"
        "+\n"
        "+`mul` multiplies.\n"
        "*** End Patch\n"
    )


@pytest.mark.parametrize("policy", ["on-request", "untrusted"])
async def test_the_agent_fixes_a_failing_test(
    daemon: Daemon, model: MockResponsesServer, policy: str
) -> None:
    """Under the default `on-request` the sandbox contains the whole fix: nothing asks. Under
    `untrusted` (the `ask` mode) each command and the patch ask, the patch with its diffs."""
    ws = daemon.env.workspace
    (ws / "calc.py").write_text(CALC)
    (ws / "test_calc.py").write_text(TESTS)
    (ws / "README.md").write_text(README)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py"]

    model.enqueue(tool_call("fileSearch", {"query": "calc"}, call_id="f1"))
    model.enqueue(tool_call("readFile", {"filePath": "calc.py"}, call_id="r1"))
    model.enqueue(tool_call("grepFiles", {"pattern": "def mul", "include": "*.py"}, call_id="g1"))
    model.enqueue(
        tool_call(
            "updatePlan",
            {
                "plan": [
                    {"step": "Run the tests", "status": "in_progress"},
                    {"step": "Fix mul", "status": "pending"},
                ]
            },
            call_id="u1",
        )
    )
    model.enqueue(tool_call("exec", {"command": pytest_cmd}, call_id="t1"))
    model.enqueue(tool_call("applyPatch", {"patch": fix_patch()}, call_id="p1"))
    model.enqueue(tool_call("exec", {"command": pytest_cmd}, call_id="t2"))
    model.enqueue(text("Fixed `mul`; both tests pass now."))
    sid = await daemon.new_session(approvalPolicy=policy)
    daemon.answer_fn = lambda params: "allow_once"

    result = await daemon.prompt(sid, "The tests fail. Please fix them.")

    assert result["stopReason"] == "end_turn"
    outputs = tool_outputs(model.requests[-1])
    assert outputs["f1"].splitlines()[0] in ("calc.py", "test_calc.py")
    assert "return a + b  # bug" in outputs["r1"]
    assert "calc.py:5:def mul(a, b):" in outputs["g1"]
    assert outputs["u1"] == "Plan updated"
    assert "1 failed" in outputs["t1"] and "Exit code: 1" in outputs["t1"]
    assert "M calc.py" in outputs["p1"] and "M README.md" in outputs["p1"]
    assert "2 passed" in outputs["t2"] and "Exit code: 0" in outputs["t2"]

    asked = {r["toolCall"]["toolCallId"]: r for r in daemon.permission_requests}
    if policy == "on-request":
        assert asked == {}, "the sandbox contains the tests and the patch"
    else:
        assert set(asked) == {"t1", "p1", "t2"}, "read/search/plan tools never ask"
        diffs = {c["path"]: c for c in asked["p1"]["toolCall"]["content"] if c["type"] == "diff"}
        assert set(diffs) == {str(ws / "calc.py"), str(ws / "README.md")}
        assert diffs[str(ws / "calc.py")]["oldText"] == CALC
        assert "return a * b" in diffs[str(ws / "calc.py")]["newText"]

    assert (ws / "calc.py").read_text() == CALC.replace("return a + b  # bug", "return a * b")
    assert (ws / "README.md").read_text() == README + "\n`mul` multiplies.\n"
    assert (ws / "test_calc.py").read_text() == TESTS

    [plan] = daemon.session_updates(sid, "plan")
    assert plan["entries"] == [
        {"content": "Run the tests", "priority": "medium", "status": "in_progress"},
        {"content": "Fix mul", "priority": "medium", "status": "pending"},
    ]
    patch_done = [u for u in daemon.tool_updates(sid, "p1") if u.get("status") == "completed"]
    assert any(c["type"] == "diff" for c in patch_done[0]["content"])
