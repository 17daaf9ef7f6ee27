"""The link a child session's turn talks through: the parent's, with the child's name on it.

Invariants:
- every event of the child goes out on the child's own session id through the link of the
  parent's turn (so to the client that prompted the parent, and, on a warm daemon, to every
  connection watching the parent: rpc/sharing.py attaches them at `SubagentStarted`);
- every approval the child asks, and every question its MCP servers ask, goes to that same
  client; an approval, its title led by the agent's
  name (`[explore] ...`); the rpc layer adds `_meta.cody.parentSessionId`. The child's own
  grants stay the child's: nothing here touches the parent's session;
- `watch` sees each event first (the parent's `task` call shows the child's last activity);
  it must not raise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..events import EngineEvent
from ..ports import (
    ApprovalReply,
    ApprovalRequest,
    ClientFileAccess,
    ClientLink,
    Elicitation,
    ElicitationAnswer,
)

__all__ = ["ChildLink"]


class ChildLink:
    def __init__(
        self,
        parent: ClientLink,
        *,
        agent: str,
        watch: Callable[[EngineEvent], None],
        on_approval: Callable[[ApprovalRequest], None],
    ) -> None:
        self._parent = parent
        self._agent = agent
        self._watch = watch
        self._on_approval = on_approval

    def emit(self, session_id: str, event: EngineEvent) -> None:
        self._watch(event)
        self._parent.emit(session_id, event)

    async def wait_writable(self) -> None:
        await self._parent.wait_writable()

    async def flush(self, session_id: str) -> None:
        await self._parent.flush(session_id)

    async def request_approval(self, session_id: str, request: ApprovalRequest) -> ApprovalReply:
        named = replace(request, title=f"[{self._agent}] {request.title}")
        self._on_approval(named)
        return await self._parent.request_approval(session_id, named)

    async def request_elicitation(self, session_id: str, request: Elicitation) -> ElicitationAnswer:
        # An MCP server of the child asks the same client (the question names its server).
        return await self._parent.request_elicitation(session_id, request)

    def file_access(self) -> ClientFileAccess:
        return self._parent.file_access()

    async def read_text_file(self, session_id: str, path: str) -> str:
        return await self._parent.read_text_file(session_id, path)

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await self._parent.write_text_file(session_id, path, content)
