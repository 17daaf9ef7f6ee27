"""`updatePlan`: the agent publishes its step-by-step plan (Codex's `update_plan`).

Invariants: a plan has at least one step, every step is non-blank text, and at most one
step is `in_progress` (otherwise the call fails with a ToolError and nothing is
published). Each successful call replaces the whole plan: `ctx.on_plan` receives every
`(step, status)` in order (the engine sends it to the client as a `plan` update). The
model's result is `Plan updated`, as in Codex; clients get the plan as text content.
"""

from __future__ import annotations

from typing import Annotated

from cody_protocol.content import ContentToolCallContent, TextContent
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema

from .base import PlanStatus, Tool, ToolContext, ToolError, ToolFacts, ToolResult

__all__ = ["PlanStep", "UpdatePlanArgs", "UpdatePlanTool"]

_MARKS: dict[PlanStatus, str] = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


_PLAN_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "properties": {
            "step": {"type": "string", "minLength": 1},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
        },
        "required": ["step", "status"],
        "additionalProperties": False,
    },
}


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    step: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] = Field(
        description="What this step does, in a short sentence."
    )
    status: PlanStatus = Field(description="pending, in_progress or completed.")


class UpdatePlanArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    explanation: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None, description="Optional note on why the plan changed."
    )
    plan: Annotated[list[PlanStep], WithJsonSchema(_PLAN_SCHEMA)] = Field(
        min_length=1,
        description="The whole plan, in order (it replaces the previous one). At most one "
        "step may be in_progress.",
    )


class UpdatePlanTool(Tool[UpdatePlanArgs]):
    name = "updatePlan"
    description = (
        "Publish or revise your plan for the task as a list of steps, each pending, "
        "in_progress or completed (at most one in_progress at a time). Send the whole plan "
        "each time; mark steps completed as you finish them."
    )
    kind = "think"
    facts = ToolFacts(changes="plan")
    args_model = UpdatePlanArgs

    def title(self, args: UpdatePlanArgs) -> str:
        done = sum(step.status == "completed" for step in args.plan)
        return f"Update plan ({done}/{len(args.plan)} done)"

    async def run(self, args: UpdatePlanArgs, ctx: ToolContext) -> ToolResult:
        active = [step.step for step in args.plan if step.status == "in_progress"]
        if len(active) > 1:
            listed = "; ".join(repr(step) for step in active)
            raise ToolError(
                f"at most one step can be in_progress at a time, but {len(active)} are: "
                f"{listed}. Mark the others pending or completed and send the plan again."
            )
        entries = [(step.step, step.status) for step in args.plan]
        if ctx.on_plan is not None:
            ctx.on_plan(entries)
        lines = [f"{_MARKS[status]} {step}" for step, status in entries]
        if args.explanation:
            lines.insert(0, args.explanation.strip())
        return ToolResult(
            output="Plan updated",
            raw_output={
                "plan": [{"step": step, "status": status} for step, status in entries],
                "explanation": args.explanation,
            },
            content=[ContentToolCallContent(content=TextContent(text="\n".join(lines)))],
        )
