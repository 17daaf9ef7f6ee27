"""A session's MCP servers from the engine's side: started with the session's hooks, their
status and prompts sent to the clients, their elicitations forwarded, their prompts run.

Invariants (docs/mcp.md):
- `roots/list` answers the session's directory and its extra writable roots; the servers
  are told (`roots/list_changed`) before a turn whose roots differ from the last ones sent;
- an elicitation goes to the client whose prompt runs now (`Session.asker`), redacted, and
  is answered within `approval_timeout_s` (then `cancel`, the request withdrawn), or when the
  turn ends (`cancel`, withdrawn: `Session.asks`); between turns, or when the client cannot
  answer, it is declined: a server never waits forever;
  each one is recorded in the session file (server, mode, action; never the values);
- the time spent waiting for the user counts in `Session.user_waited_s()`, which the tool
  calls' time limits leave out;
- `/mcp:<server>:<prompt> args` runs the prompt's text as a normal turn; a bad argument,
  an unknown prompt or a failing server is answered as text, without a model call.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from cody_protocol.content import ContentBlock

from ..errors import StorageError
from ..policy.secrets import SecretGuard
from ..tools.base import ToolError
from ..tools.mcp.connection import McpStatus
from ..tools.mcp.hooks import Elicitation, ElicitationAnswer, McpClientHooks
from ..tools.mcp.manager import McpSessionManager
from ..tools.mcp.prompts import McpPromptCommand, PromptArgumentError
from ..tools.mcp.specs import McpServerSpec
from .events import McpStatusChanged
from .ports import ClientLink
from .session import Session
from .slash import McpCommandCall, session_commands

__all__ = [
    "elicit",
    "expand_prompt",
    "mcp_commands",
    "session_roots",
    "start_mcp",
]

logger = logging.getLogger(__name__)


def session_roots(session: Session) -> list[Path]:
    """What the session's MCP servers are told to work in (see the module docstring): its
    directory, then its extra writable roots (`[sandbox_workspace_write] writable_roots`,
    `_meta.cody.writableRoots`) that exist, as real paths, each once."""
    settings = session.settings
    roots = [session.cwd]
    for root in (*settings.writable_roots, *settings.added_dirs):
        path = Path(os.path.realpath(os.path.expanduser(root)))
        if path not in roots and path.is_dir():
            roots.append(path)
    return roots


def start_mcp(
    session: Session,
    specs: Sequence[McpServerSpec],
    out: Callable[[], ClientLink | None],
    secrets: Callable[[], SecretGuard],
) -> McpSessionManager:
    """The session's manager, its servers starting in the background; `out()` is where
    out-of-turn events (status, commands) go; `secrets()` what elicitations must not show."""
    session_id = session.id

    def report(status: McpStatus) -> None:
        link = out()
        if link is None:
            return
        link.emit(
            session_id,
            McpStatusChanged(
                server=status.server, state=status.state, reason=status.reason, tools=status.tools
            ),
        )

    def prompts_changed() -> None:
        link = out()
        if link is not None and session.mcp is not None:
            link.emit(session_id, session_commands(session))

    async def ask(request: Elicitation) -> ElicitationAnswer:
        return await elicit(session, request, secrets())

    manager = McpSessionManager(
        specs,
        on_status=report,
        on_prompts=prompts_changed,
        hooks=McpClientHooks(roots=lambda: session_roots(session), elicit=ask),
    )
    manager.start()
    return manager


async def elicit(session: Session, request: Elicitation, guard: SecretGuard) -> ElicitationAnswer:
    """Ask the user through the prompting client (see the module docstring)."""
    link = session.asker
    answer = ElicitationAnswer("decline")
    reason = "no prompt is running"
    if link is not None:
        shown = Elicitation(
            server=request.server,
            mode=request.mode,
            message=guard.redact(request.message),
            requested_schema=request.requested_schema,
            url=request.url,
            elicitation_id=request.elicitation_id,
            call_id=request.call_id,
        )
        ask = asyncio.ensure_future(
            asyncio.wait_for(
                link.request_elicitation(session.id, shown),
                timeout=session.settings.approval_timeout_s,
            )
        )
        session.asks.add(ask)
        if session.ask_notify is not None:
            about = " ".join(shown.message.split())[:200]
            session.ask_notify(f"MCP server {request.server} asks for your input: {about}")
        session.begin_user_wait()
        try:
            answer, reason = await ask, "user"
        except TimeoutError:
            answer, reason = ElicitationAnswer("cancel"), "timeout"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the server's request itself was cancelled
            answer, reason = ElicitationAnswer("cancel"), "the turn ended"
        finally:
            session.asks.discard(ask)
            ask.cancel()
            session.end_user_wait()
    logger.info("MCP server %s asked for input: %s (%s)", request.server, answer.action, reason)
    record = {
        "kind": "mcp_elicitation",
        "server": request.server,
        "mode": request.mode,
        "callId": request.call_id,
        "action": answer.action,
        "reason": reason,
    }
    try:
        session.file.append("event", record)
    except StorageError as exc:  # the answer still goes to the server
        logger.warning("could not record an MCP elicitation: %s", exc)
    return answer


def mcp_commands(session: Session) -> list[McpPromptCommand]:
    return session.mcp.prompt_commands() if session.mcp is not None else []


async def expand_prompt(session: Session, call: McpCommandCall) -> list[ContentBlock] | str:
    """The turn's prompt for an MCP prompt command, or the text answering a mistake."""
    manager = session.mcp
    commands = mcp_commands(session)
    command = next((c for c in commands if c.name == call.name), None)
    if manager is None or command is None:
        known = ", ".join(f"/{c.name}" for c in commands) or "none"
        return f"/{call.name}: no such MCP prompt in this session (its MCP prompts: {known})."
    try:
        blocks = await manager.run_prompt(command, call.argument)
    except PromptArgumentError as exc:
        return str(exc)
    except ToolError as exc:
        return f"/{call.name}: {exc.message}"
    return [*blocks, *call.rest]
