"""`killProcess`: stop a process the session started with `exec` (and everything it
started): SIGTERM, then SIGKILL after a grace time.

Invariants: only the session's own processes can be named (no pid, no approval: it can only
stop what the session started); the call returns once the process is gone, with the output
it printed since the last read and its exit status.
"""

from __future__ import annotations

from cody_protocol.content import ContentToolCallContent, TextContent
from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolContext, ToolFacts, ToolResult
from .processes.report import find_process, raw_state, read_new, state_line
from .processes.table import STOP_GRACE_S

__all__ = ["KillProcessArgs", "KillProcessTool"]


class KillProcessArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    process_id: int = Field(
        alias="processId", ge=1, description="The processId exec returned for the process."
    )


class KillProcessTool(Tool[KillProcessArgs]):
    name = "killProcess"
    description = (
        "Stop a process started by exec (background, or still running after yieldMs) and "
        "everything it started: SIGTERM, then SIGKILL if it is still there after "
        f"{STOP_GRACE_S:g} s. Stop the servers and watchers you started once you no longer "
        "need them."
    )
    kind = "execute"
    facts = ToolFacts(changes="processes")
    args_model = KillProcessArgs

    def title(self, args: KillProcessArgs) -> str:
        return f"Stop process {args.process_id}"

    async def run(self, args: KillProcessArgs, ctx: ToolContext) -> ToolResult:
        process = find_process(ctx.processes, args.process_id)
        was_running = process.running
        await process.stop(STOP_GRACE_S, by="killProcess")
        new = read_new(process)
        first = state_line(process)
        if not was_running:
            first = f"{first} It had ended before this call."
        text = "\n".join([first, *new.lines()])
        return ToolResult(
            output=text,
            raw_output=raw_state(process, new),
            content=[ContentToolCallContent(content=TextContent(text=text))],
        )

    def time_limit_s(self, args: KillProcessArgs, ctx: ToolContext) -> float:
        return STOP_GRACE_S + 30.0
