"""One MCP server of a session: its runs, its state, and every request Cody makes of it.

A server runs as a sequence of *attempts* (`_Attempt`): the first start, then a restart after
each crash. An attempt is one asyncio task that owns its SDK client (anyio task groups and
context managers stay inside that task, entered and left in order). Invariants:

- Each attempt gets its own `startup_timeout_s`, counted from its launch: one that does not
  finish the handshake and listing in time is `failed` at that moment (its cleanup goes on in
  the background) and never delays the others or the session.
- A stdio server that dies after it was ready is *restartable*: its tools stay offered, its
  state is `failed` with a reason saying it will be restarted, and the next request restarts
  it, at the earliest `RESTART_BACKOFF_S[n]` after the crash. After `MAX_RESTARTS` restarts it
  is not restarted again (`gave_up`): its tools are no longer offered. A server that never
  became ready is never restarted (it would fail the same way).
- `tools/list_changed` and `prompts/list_changed` re-list (coalesced: one listing at a time,
  repeated once when more changes came meanwhile), then `on_change` tells the manager.
- A tool call's own deadline (`tool_timeout_s`) does not count the time spent waiting for the
  user's answer to an elicitation; the call is cancelled on the wire when it passes it.
- Every state change is reported once through `report`.

This module imports the `mcp` SDK only inside functions (see manager.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..base import Progress, ToolError
from .client_features import ClientFeatures
from .hooks import McpClientHooks
from .requests import (
    all_prompts,
    all_tools,
    request_error,
    set_log_level,
    timeout_error,
    within_deadline,
)
from .specs import McpHttp, McpServerSpec

if TYPE_CHECKING:
    import anyio
    from mcp.client.client import Client
    from mcp.client.session import IncomingMessage
    from mcp_types import (
        CallToolResult,
        GetPromptResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        Prompt,
        ReadResourceResult,
    )
    from mcp_types import Tool as McpToolDef

    from .transport import HttpEndpoint, StdioProcess

__all__ = ["MAX_RESTARTS", "RESTART_BACKOFF_S", "McpConnection", "McpState", "McpStatus"]

log = logging.getLogger(__name__)

McpState = Literal["starting", "ready", "failed"]
MAX_RESTARTS = 3
RESTART_BACKOFF_S = (1.0, 2.0, 4.0)
"""How long after a crash the n-th restart may start (a call that comes later waits not)."""


@dataclass(frozen=True, slots=True)
class McpStatus:
    server: str
    state: McpState
    reason: str | None = None
    """Why the server failed, or why it is (re)starting; None when there is nothing to say."""
    tools: int = 0
    """How many tools it offers (when `ready`)."""


@dataclass(eq=False)
class _Attempt:
    """One run of the server (the first start or a restart)."""

    task: asyncio.Task[None] | None = None
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the attempt is ready or has failed."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: bool = False
    client: Client | None = None
    scope: anyio.CancelScope | None = None
    stdio: StdioProcess | None = None
    http: HttpEndpoint | None = None
    was_ready: bool = False


class McpConnection:
    """One server (see the module docstring)."""

    def __init__(
        self,
        spec: McpServerSpec,
        report: Callable[[McpStatus], None],
        *,
        hooks: McpClientHooks | None = None,
        on_change: Callable[[McpConnection], None] | None = None,
    ) -> None:
        self.spec = spec
        self.state: McpState = "starting"
        self.reason: str | None = None
        self.tool_defs: list[McpToolDef] = []
        self.prompt_defs: list[Prompt] = []
        self.has_resources = False
        self.has_prompts = False
        self.restarts = 0
        self.gave_up = False
        """Crashed once too often: not restarted again, its tools are not offered."""
        self._report = report
        self._hooks = hooks or McpClientHooks()
        self._on_change = on_change
        self._attempt = _Attempt()
        self._crashed_at: float | None = None
        self._restart_lock = asyncio.Lock()
        self._closed = False
        self._dirty: set[str] = set()
        self._refreshing = False
        self.listed = asyncio.Event()
        """Clear while a re-listing after a list_changed runs (a turn waits for it)."""
        self.listed.set()
        self._features = ClientFeatures(spec, self._hooks)

    # -- state --------------------------------------------------------------------------

    def status(self) -> McpStatus:
        tools = len(self.tool_defs) if self.state == "ready" else 0
        return McpStatus(self.spec.name, self.state, self.reason, tools)

    @property
    def offers_tools(self) -> bool:
        """Its tools belong in the model's list (its prompts in the session's commands): it
        is ready, or crashed and restartable."""
        return self.state == "ready" or (self.restartable and not self._closed)

    @property
    def closed(self) -> bool:
        """`stop()` was called: the session's servers are shutting down."""
        return self._closed

    @property
    def restartable(self) -> bool:
        return self._crashed_at is not None and not self.gave_up

    @property
    def settled(self) -> asyncio.Event:
        """Set once the current attempt is ready or has failed."""
        return self._attempt.settled

    def _set_state(self, state: McpState, reason: str | None = None) -> None:
        self.state = state
        self.reason = reason
        self._report(self.status())

    def fail(self, reason: str) -> None:
        attempt = self._attempt
        if self.state == "failed" or (attempt.stopping and self.state == "ready"):
            return  # already reported, or a deliberate shutdown
        self._set_state("failed", reason)

    # -- starting and stopping -------------------------------------------------------------

    def start(self) -> None:
        if self.spec.unavailable is not None:
            self.fail(self.spec.unavailable)
            self._attempt.settled.set()
            return
        attempt = self._attempt
        attempt.task = asyncio.create_task(self._run(attempt), name=f"mcp:{self.spec.name}")

    def fail_to_load(self, reason: str) -> None:
        """The SDK could not be imported: this server cannot start."""
        self.fail(reason)
        self._attempt.settled.set()

    async def wait_started(self) -> None:
        """Wait for the current attempt to be ready or failed; at `startup_timeout_s`, fail
        it and cancel the start."""
        attempt = self._attempt
        timeout = self.spec.startup_timeout_s
        try:
            await asyncio.wait_for(attempt.settled.wait(), timeout)
        except TimeoutError:
            tail = attempt.stdio.tail.suffix() if attempt.stdio is not None else ""
            self.fail(
                f"timed out after {timeout:g} s without finishing the MCP handshake and "
                f"listing its tools; if it is only slow to start, raise startup_timeout_s in "
                f"{self.spec.config_key}{tail}"
            )
            self._stop_attempt(attempt, fast=True)

    def stop(self, *, fast: bool = False) -> None:
        """Ask the current attempt to end: leave the client (graceful exit) or, `fast`,
        cancel it. No restart follows."""
        self._closed = True
        self._stop_attempt(self._attempt, fast=fast)

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._attempt.task

    def _stop_attempt(self, attempt: _Attempt, *, fast: bool = False) -> None:
        attempt.stopping = True
        attempt.wake.set()
        if fast or self.state == "starting" or (self.state == "failed" and attempt.client is None):
            if attempt.stdio is not None:
                attempt.stdio.grace_s = 0.2
            if attempt.scope is not None:
                attempt.scope.cancel()

    async def _run(self, attempt: _Attempt) -> None:
        import anyio

        from .transport import describe_failure

        try:
            with anyio.CancelScope() as scope:
                attempt.scope = scope
                if attempt.stopping:
                    scope.cancel()
                async with self._open_client(attempt) as client:
                    await self._list(client)
                    attempt.client = client
                    self._ready(attempt)
                    await self._after_ready(client)
                    await attempt.wake.wait()
            if not attempt.stopping:  # the stdio server closed its stdout: it died
                self._died(attempt, describe_failure(EOFError(), self.spec, stdio=attempt.stdio))
        except Exception as exc:
            reason = describe_failure(exc, self.spec, stdio=attempt.stdio, http=attempt.http)
            if attempt.was_ready and not attempt.stopping:
                self._died(attempt, reason)
            else:
                self.fail(reason)
        finally:
            attempt.client = None
            attempt.settled.set()

    def _ready(self, attempt: _Attempt) -> None:
        attempt.was_ready = True
        if self.state == "starting":
            self._set_state("ready")
            self._changed()
        attempt.settled.set()

    def _died(self, attempt: _Attempt, why: str) -> None:
        """A server that was ready stopped working: restartable, or given up."""
        if attempt is not self._attempt or self._closed or self.state == "failed":
            return
        stdio = not isinstance(self.spec.transport, McpHttp)
        if stdio and self.restarts < MAX_RESTARTS:
            self._crashed_at = time.monotonic()
            left = MAX_RESTARTS - self.restarts
            self._set_state(
                "failed",
                f"{why}; it is restarted at its next use ({left} restart{'s' * (left != 1)} left)",
            )
            return
        self.gave_up = True
        self._crashed_at = None
        if stdio:
            why += (
                f"; it stopped {MAX_RESTARTS + 1} times, so it is not restarted again and its "
                "tools are no longer offered"
            )
        self._set_state("failed", why)
        self._changed()

    async def _restart(self) -> None:
        """Start a new attempt after a crash (see the module docstring); returns when it is
        ready or has failed."""
        async with self._restart_lock:
            if not self.restartable or self._closed:
                return
            crashed_at = self._crashed_at or time.monotonic()
            backoff = RESTART_BACKOFF_S[min(self.restarts, len(RESTART_BACKOFF_S) - 1)]
            delay = crashed_at + backoff - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
                if self.closed:  # the session closed meanwhile
                    return
            self.restarts += 1
            self._crashed_at = None
            self._attempt = _Attempt()
            self._set_state(
                "starting",
                f"restarting after it stopped (restart {self.restarts} of {MAX_RESTARTS})",
            )
            self.start()
            await self.wait_started()
            if self.state != "ready":
                self.gave_up = True
                self._changed()

    @asynccontextmanager
    async def _open_client(self, attempt: _Attempt) -> AsyncIterator[Client]:
        from .transport import HttpEndpoint, StdioProcess, make_client

        if isinstance(self.spec.transport, McpHttp):
            attempt.http = HttpEndpoint(self.spec.transport)
            streams = attempt.http.open()
        else:
            attempt.stdio = StdioProcess(self.spec.transport, on_closed=attempt.wake.set)
            streams = attempt.stdio.open()
        features = self._features
        client = make_client(
            streams,
            list_roots=features.list_roots,
            elicit=features.elicit,
            log=features.log,
            on_message=self._on_message,
        )
        async with client:
            yield client

    async def _list(self, client: Client) -> None:
        capabilities = client.server_capabilities
        self.has_resources = capabilities.resources is not None
        self.has_prompts = capabilities.prompts is not None
        if capabilities.tools is not None:
            self.tool_defs = await all_tools(client)
        if self.has_prompts:
            self.prompt_defs = await all_prompts(client)

    async def _after_ready(self, client: Client) -> None:
        """Tell the server the client's log level (a server without logging is left alone)."""
        if client.server_capabilities.logging is not None:
            await set_log_level(client, self._features.log_level(), self.spec.name)

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self)

    # -- what the server sends us -------------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            await self._refresh("tools")
        elif isinstance(message, mcp_types.PromptListChangedNotification):
            await self._refresh("prompts")
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport problem: %s", self.spec.name, message)

    async def _refresh(self, kind: str) -> None:
        """Re-list after a list_changed (coalesced; see the module docstring)."""
        self._dirty.add(kind)
        if self._refreshing:
            return
        client = self._attempt.client
        if client is None:  # still starting: its listing comes after this notification
            self._dirty.clear()
            return
        self._refreshing = True
        self.listed.clear()
        try:
            while self._dirty:
                kinds = set(self._dirty)
                self._dirty.clear()
                if "tools" in kinds and client.server_capabilities.tools is not None:
                    self.tool_defs = await all_tools(client)
                if "prompts" in kinds and self.has_prompts:
                    self.prompt_defs = await all_prompts(client)
                log.info("MCP server %s changed its %s", self.spec.name, " and ".join(kinds))
                if self.state == "ready":
                    self._report(self.status())
                self._changed()
        except Exception as exc:
            log.warning("MCP server %s: re-listing failed: %s", self.spec.name, exc)
        finally:
            self._refreshing = False
            self.listed.set()

    def roots_changed(self, roots: tuple[str, ...]) -> None:
        """The session's roots are now `roots`: a server that was told others is sent
        `roots/list_changed` (it asks `roots/list` again; one that never asked is left
        alone)."""
        client = self._attempt.client
        if client is None or not self._features.roots_differ(roots):
            return
        import mcp_types

        notification = mcp_types.RootsListChangedNotification()
        task = asyncio.ensure_future(client.session.send_notification(notification))
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    # -- requests -------------------------------------------------------------------------

    async def _client(self) -> Client:
        """The running server's client, restarting a crashed one first; raises ToolError."""
        if self.restartable and not self._closed:
            await self._restart()
        client = self._attempt.client
        if client is None or self.state != "ready":
            why = self.reason or "it is not running"
            raise ToolError(f"MCP server {self.spec.name!r} is not available: {why}")
        return client

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        call_id: str | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> CallToolResult:
        client = await self._client()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(Progress(progress, total, message))

        call = asyncio.ensure_future(client.call_tool(tool, arguments, progress_callback=progress))
        what = f"the call to {tool}"
        self._features.calls.append(call_id)
        try:
            return await within_deadline(call, self.spec, self._features, what)
        except ToolError:
            raise
        except Exception as exc:
            raise request_error(self.spec, self.reason, exc, what) from None
        finally:
            self._features.calls.remove(call_id)

    async def read_resource(self, uri: str) -> ReadResourceResult:
        client = await self._client()
        self._require_resources()
        try:
            return await client.read_resource(uri)
        except Exception as exc:
            raise request_error(self.spec, self.reason, exc, f"reading {uri}") from None

    async def list_resources(self, cursor: str | None) -> ListResourcesResult:
        client = await self._client()
        self._require_resources()
        try:
            return await client.list_resources(cursor=cursor, cache_mode="refresh")
        except Exception as exc:
            raise request_error(self.spec, self.reason, exc, "listing its resources") from None

    async def list_resource_templates(self, cursor: str | None) -> ListResourceTemplatesResult:
        client = await self._client()
        self._require_resources()
        try:
            return await client.list_resource_templates(cursor=cursor, cache_mode="refresh")
        except Exception as exc:
            raise request_error(
                self.spec, self.reason, exc, "listing its resource templates"
            ) from None

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> GetPromptResult:
        client = await self._client()
        try:
            return await asyncio.wait_for(
                client.get_prompt(name, arguments), self.spec.tool_timeout_s
            )
        except TimeoutError:
            raise timeout_error(self.spec, f"the prompt {name}") from None
        except Exception as exc:
            raise request_error(self.spec, self.reason, exc, f"the prompt {name}") from None

    def _require_resources(self) -> None:
        if not self.has_resources:
            raise ToolError(f"MCP server {self.spec.name!r} does not offer resources")
