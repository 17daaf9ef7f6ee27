"""Transports for MCP client sessions, and the reasons a server failed, in words a user can act on.

`StdioProcess` runs a stdio server; `HttpEndpoint` connects to a streamable-HTTP one. Both
expose `open()`, an async context manager yielding the SDK's transport streams, to hand to
`mcp.Client`. Invariants:

- The stdio child gets three pipes (never the daemon's own stdin/stdout/stderr, which carry the
  protocol) and runs in its own process group, so its whole tree can be signalled.
- Its stderr is read continuously into a bounded `OutputTail` (kept for failure reasons), so the
  child never blocks on a full pipe. stdout lines that are not JSON-RPC go to the tail as well.
- Leaving `StdioProcess.open()` always ends the child: close its stdin, wait `grace_s`, SIGTERM
  the group, SIGKILL after `KILL_AFTER_S`, and reap it (no zombie). Shielded from cancellation,
  every wait bounded.
- `HttpEndpoint` remembers the last HTTP error status, so a failure can say "HTTP 401".

This module imports the `mcp` SDK (slow to import); manager.py imports it on first use.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress

import anyio
import httpx2
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.client.client import Client
from mcp.client.session import ElicitationFnT, ListRootsFnT, LoggingFnT, MessageHandlerFnT
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, Implementation, jsonrpc_message_adapter

from ... import __version__
from .specs import McpHttp, McpServerSpec, McpStdio

__all__ = [
    "GRACE_S",
    "HttpEndpoint",
    "KILL_AFTER_S",
    "McpStartError",
    "OutputTail",
    "StdioProcess",
    "describe_failure",
    "exit_text",
    "make_client",
]

GRACE_S = 2.0
"""How long a stdio server may take to exit by itself once its stdin is closed."""
KILL_AFTER_S = 2.0
"""Between SIGTERM and SIGKILL."""
_REAP_S = 2.0
_POLL_S = 0.01
TAIL_BYTES = 8192
TAIL_LINES = 8
_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class McpStartError(Exception):
    """A server could not be started; `reason` is the whole user-facing explanation."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OutputTail:
    """The last `max_bytes` of a stream, for error messages."""

    def __init__(self, max_bytes: int = TAIL_BYTES) -> None:
        self._max = max_bytes
        self._data = bytearray()

    def feed(self, data: bytes) -> None:
        self._data += data
        if len(self._data) > self._max:
            del self._data[: len(self._data) - self._max]

    def lines(self, count: int = TAIL_LINES) -> list[str]:
        text = self._data.decode("utf-8", errors="replace")
        return [line.rstrip() for line in text.splitlines() if line.strip()][-count:]

    def suffix(self) -> str:
        """`"; last stderr lines:" + the lines, indented; "" when the server wrote nothing."""
        lines = self.lines()
        return "; last stderr lines:\n" + "\n".join(f"  {line}" for line in lines) if lines else ""


class StdioProcess:
    """One stdio server process; `open()` may be entered once."""

    def __init__(self, spec: McpStdio, *, on_closed: Callable[[], None] | None = None) -> None:
        self.spec = spec
        self.tail = OutputTail()
        self.pid: int | None = None
        self.returncode: int | None = None
        self.grace_s = GRACE_S
        """Set lower to skip most of the graceful exit (a server that never started)."""
        self._on_closed = on_closed

    @asynccontextmanager
    async def open(self) -> AsyncIterator[TransportStreams]:
        process = await self._spawn()
        self.pid = process.pid
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        stderr_done = anyio.Event()

        async def pump_stdout() -> None:
            assert process.stdout is not None
            buffer = b""
            try:
                async with read_send:
                    async for chunk in process.stdout:
                        *lines, buffer = (buffer + chunk).split(b"\n")
                        for line in lines:
                            message = self._parse(line)
                            if message is not None:
                                await read_send.send(message)
            except _ERRORS:
                pass  # the session went away or we closed the pipe; shutdown follows
            finally:
                if self._on_closed is not None:
                    self._on_closed()

        async def pump_stdin() -> None:
            assert process.stdin is not None
            try:
                async with write_recv:
                    async for message in write_recv:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await process.stdin.send(data.encode() + b"\n")
            except _ERRORS:
                await read_send.aclose()  # the server is gone: end the session, not hang it

        async def pump_stderr() -> None:
            assert process.stderr is not None
            try:
                async for chunk in process.stderr:
                    self.tail.feed(chunk)
            except _ERRORS:
                pass
            finally:
                stderr_done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_stdout)
            tg.start_soon(pump_stdin)
            tg.start_soon(pump_stderr)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    write_send.close()
                    await self._stop(process, stderr_done)
                    await read_recv.aclose()
                tg.cancel_scope.cancel()

    async def _spawn(self) -> Process:
        spec = self.spec
        env = {**get_default_environment(), **spec.env}
        try:
            return await anyio.open_process(
                [spec.command, *spec.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=spec.cwd,
                env=env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            if spec.cwd is not None and exc.filename == spec.cwd:
                raise McpStartError(f"its working directory {spec.cwd} does not exist") from None
            if os.sep in spec.command:
                raise McpStartError(f"command not found: {spec.command} does not exist") from None
            raise McpStartError(
                f"command not found: {spec.command!r} is not on the daemon's PATH; give its "
                "full path in `command`"
            ) from None
        except PermissionError:
            raise McpStartError(
                f"permission denied running {spec.command!r} (is it executable?)"
            ) from None
        except OSError as exc:
            raise McpStartError(f"cannot run {spec.command!r}: {exc.strerror or exc}") from None

    def _parse(self, line: bytes) -> SessionMessage | None:
        line = line.strip()
        if not line:
            return None
        try:
            return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError:
            # Log lines printed to stdout break MCP; keep them for the failure reason.
            self.tail.feed(b"stdout: " + line[:500] + b"\n")
            return None

    async def _stop(self, process: Process, stderr_done: anyio.Event) -> None:
        if process.stdin is not None:
            with suppress(*_ERRORS):
                await process.stdin.aclose()
        if not await _wait_exit(process, self.grace_s):
            await _kill_group(process)
            await _wait_exit(process, _REAP_S)
        with anyio.move_on_after(0.5):
            await stderr_done.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with suppress(*_ERRORS):
                    await stream.aclose()
        with anyio.move_on_after(_REAP_S):
            await process.wait()
        self.returncode = process.returncode


async def _wait_exit(process: Process, within_s: float) -> bool:
    """Whether the process exited (and was reaped) within `within_s`; polls `returncode`.

    Not `process.wait()`: on asyncio it also waits for the pipes to close, which a surviving
    grandchild holding them open would delay forever.
    """
    with anyio.move_on_after(within_s):
        while process.returncode is None:  # noqa: ASYNC110 - nothing to wait on but polling
            await anyio.sleep(_POLL_S)
    return process.returncode is not None


async def _kill_group(process: Process) -> None:
    """SIGTERM the server's process group, SIGKILL it after KILL_AFTER_S."""
    pgid = process.pid  # start_new_session: the server leads its own group
    for sig, wait in ((signal.SIGTERM, KILL_AFTER_S), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        if wait and await _wait_exit(process, wait):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)  # descendants that outlived the leader
            return


class HttpEndpoint:
    """A streamable-HTTP server; `open()` may be entered once."""

    def __init__(self, spec: McpHttp) -> None:
        self.spec = spec
        self.error_status: tuple[int, str] | None = None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[TransportStreams]:
        client = httpx2.AsyncClient(
            headers=dict(self.spec.headers),
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [self._on_response]},
        )
        async with client, streamable_http_client(self.spec.url, http_client=client) as streams:
            yield streams

    async def _on_response(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.error_status = (response.status_code, response.reason_phrase)


_HTTP_HINTS = {
    401: "check the token (bearer_token_env_var or the Authorization header)",
    403: "the credentials were refused; check the token's permissions",
    404: "check the URL (streamable-HTTP endpoints often end in /mcp)",
    405: "the URL does not accept MCP POST requests; is it a streamable-HTTP endpoint?",
}


def exit_text(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


def describe_failure(
    exc: BaseException,
    spec: McpServerSpec,
    *,
    stdio: StdioProcess | None = None,
    http: HttpEndpoint | None = None,
) -> str:
    """Why a server failed to start or stopped working, from its exception and transport."""
    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, McpStartError):
            return leaf.reason
    tail = stdio.tail.suffix() if stdio is not None else ""
    if stdio is not None and stdio.returncode is not None:
        return f"{exit_text(stdio.returncode)}{tail}"
    if http is not None and http.error_status is not None:
        code, phrase = http.error_status
        hint = _HTTP_HINTS.get(code)
        return f"HTTP {code} {phrase} from {http.spec.url}" + (f"; {hint}" if hint else "")
    for leaf in leaves:
        if isinstance(leaf, httpx2.ConnectError):
            return f"cannot connect to {_spec_url(spec)}: {leaf}"
        if isinstance(leaf, httpx2.TimeoutException):
            return f"HTTP request to {_spec_url(spec)} timed out"
        if isinstance(leaf, httpx2.HTTPError):
            return f"HTTP request to {_spec_url(spec)} failed: {leaf}"
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            if leaf.code == CONNECTION_CLOSED:
                return f"closed the connection{tail}"
            return f"answered with an error: {leaf.message} (code {leaf.code}){tail}"
    leaf = leaves[0] if leaves else exc
    return f"{type(leaf).__name__}: {leaf}{tail}"


def _spec_url(spec: McpServerSpec) -> str:
    return spec.transport.url if isinstance(spec.transport, McpHttp) else spec.transport.command


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def make_client(
    transport: AbstractAsyncContextManager[TransportStreams],
    *,
    list_roots: ListRootsFnT | None = None,
    elicit: ElicitationFnT | None = None,
    log: LoggingFnT | None = None,
    on_message: MessageHandlerFnT | None = None,
) -> Client:
    """An SDK client over `transport`: the initialize handshake, no response cache, and the
    client features Cody answers (roots, elicitation; their capabilities are declared
    because the callbacks are given; sampling is not: servers are told it is unsupported).

    `mode="legacy"` (the initialize handshake) rather than the SDK's default `"auto"`, which
    first probes `server/discover` and can wait up to 10 s on a server that ignores it:
    today's servers speak the handshake, and a startup timeout should measure the server.
    """
    return Client(
        transport,
        mode="legacy",
        cache=None,
        client_info=Implementation(name="cody", version=__version__),
        list_roots_callback=list_roots,
        elicitation_callback=elicit,
        logging_callback=log,
        message_handler=on_message,
    )
