"""The chat's view of child sessions (subagents): their activity under the parent's `task`
call, and the `/agents` listing.

A child streams its updates on its own session id (docs/subagents.md); the renderer reports
each child a `task` call starts (`Renderer.on_child`), and `ChildActivity` then listens to
that id and shows one line per tool call the child makes (and when it starts writing its
answer), indented under the call. The child's answer itself is the call's result, which the
parent's renderer shows. Every text goes through the renderer (inert.py's gate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cody_protocol.updates import AgentMessageChunk, SessionUpdate, ToolCallStart, ToolCallUpdate

from .client import CodyClient
from .progress import Spinner
from .terminal import Renderer

__all__ = ["ChildActivity", "Child"]


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
