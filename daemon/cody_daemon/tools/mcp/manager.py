"""`McpSessionManager`: a session's MCP servers, started lazily, as Cody tools.

Lifecycle: nothing happens until the first `await tools()` (or `session_tools()` /
`read_resource()`). That call imports the SDK (in a thread: it takes about a second) and starts
every server at once, each in its own asyncio task that owns its SDK client (anyio task groups
and context managers stay inside that task, entered and left in order). Invariants:

- Each server gets its own `startup_timeout_s`, counted from its launch: one that does not
  finish the handshake and `tools/list` in time is reported `failed` at that moment (its
  cleanup continues in the background) and never delays the others or the session.
- `tools()` returns the tools of the servers that are ready, built once: later calls return the
  same list and never restart a failed server.
- Every state change is reported once through `on_status` (`starting` -> `ready` | `failed`, and
  `ready` -> `failed` when a server dies), with a reason a user can act on. `statuses()` gives
  the current ones.
- `aclose()` stops every server (stdio processes end and are reaped) and returns once every
  task the manager started is done; it is idempotent.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..base import Tool, ToolError
from .read_resource import ReadMcpResourceTool
from .specs import McpHttp, McpServerSpec
from .tool import MAX_OUTPUT_CHARS, McpTool, tool_name

if TYPE_CHECKING:
    import anyio
    from mcp.client.client import Client
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpToolDef

    from .transport import HttpEndpoint, StdioProcess

__all__ = ["McpSessionManager", "McpState", "McpStatus"]

log = logging.getLogger(__name__)

McpState = Literal["starting", "ready", "failed"]
CLOSE_TIMEOUT_S = 8.0
"""How long `aclose()` lets servers exit gracefully before cancelling their tasks."""
_MAX_TOOL_PAGES = 50


@dataclass(frozen=True, slots=True)
class McpStatus:
    server: str
    state: McpState
    reason: str | None = None
    """Why the server failed (None unless `failed`)."""
    tools: int = 0
    """How many tools it offers (when `ready`)."""


async def _load_sdk() -> None:
    """Import transport.py (and with it the SDK) in a thread, so the loop is not blocked."""
    await asyncio.to_thread(importlib.import_module, f"{__package__}.transport")


class _Connection:
    """One server: its state and SDK client, run by its own task (`_run`)."""

    def __init__(self, spec: McpServerSpec, report: Callable[[McpStatus], None]) -> None:
        self.spec = spec
        self.state: McpState = "starting"
        self.reason: str | None = None
        self.tool_defs: list[McpToolDef] = []
        self.has_resources = False
        self.task: asyncio.Task[None] | None = None
        self.settled = asyncio.Event()
        self._report = report
        self._wake = asyncio.Event()
        self._stopping = False
        self._client: Client | None = None
        self._scope: anyio.CancelScope | None = None
        self._stdio: StdioProcess | None = None
        self._http: HttpEndpoint | None = None

    def status(self) -> McpStatus:
        tools = len(self.tool_defs) if self.state == "ready" else 0
        return McpStatus(self.spec.name, self.state, self.reason, tools)

    def start(self) -> None:
        if self.spec.unavailable is not None:
            self.fail(self.spec.unavailable)
            self.settled.set()
            return
        self.task = asyncio.create_task(self._run(), name=f"mcp:{self.spec.name}")

    async def wait_started(self) -> None:
        """Wait for ready/failed; at `startup_timeout_s`, fail and cancel the start."""
        timeout = self.spec.startup_timeout_s
        try:
            await asyncio.wait_for(self.settled.wait(), timeout)
        except TimeoutError:
            tail = self._stdio.tail.suffix() if self._stdio is not None else ""
            self.fail(
                f"timed out after {timeout:g} s without finishing the MCP handshake and "
                f"tools/list; if it is only slow to start, raise startup_timeout_s in "
                f"{self.spec.config_key}{tail}"
            )
            self.stop(fast=True)

    def stop(self, *, fast: bool = False) -> None:
        """Ask the task to end: leave the client (graceful exit) or, `fast`, cancel it."""
        self._stopping = True
        self._wake.set()
        if fast or self.state == "starting" or (self.state == "failed" and self._client is None):
            if self._stdio is not None:
                self._stdio.grace_s = 0.2
            if self._scope is not None:
                self._scope.cancel()

    async def _run(self) -> None:
        import anyio

        from .transport import describe_failure

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._stopping:
                    scope.cancel()
                async with self._open_client() as client:
                    await self._list(client)
                    self._client = client
                    self._ready()
                    await self._wake.wait()
            if not self._stopping:  # the stdio server closed its stdout: it died
                self.fail(describe_failure(EOFError(), self.spec, stdio=self._stdio))
        except Exception as exc:
            self.fail(describe_failure(exc, self.spec, stdio=self._stdio, http=self._http))
        finally:
            self._client = None
            self.settled.set()

    @asynccontextmanager
    async def _open_client(self) -> AsyncIterator[Client]:
        from .transport import HttpEndpoint, StdioProcess, make_client

        if isinstance(self.spec.transport, McpHttp):
            self._http = HttpEndpoint(self.spec.transport)
            streams = self._http.open()
        else:
            self._stdio = StdioProcess(self.spec.transport, on_closed=self._wake.set)
            streams = self._stdio.open()
        async with make_client(streams) as client:
            yield client

    async def _list(self, client: Client) -> None:
        capabilities = client.server_capabilities
        self.has_resources = capabilities.resources is not None
        if capabilities.tools is None:
            return
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            self.tool_defs.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break

    def _ready(self) -> None:
        if self.state == "starting":
            self.state = "ready"
            self._report(self.status())
        self.settled.set()

    def fail(self, reason: str) -> None:
        if self.state == "failed" or (self._stopping and self.state == "ready"):
            return  # already reported, or a deliberate shutdown
        self.state = "failed"
        self.reason = reason
        self._report(self.status())

    def _require(self) -> Client:
        if self._client is None or self.state != "ready":
            why = self.reason or "it is not running"
            raise ToolError(f"MCP server {self.spec.name!r} is not available: {why}")
        return self._client

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        client = self._require()
        try:
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=self.spec.tool_timeout_s
            )
        except Exception as exc:
            raise self._request_error(exc, f"the call to {tool}") from None

    async def read_resource(self, uri: str) -> str:
        client = self._require()
        if not self.has_resources:
            raise ToolError(f"MCP server {self.spec.name!r} does not offer resources")
        try:
            result = await client.read_resource(uri)
        except Exception as exc:
            raise self._request_error(exc, f"reading {uri}") from None
        return _resource_text(result.contents)

    def _request_error(self, exc: Exception, what: str) -> ToolError:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        name = self.spec.name
        if (
            isinstance(exc, MCPError)
            and exc.code == REQUEST_TIMEOUT
            or isinstance(exc, TimeoutError)
        ):
            return ToolError(
                f"MCP server {name!r} did not answer {what} within "
                f"{self.spec.tool_timeout_s:g} s; if it needs longer, raise tool_timeout_s in "
                f"{self.spec.config_key}"
            )
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            why = f": {self.reason}" if self.reason else ""
            return ToolError(f"MCP server {name!r} closed the connection during {what}{why}")
        if isinstance(exc, MCPError):
            return ToolError(f"MCP server {name!r} refused {what}: {exc.message}")
        return ToolError(f"MCP server {name!r} failed {what}: {type(exc).__name__}: {exc}")


def _resource_text(contents: Sequence[Any]) -> str:
    from mcp_types import TextResourceContents

    parts: list[str] = []
    for item in contents:
        if isinstance(item, TextResourceContents):
            body = item.text
        else:
            size = len(item.blob) * 3 // 4 - item.blob[-2:].count("=")
            body = f"[binary resource: {item.mime_type or 'unknown type'}, {size} bytes]"
        parts.append(f"[{item.uri}]\n{body}" if len(contents) > 1 else body)
    text = "\n\n".join(parts) if parts else "(the resource is empty)"
    if len(text) > MAX_OUTPUT_CHARS:
        text = f"{text[:MAX_OUTPUT_CHARS]}\n[cut: {len(text) - MAX_OUTPUT_CHARS} more characters]"
    return text


class McpSessionManager:
    """The MCP servers of one session (see the module docstring for the lifecycle)."""

    def __init__(
        self,
        servers: Sequence[McpServerSpec],
        *,
        on_status: Callable[[McpStatus], None] | None = None,
    ) -> None:
        self._connections: dict[str, _Connection] = {}
        for spec in servers:
            if spec.name in self._connections:
                raise ValueError(f"two MCP servers are named {spec.name!r}")
            self._connections[spec.name] = _Connection(spec, self._emit)
        self._on_status = on_status
        self._startup: asyncio.Task[None] | None = None
        self._tools: list[Tool[Any]] | None = None
        self._closed = False

    def server_names(self) -> list[str]:
        return list(self._connections)

    def specs(self) -> list[McpServerSpec]:
        """The servers' specs (their environments and headers are secrets to redact)."""
        return [connection.spec for connection in self._connections.values()]

    def statuses(self) -> list[McpStatus]:
        """The current status of every server (all `starting` before the first `tools()`)."""
        return [connection.status() for connection in self._connections.values()]

    async def tools(self) -> list[Tool[Any]]:
        """The ready servers' tools; the first call starts the servers and waits for them."""
        await self._ensure_started()
        if self._tools is None:
            taken: set[str] = set()
            tools: list[Tool[Any]] = []
            for connection in self._connections.values():
                if connection.state != "ready":
                    continue
                spec = connection.spec
                for tool in connection.tool_defs:
                    tools.append(
                        McpTool(
                            name=tool_name(spec.name, tool.name, taken),
                            server=spec.name,
                            remote_name=tool.name,
                            description=tool.description,
                            title=tool.title,
                            input_schema=tool.input_schema,
                            requires_approval=spec.requires_approval,
                            caller=connection,
                            timeout_s=spec.tool_timeout_s,
                            timeout_setting=spec.config_key,
                        )
                    )
            self._tools = tools
        return list(self._tools)

    async def session_tools(self) -> list[Tool[Any]]:
        """`tools()` plus `readMcpResource` when at least one server is running (a tool
        that cannot work is not offered: a server that failed to start brings none)."""
        if not self._connections:
            return []
        tools = await self.tools()
        if not any(c.state == "ready" for c in self._connections.values()):
            return tools
        return [*tools, ReadMcpResourceTool(self)]

    async def read_resource(self, server: str, uri: str) -> str:
        """The text of a resource (binary contents described); raises ToolError."""
        connection = self._connections.get(server)
        if connection is None:
            known = ", ".join(self._connections) or "none"
            raise ToolError(f"no MCP server named {server!r} in this session (servers: {known})")
        await self._ensure_started()
        return await connection.read_resource(uri)

    async def aclose(self) -> None:
        """Stop every server and wait for their tasks (bounded: see CLOSE_TIMEOUT_S)."""
        self._closed = True
        connections = list(self._connections.values())
        for connection in connections:
            connection.stop()
        tasks = [c.task for c in connections if c.task is not None]
        if self._startup is not None:
            tasks.append(self._startup)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT_S)
        if pending:
            for connection in connections:
                connection.stop(fast=True)
            await asyncio.wait(pending)

    async def _ensure_started(self) -> None:
        if self._closed:
            raise ToolError("the session's MCP servers are shut down")
        if self._startup is None:
            self._startup = asyncio.create_task(self._start_all(), name="mcp:startup")
        # Shielded: a cancelled caller (an interrupted turn) must not cancel the startup.
        await asyncio.shield(self._startup)

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
                connection.fail(f"cannot load the MCP client library: {exc}")
                connection.settled.set()
            return
        if self._closed:
            return
        for connection in connections:
            connection.start()
        await asyncio.gather(*(connection.wait_started() for connection in connections))

    def _emit(self, status: McpStatus) -> None:
        if status.state == "failed":
            log.warning("MCP server %s failed: %s", status.server, status.reason)
        if self._on_status is None:
            return
        try:
            self._on_status(status)
        except Exception:
            log.exception("the MCP status callback failed")
