"""The chat's view of child sessions (subagents): their activity under the parent's `task`
call, and the `/agents` command (list, open, back).

A child streams its updates on its own session id (docs/subagents.md); the renderer reports
each child a `task` call starts (`Renderer.on_child`), and `ChildActivity` then listens to
that id and shows one line per tool call the child makes (and when it starts writing its
answer), indented under the call. The child's answer itself is the call's result, which the
parent's renderer shows. Every text goes through the renderer (inert.py's gate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cody_protocol.updates import AgentMessageChunk, SessionUpdate, ToolCallStart, ToolCallUpdate

from .client import ClientSession, CodyClient, RemoteError
from .inert import one_line
from .progress import Spinner
from .terminal import Renderer

if TYPE_CHECKING:
    from .chat import Chat

__all__ = ["Child", "ChildActivity", "agents_command", "leave_worktrees"]


@dataclass(eq=False)
class Child:
    session_id: str
    agent: str
    call_id: str
    parent_id: str
    calls: dict[str, str] = field(default_factory=dict)
    """Its tool calls' titles, by id."""
    writing: set[str] = field(default_factory=set)
    """Messages it has started writing (shown once each)."""
    stop: Callable[[], None] | None = None


class ChildActivity:
    def __init__(self, client: CodyClient, renderer: Renderer, spinner: Spinner | None) -> None:
        self._client = client
        self._renderer = renderer
        self._spinner = spinner
        self.children: dict[str, Child] = {}
        """Every child seen in this chat, by session id, in the order they started."""
        self.parent_id = ""
        """The session shown now (the children it starts are its)."""

    def watch(self, child_id: str, agent: str, call_id: str) -> None:
        if child_id in self.children:
            return
        child = Child(child_id, agent, call_id, self.parent_id)
        child.stop = self._client.listen(child_id, lambda update: self._show(child, update))
        self.children[child_id] = child

    def of(self, parent_id: str) -> list[Child]:
        return [child for child in self.children.values() if child.parent_id == parent_id]

    def close(self) -> None:
        for child in self.children.values():
            if child.stop is not None:
                child.stop()
                child.stop = None

    def _show(self, child: Child, update: SessionUpdate) -> None:
        if isinstance(update, ToolCallStart):
            child.calls[update.tool_call_id] = update.title
            self._line(child, f"▸ {update.title}")
        elif isinstance(update, ToolCallUpdate) and update.status == "failed":
            title = child.calls.get(update.tool_call_id, update.tool_call_id)
            self._line(child, f"✗ {title}")
        elif isinstance(update, AgentMessageChunk):
            key = update.message_id or ""
            if key not in child.writing:
                child.writing.add(key)
                self._line(child, "writing its answer…")

    def _line(self, child: Child, text: str) -> None:
        spinning = self._spinner is not None and self._spinner.running
        if self._spinner is not None:
            self._spinner.stop()
        self._renderer.child_line(child.agent, text)
        if spinning and self._spinner is not None:
            self._spinner.start()  # the parent still waits (for its child)


async def agents_command(chat: Chat, words: list[str]) -> None:
    """`/agents` (list the shown session's children), `/agents N|ID` (open one: its history
    is replayed, prompts go to it), `/agents back` (return to the session it was opened from).
    Raises ValueError for a number or prefix that names no child."""
    if words == ["back"]:
        if not chat.parents:
            chat.renderer.line("This is not a subagent's session opened with /agents.")
            return
        chat.show(chat.parents.pop())
        chat.renderer.line(f"Back in session {chat.session.id}.")
        return
    children = await _children_of(chat)
    if not words:
        if not children:
            chat.renderer.line("No subagents in this session yet.")
        for number, (child_id, agent, title) in enumerate(children, start=1):
            chat.renderer.line(
                f"{number:>3}. {one_line(agent):10} {one_line(child_id)}  {one_line(title)}"
            )
        if children:
            chat.renderer.line(
                chat.renderer.style.dim("/agents N opens one (/agents back returns).")
            )
        return
    chosen = words[0]
    if chosen.isdigit() and 1 <= int(chosen) <= len(children):
        child_id = children[int(chosen) - 1][0]
    else:
        matches = [c[0] for c in children if c[0].startswith(chosen)]
        if len(matches) != 1:
            raise ValueError("no such subagent")
        child_id = matches[0]
    replay = chat.renderer.fresh()
    try:
        opened = await chat.client.load_session(child_id, chat.cwd, on_update=replay.on_update)
    except RemoteError as exc:
        if exc.code != -32011:
            raise
        # It is running: its activity shows here already; talk to it once it is done.
        opened = ClientSession(chat.client, child_id, chat.cwd)
    chat.parents.append(chat.session)
    chat.show(opened)
    replay.line(
        f"In subagent session {child_id}: prompts go to it now; /agents back returns to its parent."
    )


async def _children_of(chat: Chat) -> list[tuple[str, str, str]]:
    """(session id, agent, title) of the shown session's children: those seen starting in
    this chat, then the saved ones."""
    session_id = chat.session.id
    seen = {c.session_id: c.agent for c in chat.children.of(session_id)}
    titles: dict[str, str] = {}
    saved: list[tuple[str, str, str]] = []
    for info in await chat.client.list_sessions():
        if info.parent_session_id != session_id:
            continue
        titles[info.session_id] = info.title or ""
        if info.session_id not in seen:
            saved.append((info.session_id, "subagent", info.title or ""))
    return [(sid, agent, titles.get(sid, "")) for sid, agent in seen.items()] + saved


async def leave_worktrees(chat: Chat) -> None:
    """The chat ends: close its worktree sessions now, to say what became of each worktree
    (kept, with its branch, or removed)."""
    chat.children.close()
    for session in [*chat.parents, chat.session]:
        if session.meta is None or session.meta.worktree is None:
            continue
        try:
            worktree = await session.close()
        except RemoteError:
            continue
        if worktree is None:
            continue
        if worktree.kept:
            changed = len(worktree.changes)
            chat.renderer.line(
                f"Worktree kept (changes in {changed} file{'s' if changed != 1 else ''}, "
                f"{worktree.commits} commit{'s' if worktree.commits != 1 else ''}): "
                f"{one_line(worktree.path)} on branch {one_line(worktree.branch)}"
            )
        else:
            chat.renderer.line(chat.renderer.style.dim("Worktree removed: nothing changed in it."))
