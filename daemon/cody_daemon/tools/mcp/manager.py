"""`McpSessionManager`: a session's MCP servers, started lazily, as Cody tools and commands.

Lifecycle: nothing happens until the first `start()` (or any call that needs the servers).
That imports the SDK (in a thread: it takes about a second) and starts every server at once,
each as an `McpConnection` (connection.py: its runs, restarts and requests). Invariants:

- Each server gets its own `startup_timeout_s`; one that does not start in time is `failed`
  and never delays the others or the session.
- `tools()` waits for every server's start; `turn_tools(wait_s)` (what a turn uses before
  each model call) waits at most `wait_s`, once per session, returns the tools of the servers
  ready by then, and reports each server still starting once more (`_cody/mcp/status`, with a
  reason saying its tools join later): a slow server never holds a turn beyond that wait.
- The tool list is rebuilt only when a server's set changes (it became ready, gave up after
  crashes, or sent `tools/list_changed`): `generation` counts those changes. A re-listing in
  progress is waited for (at most `wait_s`) by `turn_tools`, so the model call after a
  `tools/list_changed` gets the new list. A crashed stdio
  server keeps its tools while it may still be restarted (its next call restarts it).
- Tools a server marks `execution.taskSupport: "required"` are not offered (Cody does not
  run MCP tasks); `absent()` names them with why, and the resource tools when no server
  offering resources runs.
- Every state change is reported once through `on_status`; a change of the servers' prompts
  (the slash commands) through `on_prompts`.
- `aclose()` stops every server (stdio processes end and are reaped) and returns once every
  task the manager started is done; it is idempotent.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cody_protocol.content import ContentBlock

from ..base import Tool, ToolError
from . import SESSION_TOOLS
from .connection import McpConnection, McpState, McpStatus
from .hooks import McpClientHooks
from .prompts import McpPromptCommand, parse_arguments, prompt_blocks
from .resources import ListMcpResourcesTool, ListMcpResourceTemplatesTool, ReadMcpResourceTool
from .specs import McpServerSpec
from .tool import McpTool, approval_of, tool_name

__all__ = ["TURN_WAIT_S", "McpSessionManager", "McpState", "McpStatus"]

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 8.0
"""How long `aclose()` lets servers exit gracefully before cancelling their tasks."""
TURN_WAIT_S = 3.0
"""How long a turn waits for servers still starting before it goes on without them."""


async def _load_sdk() -> None:
    """Import transport.py (and with it the SDK) in a thread, so the loop is not blocked."""
    await asyncio.to_thread(importlib.import_module, f"{__package__}.transport")


class McpSessionManager:
    """The MCP servers of one session (see the module docstring)."""

    def __init__(
        self,
        servers: Sequence[McpServerSpec],
        *,
        on_status: Callable[[McpStatus], None] | None = None,
        on_prompts: Callable[[], None] | None = None,
        hooks: McpClientHooks | None = None,
    ) -> None:
        self._hooks = hooks or McpClientHooks()
        self._connections: dict[str, McpConnection] = {}
        for spec in servers:
            if spec.name in self._connections:
                raise ValueError(f"two MCP servers are named {spec.name!r}")
            self._connections[spec.name] = McpConnection(
                spec, self._emit, hooks=self._hooks, on_change=self._changed
            )
        self._on_status = on_status
        self._on_prompts = on_prompts
        self._startup: asyncio.Task[None] | None = None
        self._tools: list[Tool[Any]] = []
        self._tasks_only: dict[str, str] = {}
        self._built: int | None = None
        self._waited = False
        self.generation = 0
        """Counts the changes of the servers' tools and prompts."""
        self._closed = False

    def server_names(self) -> list[str]:
        return list(self._connections)

    def specs(self) -> list[McpServerSpec]:
        """The servers' specs (their environments and headers are secrets to redact)."""
        return [connection.spec for connection in self._connections.values()]

    def statuses(self) -> list[McpStatus]:
        """The current status of every server (all `starting` before the first start)."""
        return [connection.status() for connection in self._connections.values()]

    # -- tools ----------------------------------------------------------------------------

    async def tools(self) -> list[Tool[Any]]:
        """The MCP tools, once every server has started or failed."""
        await self._ensure_started()
        return self._current_tools()

    async def session_tools(self) -> list[Tool[Any]]:
        """`tools()` plus the resource tools when a server offering resources runs."""
        if not self._connections:
            return []
        await self._ensure_started()
        return self._with_resource_tools()

    async def turn_tools(self, wait_s: float = TURN_WAIT_S) -> list[Tool[Any]]:
        """What a model call gets: waits at most `wait_s` for servers still starting (then
        reports them: see the module docstring)."""
        if not self._connections:
            return []
        startup = self._begin()
        if not startup.done() and not self._waited:
            self._waited = True  # once: later model calls take whoever is ready by then
            await asyncio.wait({startup}, timeout=wait_s)  # a cancel leaves startup running
            if not startup.done():
                for connection in self._connections.values():
                    if connection.state == "starting" and not connection.restarts:
                        self._emit(
                            McpStatus(
                                connection.spec.name,
                                "starting",
                                "still starting: the turn goes on without its tools, which "
                                "join the next model call once it is ready",
                            )
                        )
        relisting = [
            asyncio.ensure_future(c.listed.wait())
            for c in self._connections.values()
            if not c.listed.is_set()
        ]
        if relisting:  # a tools/list_changed just came: its new list is for this model call
            _, late = await asyncio.wait(relisting, timeout=wait_s)
            for waiter in late:
                waiter.cancel()
        return self._with_resource_tools()

    def _with_resource_tools(self) -> list[Tool[Any]]:
        tools = self._current_tools()
        if self.resource_servers():
            tools += [
                ListMcpResourcesTool(self),
                ListMcpResourceTemplatesTool(self),
                ReadMcpResourceTool(self),
            ]
        return tools

    def _current_tools(self) -> list[Tool[Any]]:
        if self._built != self.generation:
            self._build_tools()
        return list(self._tools)

    def _build_tools(self) -> None:
        taken: set[str] = set()
        tools: list[Tool[Any]] = []
        tasks_only: dict[str, str] = {}
        for connection in self._connections.values():
            if not connection.offers_tools:
                continue
            spec = connection.spec
            for tool in connection.tool_defs:
                name = tool_name(spec.name, tool.name, taken)
                if tool.execution is not None and tool.execution.task_support == "required":
                    tasks_only[name] = (
                        f"{spec.name}'s tool {tool.name} runs only as an MCP task, which Cody "
                        "does not support yet"
                    )
                    continue
                approval = approval_of(
                    spec.requires_approval, spec.trust_annotations, tool.annotations
                )
                tools.append(
                    McpTool(
                        name=name,
                        server=spec.name,
                        remote_name=tool.name,
                        description=tool.description,
                        title=tool.title,
                        input_schema=tool.input_schema,
                        requires_approval=approval.requires_approval,
                        read_only=approval.read_only,
                        caller=connection,
                        timeout_s=spec.tool_timeout_s,
                        timeout_setting=spec.config_key,
                    )
                )
        self._tools = tools
        self._tasks_only = tasks_only
        self._built = self.generation

    def absent(self) -> dict[str, str]:
        """MCP tools not offered to the model, with why (`_cody/tools/list` `absent`)."""
        if not self._connections:
            return {}
        self._current_tools()
        absent = dict(self._tasks_only)
        if not self.resource_servers():
            running = any(c.offers_tools for c in self._connections.values())
            why = (
                "none of the session's MCP servers offers resources"
                if running
                else "none of the session's MCP servers is running"
            )
            absent.update(dict.fromkeys(SESSION_TOOLS, why))
        return absent

    # -- resources ------------------------------------------------------------------------

    def resource_servers(self) -> list[str]:
        return [
            name
            for name, connection in self._connections.items()
            if connection.offers_tools and connection.has_resources
        ]

    def _connection(self, server: str) -> McpConnection:
        connection = self._connections.get(server)
        if connection is None:
            known = ", ".join(self._connections) or "none"
            raise ToolError(f"no MCP server named {server!r} in this session (servers: {known})")
        return connection

    async def read_resource(self, server: str, uri: str) -> Any:
        connection = self._connection(server)
        await self._ensure_started()
        return await connection.read_resource(uri)

    async def list_resources(self, server: str, cursor: str | None) -> Any:
        connection = self._connection(server)
        await self._ensure_started()
        return await connection.list_resources(cursor)

    async def list_resource_templates(self, server: str, cursor: str | None) -> Any:
        connection = self._connection(server)
        await self._ensure_started()
        return await connection.list_resource_templates(cursor)

    # -- prompts (slash commands) ---------------------------------------------------------

    def prompt_commands(self) -> list[McpPromptCommand]:
        """The prompts, as slash commands, of the servers that are ready or crashed and
        restartable (running one restarts it, as a tool call does); names unique: the first
        wins."""
        commands: dict[str, McpPromptCommand] = {}
        for name, connection in self._connections.items():
            if not connection.offers_tools:
                continue
            for prompt in connection.prompt_defs:
                command = McpPromptCommand.of(name, prompt)
                commands.setdefault(command.name, command)
        return list(commands.values())

    def prompt_command(self, name: str) -> McpPromptCommand | None:
        return next((c for c in self.prompt_commands() if c.name == name), None)

    async def run_prompt(self, command: McpPromptCommand, argument: str) -> list[ContentBlock]:
        """The turn's prompt for `/command argument`; raises PromptArgumentError (bad words)
        or ToolError (the server failed)."""
        arguments = parse_arguments(command, argument)
        result = await self._connection(command.server).get_prompt(command.prompt, arguments)
        return prompt_blocks(result)

    # -- roots ----------------------------------------------------------------------------

    def roots_changed(self) -> None:
        """The session's roots may have changed: servers that were told others are sent
        `roots/list_changed` (they then ask `roots/list` again)."""
        roots = tuple(str(path) for path in self._hooks.roots())
        for connection in self._connections.values():
            connection.roots_changed(roots)

    def roots(self) -> list[Path]:
        return list(self._hooks.roots())

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the servers in the background (once)."""
        if self._connections and not self._closed:
            self._begin()

    async def aclose(self) -> None:
        """Stop every server and wait for their tasks (bounded: see CLOSE_TIMEOUT_S)."""
        self._closed = True
        connections = list(self._connections.values())
        for connection in connections:
            connection.stop()
        tasks: list[asyncio.Task[Any]] = [c.task for c in connections if c.task is not None]
        if self._startup is not None:
            tasks.append(self._startup)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT_S)
        if pending:
            for connection in connections:
                connection.stop(fast=True)
            await asyncio.wait(pending)

    def _begin(self) -> asyncio.Task[None]:
        if self._closed:
            raise ToolError("the session's MCP servers are shut down")
        if self._startup is None:
            self._startup = asyncio.create_task(self._start_all(), name="mcp:startup")
        return self._startup

    async def _ensure_started(self) -> None:
        # Shielded: a cancelled caller (an interrupted turn) must not cancel the startup.
        await asyncio.shield(self._begin())

    async def _start_all(self) -> None:
        connections = list(self._connections.values())
        if not connections:
            return
        for connection in connections:
            self._emit(connection.status())
        try:
            await _load_sdk()
        except Exception as exc:  # a broken installation: say so for every server
            for connection in connections:
                connection.fail_to_load(f"cannot load the MCP client library: {exc}")
            return
        if self._closed:
            return
        for connection in connections:
            connection.start()
        await asyncio.gather(*(connection.wait_started() for connection in connections))

    def _changed(self, connection: McpConnection) -> None:
        self.generation += 1
        if self._on_prompts is not None and connection.has_prompts:
            try:
                self._on_prompts()
            except Exception:
                log.exception("the MCP prompts callback failed")

    def _emit(self, status: McpStatus) -> None:
        if status.state == "failed":
            log.warning("MCP server %s failed: %s", status.server, status.reason)
        if self._on_status is None:
            return
        try:
            self._on_status(status)
        except Exception:
            log.exception("the MCP status callback failed")
