"""`updatePlan`: validation, publishing through `ctx.on_plan`, and the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools.base import PlanStatus, ToolArgumentError, ToolContext, ToolError
from cody_daemon.tools.update_plan import UpdatePlanTool
from cody_protocol.content import ContentToolCallContent, TextContent

Published = list[list[tuple[str, PlanStatus]]]


def ctx_for(tmp_path: Path, published: Published | None) -> ToolContext:
    return ToolContext(
        session_id="s",
        call_id="c",
        cwd=tmp_path,
        sandbox=SandboxPolicy.create("read-only", tmp_path),
        on_plan=None if published is None else published.append,
    )


PLAN: list[dict[str, Any]] = [
    {"step": "Read the code", "status": "completed"},
    {"step": "Write the fix", "status": "in_progress"},
    {"step": "Run the tests", "status": "pending"},
]


async def test_publishes_the_plan_and_answers_like_codex(tmp_path: Path) -> None:
    published: Published = []
    tool = UpdatePlanTool()
    args = tool.parse({"plan": PLAN, "explanation": "Found the bug."})
    result = await tool.run(args, ctx_for(tmp_path, published))
    assert published == [
        [
            ("Read the code", "completed"),
            ("Write the fix", "in_progress"),
            ("Run the tests", "pending"),
        ]
    ]
    assert result.output == "Plan updated"
    assert result.success
    assert result.content == [
        ContentToolCallContent(
            content=TextContent(
                text="Found the bug.\n[x] Read the code\n[~] Write the fix\n[ ] Run the tests"
            )
        )
    ]
    assert result.raw_output == {"plan": PLAN, "explanation": "Found the bug."}
    assert tool.title(args) == "Update plan (1/3 done)"


async def test_works_without_a_plan_listener(tmp_path: Path) -> None:
    tool = UpdatePlanTool()
    args = tool.parse({"plan": [{"step": "Only step", "status": "pending"}]})
    result = await tool.run(args, ctx_for(tmp_path, None))
    assert result.output == "Plan updated"


async def test_two_steps_in_progress_fail_and_publish_nothing(tmp_path: Path) -> None:
    published: Published = []
    tool = UpdatePlanTool()
    plan = [{"step": "A", "status": "in_progress"}, {"step": "B", "status": "in_progress"}]
    with pytest.raises(ToolError, match="at most one step can be in_progress.*'A'; 'B'"):
        await tool.run(tool.parse({"plan": plan}), ctx_for(tmp_path, published))
    assert published == []


@pytest.mark.parametrize(
    "raw",
    [
        {"plan": []},
        {},
        {"plan": [{"step": "A", "status": "done"}]},
        {"plan": [{"step": "  ", "status": "pending"}]},
        {"plan": [{"step": "A"}]},
        {"plan": PLAN, "extra": 1},
    ],
)
def test_bad_arguments_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(ToolArgumentError):
        UpdatePlanTool().parse(raw)


def test_spec_is_flat_and_names_the_statuses() -> None:
    tool = UpdatePlanTool()
    assert (tool.name, tool.kind, tool.requires_approval) == ("updatePlan", "think", False)
    params = tool.spec().parameters
    assert "$defs" not in params
    assert params["required"] == ["plan"]
    item = params["properties"]["plan"]["items"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
