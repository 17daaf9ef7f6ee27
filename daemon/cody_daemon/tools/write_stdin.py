"""`writeStdin`: send input to a process started by `exec` (background, or still running
after `yieldMs`), then return what it printed since the last read.

Invariants: only the session's own processes with an input (a pipe, or a pseudo-terminal with
`tty`) can be written to; input is a command to the process, so the call goes through the
approval policy like `exec` (a process inside the sandbox is contained by it, so `on-request`
does not ask; one the user let out of the sandbox asks as running it did, its grant covering
that process only; `untrusted` asks for every input); at most `MAX_CHARS` characters a
call; a process that does not read its input fails the call after a few seconds with what
was written, never a hang; `eof` closes a pipe input after writing.
"""

from __future__ import annotations

from typing import Annotated

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..policy.approval import Escalation
from .base import GrantKey, Tool, ToolContext, ToolError, ToolFacts, ToolResult
from .processes.process import ManagedProcess
from .processes.report import MAX_WAIT_MS, find_process, new_output_result, state_line
from .processes.table import ProcessNotFound

__all__ = ["WriteStdinArgs", "WriteStdinTool"]

MAX_CHARS = 64 * 1024
DEFAULT_WAIT_MS = 1000


class WriteStdinArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

    process_id: int = Field(
        alias="processId", ge=1, description="The processId exec returned for the process."
    )
    chars: str = Field(
        max_length=MAX_CHARS,
        description=(
            "What to send, exactly (include \\n to end a line). Under a tty, \\u0003 is "
            "Ctrl-C and \\u0004 Ctrl-D. May be empty to only read."
        ),
    )
    wait_ms: Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS})
    ] = Field(
        default=None,
        alias="waitMs",
        ge=0,
        le=MAX_WAIT_MS,
        description=(
            f"Then wait up to this many milliseconds for its answer (default "
            f"{DEFAULT_WAIT_MS}); the wait ends early when the process exits or its output "
            "pauses."
        ),
    )
    eof: bool = Field(
        default=False,
        description="Close the process's input after writing (end of file), for a pipe.",
    )


class WriteStdinTool(Tool[WriteStdinArgs]):
    name = "writeStdin"
    description = (
        "Send input to a process started by exec with background or yieldMs (a REPL, a "
        "prompt, an interactive program; start it with tty: true if it needs a terminal), "
        "then return what it printed since the last read."
    )
    kind = "execute"
    facts = ToolFacts(changes="programs")
    args_model = WriteStdinArgs

    def title(self, args: WriteStdinArgs) -> str:
        shown = args.chars if len(args.chars) <= 60 else args.chars[:57] + "..."
        return f"Write to process {args.process_id}: {shown!r}"

    def grant_key(self, args: WriteStdinArgs, ctx: ToolContext) -> GrantKey:
        """Input to that one process (an "always" answer covers this process only)."""
        return ("writeStdin", str(args.process_id))

    def _process(self, args: WriteStdinArgs, ctx: ToolContext) -> ManagedProcess | None:
        if ctx.processes is None:
            return None
        try:
            return ctx.processes.get(args.process_id)
        except ProcessNotFound:
            return None

    def runs_unsandboxed(self, args: WriteStdinArgs, ctx: ToolContext) -> bool:
        process = self._process(args, ctx)
        return process is not None and process.facts.isolation == "unavailable"

    def escalation(self, args: WriteStdinArgs, ctx: ToolContext) -> tuple[Escalation, str] | None:
        """Input to a process inside the sandbox (or where none is needed) is contained like
        the process; input to one the user let out of the sandbox asks like running it did
        (`escalate`: an "always" answer is remembered for this process only)."""
        process = self._process(args, ctx)
        if process is not None and process.facts.isolation == "outside":
            return "escalate", "the process runs outside the sandbox"
        return None

    def preview(self, args: WriteStdinArgs, ctx: ToolContext) -> list[ToolCallContent]:
        process = self._process(args, ctx)
        lines = [f"Input for process {args.process_id}: {args.chars!r}"]
        if process is not None:
            lines.append(f"The process: {process.facts.title} (cwd: {process.facts.cwd})")
            if process.facts.isolation in ("unavailable", "outside"):
                lines += [
                    "",
                    "WARNING: this process runs WITHOUT a sandbox, with full access to your "
                    "files and the network.",
                ]
        return [ContentToolCallContent(content=TextContent(text="\n".join(lines)))]

    async def run(self, args: WriteStdinArgs, ctx: ToolContext) -> ToolResult:
        process = find_process(ctx.processes, args.process_id)
        if not process.running:
            raise ToolError(
                f"{state_line(process)} It can take no input; readOutput shows the rest of "
                "its output."
            )
        if process.facts.stdin == "none":
            raise ToolError(
                f"process {process.id} has no input: it was started without background, "
                "yieldMs or tty"
            )
        if args.eof and process.facts.stdin == "tty":
            raise ToolError("eof is for a pipe; under a tty send \\u0004 (Ctrl-D)")
        data = args.chars.encode("utf-8")
        written = await process.write(data)
        if written < len(data):
            raise ToolError(
                f"only {written} of {len(data)} bytes were written: process {process.id} is "
                "not reading its input (or closed it)"
            )
        if args.eof:
            process.close_input()
        wait_ms = DEFAULT_WAIT_MS if args.wait_ms is None else args.wait_ms
        return await new_output_result(process, wait_ms / 1000)

    def time_limit_s(self, args: WriteStdinArgs, ctx: ToolContext) -> float:
        wait_ms = DEFAULT_WAIT_MS if args.wait_ms is None else args.wait_ms
        return wait_ms / 1000 + 30.0
