"""The model's delegation tools: `task` (start a child session) and `taskResult` (collect a
background one). Both run through `Subagents` (children.py); the tools only parse, describe
and bound the calls.

`task`'s description lists the agent profiles a session can use, so each native session's
turn gets its own copy (`TaskTool.for_profiles`); the registered one lists the built-ins.
Both are honest tools (docs/architecture.md): where a session may not start children (its
depth is `[agents] max_depth`, or that is 0) they are not offered, and a call says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...config.model import ToolConfig
from ...tools.base import OWN_DEADLINE_MARGIN_S, A, Tool, ToolContext, ToolFacts, ToolResult
from ..prompt_files import prompt, render
from .profiles import AgentProfile

if TYPE_CHECKING:
    from .children import Subagents

__all__ = [
    "TASK_TOOL",
    "TASK_RESULT_TOOL",
    "TaskArgs",
    "TaskResultArgs",
    "TaskResultTool",
    "TaskTool",
]

TASK_TOOL = "task"
TASK_RESULT_TOOL = "taskResult"
DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000


class TaskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(
        min_length=1,
        max_length=200,
        description="A short (3-6 words) name of the task, shown to the user.",
    )
    prompt: str = Field(
        min_length=1,
        description="The whole task for the subagent: what to do, the context it needs, and "
        "what to return.",
    )
    agent: str | None = Field(
        default=None, description="Which agent runs it (see the list above); default general."
    )
    background: bool = Field(
        default=False,
        description="Return at once and let it work; collect its answer with taskResult.",
    )
    isolation: Literal["worktree"] | None = Field(
        default=None,
        description='"worktree": it works in a new git worktree of the project (its own '
        "branch), so its edits cannot collide with yours or another subagent's.",
    )


class TaskResultArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(
        alias="sessionId", min_length=1, description="The session id `task` returned."
    )
    wait_ms: int = Field(
        default=DEFAULT_WAIT_MS,
        alias="waitMs",
        ge=0,
        le=MAX_WAIT_MS,
        description="How long to wait for it to finish (milliseconds).",
    )


class _SubagentTool(Tool[A]):
    """A tool of the subagents: not offered where the session cannot start children
    (`Subagents.refusal` says why)."""

    _subagents: Subagents

    def unavailable(
        self,
        env: Mapping[str, str],
        tool_config: Mapping[str, ToolConfig],
        session_id: str | None = None,
    ) -> str | None:
        return super().unavailable(env, tool_config, session_id) or self._subagents.refusal(
            session_id
        )


class TaskTool(_SubagentTool[TaskArgs]):
    name = TASK_TOOL
    kind = "other"
    facts = ToolFacts(changes="agents")
    args_model = TaskArgs

    def __init__(self, subagents: Subagents, profiles: Mapping[str, AgentProfile]) -> None:
        self._subagents = subagents
        self._profiles = dict(profiles)
        self.description = render("tools/task", agents=_agent_lines(profiles))

    def for_profiles(self, profiles: Mapping[str, AgentProfile]) -> TaskTool:
        """A copy whose description lists `profiles` (a session's own)."""
        return TaskTool(self._subagents, profiles)

    def title(self, args: TaskArgs) -> str:
        return f"{args.agent or 'general'}: {' '.join(args.description.split())}"

    def time_limit_s(self, args: TaskArgs, ctx: ToolContext) -> float:
        if args.background:
            return 600.0  # starting it only (a worktree may be checked out)
        return self._subagents.turn_limit_s(ctx.session_id) + OWN_DEADLINE_MARGIN_S

    async def run(self, args: TaskArgs, ctx: ToolContext) -> ToolResult:
        return await self._subagents.run_task(ctx.session_id, ctx.call_id, args)


class TaskResultTool(_SubagentTool[TaskResultArgs]):
    name = TASK_RESULT_TOOL
    kind = "other"
    facts = ToolFacts(changes="agents")
    args_model = TaskResultArgs

    def __init__(self, subagents: Subagents) -> None:
        self._subagents = subagents
        self.description = prompt("tools/task_result")

    def title(self, args: TaskResultArgs) -> str:
        return f"result of {args.session_id}"

    def time_limit_s(self, args: TaskResultArgs, ctx: ToolContext) -> float:
        return args.wait_ms / 1000 + OWN_DEADLINE_MARGIN_S

    async def run(self, args: TaskResultArgs, ctx: ToolContext) -> ToolResult:
        return await self._subagents.collect(ctx.session_id, args.session_id, args.wait_ms / 1000)


def _agent_lines(profiles: Mapping[str, AgentProfile]) -> str:
    return "\n".join(f"- {name}: {profile.description}" for name, profile in profiles.items())
