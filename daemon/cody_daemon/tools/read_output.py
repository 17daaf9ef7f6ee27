"""`readOutput`: what a process started by `exec` (background, or still running after
`yieldMs`) printed since the last read, and whether it still runs.

Invariants: reads nothing but the session's own process table (no approval: it starts and
changes nothing); each read starts where the previous one ended; waits at most `waitMs`
(returning early when the process ends, or when its output pauses: tools/processes/report.py);
the output is cut like exec's (first and last 32 KiB) and redacted by the engine like any
tool result.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from .base import Tool, ToolContext, ToolFacts, ToolResult
from .processes.report import MAX_WAIT_MS, find_process, new_output_result

__all__ = ["ReadOutputArgs", "ReadOutputTool"]


class ReadOutputArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    process_id: int = Field(
        alias="processId", ge=1, description="The processId exec returned for the process."
    )
    wait_ms: Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS})
    ] = Field(
        default=None,
        alias="waitMs",
        ge=0,
        le=MAX_WAIT_MS,
        description=(
            "Wait up to this many milliseconds for output (default 0: return at once). The "
            "wait ends early when the process exits or its output pauses."
        ),
    )


class ReadOutputTool(Tool[ReadOutputArgs]):
    name = "readOutput"
    description = (
        "Read what a process started by exec (background, or still running after yieldMs) "
        "printed since the last read, and whether it is still running or how it exited. Use "
        "waitMs to wait for output (a server starting, a test run)."
    )
    kind = "read"
    facts = ToolFacts(changes="processes")
    args_model = ReadOutputArgs

    def title(self, args: ReadOutputArgs) -> str:
        return f"Read the output of process {args.process_id}"

    async def run(self, args: ReadOutputArgs, ctx: ToolContext) -> ToolResult:
        process = find_process(ctx.processes, args.process_id)
        return await new_output_result(process, (args.wait_ms or 0) / 1000)

    def time_limit_s(self, args: ReadOutputArgs, ctx: ToolContext) -> float:
        return (args.wait_ms or 0) / 1000 + 30.0
