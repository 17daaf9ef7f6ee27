"""Child sessions: started by a `task` call, run, collected, cancelled and closed with their
parent (docs/subagents.md).

A child is an ordinary session of the manager (its own file, history, grants, settings,
MCP servers), created with a `Lineage` and the permissions `limits.child_plan` allows, and
prompted through the manager like any other (so every rule, hook and approval applies to
it as to any session), through a `ChildLink` on the link of its parent's turn.

Invariants:
- depth: a session at `[agents] max_depth` cannot start children (`refusal`: the task
  tools are then not offered, and a call says why);
- concurrency: at most `[agents] max_concurrent` children of one session run at once;
- a foreground child's turn runs inside the parent's `task` call: cancelling the parent's
  turn cancels the call, which cancels the child's turn and waits for its cleanup (every
  tool call of the child closed) before the parent's call is closed; `cancel_children`
  does the same for the background ones;
- a child stays live until its parent closes (clients can watch or prompt it); closing the
  parent closes its children first;
- a task's processes end with it: whatever the child's commands left running when its turn
  for the `task` call ends (however it ended) is stopped then, and the call's result names
  it, since no one could see or stop it later (the parent's `/ps` lists the parent's own);
- what a child's turns use (tokens, cost) is added to its parent's totals and to
  `Session.children`, and recorded in the parent's file (`subagent_usage`), whatever way
  the turn ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from cody_protocol.content import ContentBlock, TextContent

from ...errors import CodyError
from ...tools.base import ToolError, ToolResult
from ...tools.registry import ToolRegistry
from ..context_items import agent_entry, record
from ..events import AgentText, EngineEvent, SubagentStarted, ToolCallOpened, ToolCallProgress
from ..ports import ApprovalRequest, ClientLink
from ..prompt_files import render
from ..session import Session
from ..slash import parse_command
from ..toolcalls import error_result, text_content
from .child_link import ChildLink
from .limits import child_plan
from .lineage import Lineage
from .outcome import (
    Child,
    add_child_usage,
    answer,
    final_text,
    notes_text,
    raw_output,
    stopped_text,
)
from .profiles import ProfileDirs, ProfileSet, builtin_profiles, load_profiles
from .task_tools import TASK_TOOL, TaskArgs, TaskResultTool, TaskTool

if TYPE_CHECKING:
    from ..manager import SessionManager
    from ..session import TurnOutcome

__all__ = ["Subagents"]

logger = logging.getLogger(__name__)


class Subagents:
    """The manager's child sessions (one per daemon, built by the SessionManager)."""

    def __init__(self, manager: SessionManager) -> None:
        self._manager = manager
        self._children: dict[str, list[Child]] = {}
        """Parent session id -> its children started in this daemon, in order."""
        self._links: dict[str, ClientLink] = {}
        """Session id -> the link of its latest turn (a child's turn talks through it)."""
        self._profiles: dict[str, ProfileSet] = {}
        self._tools: dict[str, ToolRegistry] = {}
        deps = manager.deps
        self._dirs = ProfileDirs(
            cody=deps.paths.config_dir, claude=deps.claude_dir, codex=deps.codex_home
        )
        if TASK_TOOL not in deps.tools:
            deps.tools.register(TaskTool(self, builtin_profiles()))
            deps.tools.register(TaskResultTool(self))

    # -- the session's side ------------------------------------------------------------------

    async def load_profiles(self, session: Session) -> None:
        """Read the agent profiles a native session can use (once, off the event loop); what
        could not be used is added to the session's warnings."""
        if session.settings.backend != "native":
            return
        known = self._manager.deps.tools.names()
        found = await asyncio.to_thread(load_profiles, session.cwd, self._dirs, known)
        for warning in found.warnings:
            logger.info("agent profiles: %s", warning)
        session.settings.warnings.extend(f"agent profiles: {w}" for w in found.warnings)
        self._profiles[session.id] = found

    def tools_for(self, session: Session, tools: ToolRegistry) -> ToolRegistry:
        """`tools` with a `task` tool that lists the session's own agent profiles."""
        profiles = self._profiles.get(session.id)
        task = tools.get(TASK_TOOL)
        if profiles is None or not isinstance(task, TaskTool):
            return tools
        bound = self._tools.get(session.id)
        if bound is None:
            own = task.for_profiles(profiles.profiles)
            bound = ToolRegistry(own if tool.name == TASK_TOOL else tool for tool in tools.tools())
            self._tools[session.id] = bound
        return bound

    def turn_started(self, session: Session, link: ClientLink) -> None:
        """The session's turn talks through `link`: so will its children's."""
        self._links[session.id] = link

    def refusal(self, session_id: str | None) -> str | None:
        """Why the session cannot start children (None: it can, or no session is named)."""
        session = self._manager.live(session_id) if session_id is not None else None
        if session is None:
            return None
        if session.settings.backend != "native":
            return f"a {session.settings.backend} session delegates with its own agent's tools"
        limit = session.settings.agents.max_depth
        depth = session.lineage.depth if session.lineage is not None else 0
        if limit == 0:
            return "subagents are turned off ([agents] max_depth = 0)"
        if depth >= limit:
            return (
                f"this session is a subagent at depth {depth}, and subagents may not start "
                f"subagents of their own past depth {limit} ([agents] max_depth = {limit})"
            )
        return None

    def turn_limit_s(self, session_id: str) -> float:
        session = self._manager.live(session_id)
        return session.settings.agents.timeout_s if session is not None else 1800.0

    # -- task --------------------------------------------------------------------------------

    async def run_task(self, parent_id: str, call_id: str, args: TaskArgs) -> ToolResult:
        parent = self._manager.get(parent_id)
        refusal = self.refusal(parent_id)
        if refusal is not None:
            raise ToolError(f"Cannot start a subagent: {refusal}.")
        running = [child for child in self._children.get(parent_id, ()) if not child.done]
        limit = parent.settings.agents.concurrency
        if len(running) >= limit:
            raise ToolError(
                f"Cannot start a subagent: {len(running)} subagents of this session are "
                f"running, the most allowed at once ([agents] max_concurrent = {limit}). "
                "Collect one with taskResult first."
            )
        profiles = self._profiles.get(parent_id) or ProfileSet(profiles=builtin_profiles())
        name = args.agent or "general"
        profile = profiles.get(name)
        if profile is None:
            raise ToolError(
                f"There is no agent named {name!r}; the agents are: {', '.join(profiles.profiles)}."
            )
        link = self._links.get(parent_id)
        if link is None:  # a task call always runs inside a turn of its parent
            raise ToolError("Cannot start a subagent outside a turn of its parent.")
        spec = self._manager.catalog_of(parent).get(parent.settings.provider)
        plan = child_plan(
            parent.settings,
            profile,
            has_model=lambda model: spec.model_problem(model) is None,
            tool_facts=self._manager.deps.tools.facts(),
        )
        plan.meta.ephemeral = parent.ephemeral
        if (args.isolation or profile.isolation) == "worktree":
            plan.meta.worktree = True
        lineage = Lineage(
            parent_session_id=parent_id,
            parent_tool_call_id=call_id,
            agent=name,
            depth=(parent.lineage.depth if parent.lineage is not None else 0) + 1,
        )
        try:
            session = await self._manager.new_session(str(parent.cwd), plan.meta, lineage=lineage)
        except CodyError as exc:
            raise ToolError(f"Cannot start the subagent: {exc}") from None
        instructions = render("subagent", agent=name, instructions=profile.instructions)
        record(session, agent_entry(session.history, instructions))
        child = Child(session, name, call_id, args.background, plan.notes)
        self._children.setdefault(parent_id, []).append(child)
        parent.children.sessions += 1
        link.emit(
            parent_id,
            SubagentStarted(
                call_id=call_id,
                child_session_id=session.id,
                agent=name,
                background=args.background,
            ),
        )
        if not args.background:
            return await self._run(parent, child, args.prompt, link)
        child.run = asyncio.create_task(self._run(parent, child, args.prompt, link))
        return ToolResult(
            output=(
                f"Started subagent `{name}` in the background (session {session.id}). "
                f'Collect its answer with taskResult {{"sessionId": "{session.id}"}}.'
                + notes_text(child.notes)
            ),
            raw_output=raw_output(child, background=True),
            content=text_content(f"{name} works in the background (session {session.id})"),
        )

    async def _run(
        self, parent: Session, child: Child, prompt: str, link: ClientLink
    ) -> ToolResult:
        """The child's turn for `prompt`: its answer as the `task` call's result."""
        session = child.session
        before = (session.usage_total, session.cost_total_usd)
        child_link = ChildLink(
            link,
            agent=child.agent,
            watch=lambda event: self._watch(parent.id, child, event, link),
            on_approval=lambda request: self._waiting(parent.id, child, request, link),
        )
        start = len(session.history)
        blocks: list[ContentBlock] = [TextContent(text=prompt)]
        if parse_command(blocks) is not None:
            # The model's task text is never one of the child's slash commands (`/approvals`
            # would change the child's settings): it is sent as a task.
            blocks = [TextContent(text=f"Task:\n{prompt}")]
        outcome: TurnOutcome | None = None
        failure: str | None = None
        try:
            outcome = await asyncio.wait_for(
                self._manager.prompt(session.id, blocks, child_link),
                parent.settings.agents.timeout_s,
            )
        except TimeoutError:
            failure = (
                f"the subagent did not finish within {parent.settings.agents.timeout_s:.0f} s "
                "([agents] timeout_s); its turn was cancelled"
            )
        except CodyError as exc:
            failure = str(exc)
        except asyncio.CancelledError:
            child.result = error_result("cancelled with its parent's turn", raw_output(child))
            raise
        finally:
            child.done = True
            add_child_usage(parent, child, before)
            stopped = await _stop_left_running(session)
        text = final_text(session, start)
        if failure is not None:
            result = error_result(
                f"The subagent failed: {failure}."
                + (f"\nIts last words:\n{text}" if text else "")
                + stopped_text(stopped),
                raw_output(child, stop="error"),
            )
        else:
            assert outcome is not None
            result = answer(child, outcome.stop_reason, text, stopped)
        child.result = result
        return result

    # -- taskResult ----------------------------------------------------------------------------

    async def collect(self, parent_id: str, child_id: str, wait_s: float) -> ToolResult:
        child = next(
            (c for c in self._children.get(parent_id, ()) if c.session.id == child_id), None
        )
        if child is None:
            raise ToolError(f"No subagent of this session has the session id {child_id!r}.")
        if child.run is not None and not child.run.done():
            await asyncio.wait({child.run}, timeout=wait_s)  # never cancels the child
        if child.result is not None:
            return child.result
        return ToolResult(
            output=(
                f"Subagent `{child.agent}` (session {child_id}) is still working "
                f"(last: {child.activity}). Call taskResult again to wait for it."
            ),
            raw_output={**raw_output(child), "running": True},
            content=text_content(f"still working: {child.activity}"),
        )

    # -- stopping ----------------------------------------------------------------------------

    def cancel_children(self, parent_id: str) -> None:
        """Cancel the running turns of the session's children (and theirs)."""
        for child in self._children.get(parent_id, ()):
            if child.run is not None and not child.run.done():
                child.run.cancel()
            self._manager.cancel(child.session.id)

    async def stop_all(self) -> None:
        """The daemon is stopping: end every background child's run (their turns are
        cancelled by the manager) before the sessions' files close."""
        runs = [
            child.run
            for children in self._children.values()
            for child in children
            if child.run is not None and not child.run.done()
        ]
        for run in runs:
            run.cancel()
        if runs:
            await asyncio.wait(runs, timeout=5)

    async def close_children(self, session: Session) -> None:
        """Close the session's children (theirs first) before the session itself."""
        self._links.pop(session.id, None)
        self._profiles.pop(session.id, None)
        self._tools.pop(session.id, None)
        for child in self._children.pop(session.id, []):
            if child.run is not None and not child.run.done():
                child.run.cancel()
                with contextlib.suppress(BaseException):
                    await child.run
            if self._manager.live(child.session.id) is not None:
                await self._manager.close(child.session.id)

    # -- what the parent sees ----------------------------------------------------------------

    def _watch(self, parent_id: str, child: Child, event: EngineEvent, link: ClientLink) -> None:
        if isinstance(event, ToolCallOpened):
            activity = event.title
        elif isinstance(event, AgentText):
            activity = "writing its answer"
        else:
            return
        self._show(parent_id, child, activity, link)

    def _waiting(
        self, parent_id: str, child: Child, request: ApprovalRequest, link: ClientLink
    ) -> None:
        self._show(parent_id, child, f"waiting for approval: {request.title}", link)

    def _show(self, parent_id: str, child: Child, activity: str, link: ClientLink) -> None:
        if activity == child.activity:
            return
        child.activity = activity
        if child.background or child.done:
            return  # its `task` call is closed: the child's own updates show it
        link.emit(
            parent_id,
            ToolCallProgress(call_id=child.call_id, content=text_content(f"▸ {activity}")),
        )


async def _stop_left_running(session: Session) -> list[str]:
    """Stop what the child's commands left running; the commands stopped (their titles)."""
    table = session.processes
    if table is None:
        return []
    running = [p for p in table.listed() if p.running]
    for process in running:
        with contextlib.suppress(Exception):  # it ended meanwhile: nothing left to stop
            await table.stop(process.id, by="the end of its subagent's task")
    return [p.facts.title for p in running]
