"""`cody-daemon --listen [PATH] [--listen ws://HOST:PORT]`: the warm daemon, serving any
number of clients on a unix socket, a WebSocket listener (with the web page), or both
(docs/architecture.md, "The warm daemon"; docs/web.md).

Each connection is served exactly like the stdio daemon's one client (rpc/connections.py:
its own framing, its own `initialize`, envelope checks, stall watchdog and pygls protocol);
the sessions and the engine are shared (rpc/sharing.py says who sees what).

Invariants:
- The unix socket is mode 0600 and its default directory 0700 and ours; a connection from
  another uid (SO_PEERCRED) is closed before a byte is read (rpc/unix_socket.py).
- The WebSocket listener checks every request before anything else (rpc/web_security.py)
  and is imported only when asked for: the stdio daemon and a unix-only warm daemon never
  load `websockets`.
- One daemon per socket: a live daemon on the path makes a second one refuse to start; a
  stale socket file (nobody listening) is replaced; anything else at the path is left alone.
- A client's `shutdown` and `exit` end that client's connection, never the daemon.
- At most `connection_limit()` connections are served at once, over both listeners; more
  are refused, so a flood of connections cannot take the files, pipes and sockets the
  served clients' turns need.
  SIGTERM/SIGINT/SIGHUP end the daemon: every connection is closed, every session saved and
  closed (running turns cancelled), and the socket file and the web record removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..app import DaemonApp
from .connections import MAX_CONNECTIONS, ConnectionApp, Connections, connection_limit
from .framing import FrameReader, FramingMode
from .listen_targets import plan_listen
from .transport import HIGH_WATER, READ_LIMIT, ByteSink, InputReader, WriteFlow
from .unix_socket import (
    ListenError,
    ListenTarget,
    bind_socket,
    peer_allowed,
    peer_credentials,
)
from .warm_up import WarmUp

if TYPE_CHECKING:
    from .web_listen import WebListener

__all__ = [
    "MAX_CONNECTIONS",
    "ConnectionApp",
    "ListenError",
    "ListenTarget",
    "bind_socket",
    "connection_limit",
    "main_listen",
    "peer_allowed",
    "serve_listen",
]

logger = logging.getLogger(__name__)


class _Closable(Protocol):
    def close(self) -> None: ...


class _ClientProtocol(asyncio.StreamReaderProtocol, WriteFlow):
    """Reads into a StreamReader and tracks write stalls (WriteFlow) for the watchdog; a
    peer of another uid, or one over the connection limit (`admit` says no), is cut off
    before anything is read."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_client: Callable[[InputReader, ByteSink], None],
        own_uid: int,
        admit: Callable[[], bool],
    ) -> None:
        self.incoming = InputReader(limit=READ_LIMIT, loop=loop)
        self._loop_ref = loop
        self._on_client = on_client
        self._own_uid = own_uid
        self._admit = admit
        super().__init__(self.incoming, loop=loop)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.WriteTransport)
        credentials = peer_credentials(transport.get_extra_info("socket"))
        own_uid = self._own_uid
        if credentials is None or not peer_allowed(credentials[1], own_uid):
            logger.warning(
                "refused a connection from %s (this daemon serves uid %d only)",
                f"uid {credentials[1]}" if credentials else "an unknown user",
                own_uid,
            )
            transport.close()
            return
        if not self._admit():
            transport.abort()
            return
        transport.set_write_buffer_limits(high=HIGH_WATER)
        writer = asyncio.StreamWriter(transport, self, self.incoming, self._loop_ref)
        self._on_client(self.incoming, ByteSink(writer, None, self))


async def serve_listen(
    app: DaemonApp,
    sock: socket.socket | None,
    framing: FramingMode,
    *,
    stall_timeout_s: float,
    ready: Callable[[], None] | None = None,
    own_uid: int | None = None,
    stop: asyncio.Event | None = None,
    warm_up: bool = True,
    web: WebListener | None = None,
    idle_exit_s: float | None = None,
) -> int:
    """Serve every connection on the unix socket `sock` and/or the WebSocket listener `web`
    until SIGTERM/SIGINT/SIGHUP; returns 0.

    `warm_up`: load what sessions need while no connection is talking (rpc/warm_up.py).
    `idle_exit_s`: also stop once no connection has been open for that long (the daemon
    `cody-client exec` starts for itself); a connection meanwhile starts the wait again.

    `own_uid` (default: this process' uid) is the only uid whose unix connections are
    served; `stop` (default: one set by those signals) ends serving."""
    serve_uid = os.getuid() if own_uid is None else own_uid
    loop = asyncio.get_running_loop()
    connections = Connections(app, stall_timeout_s=stall_timeout_s)
    if stop is None:
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, stop.set)
    warming = WarmUp(loop) if warm_up else None
    heard = warming.heard if warming is not None else None

    def on_client(reader: InputReader, sink: ByteSink) -> None:
        reader.on_input = heard
        connections.start(FrameReader(reader, framing), sink)

    servers: list[_Closable] = []
    if sock is not None:
        servers.append(
            await loop.create_unix_server(
                lambda: _ClientProtocol(loop, on_client, serve_uid, connections.admit), sock=sock
            )
        )
    if web is not None:
        from .web_listen import start_web

        servers.append(await start_web(web, connections, on_input=heard))
    if ready is not None:
        ready()
    if warming is not None:
        warming.start()
    idle = (
        asyncio.ensure_future(_stop_when_idle(connections, idle_exit_s, stop))
        if idle_exit_s is not None
        else None
    )
    try:
        await stop.wait()
    finally:
        if idle is not None:
            idle.cancel()
        if warming is not None:
            warming.stop()
        for server in servers:
            server.close()
        await connections.close()
        await app.shutdown()
    return 0


async def _stop_when_idle(connections: Connections, idle_s: float, stop: asyncio.Event) -> None:
    """Set `stop` once no connection has been open for `idle_s` (checked a few times a
    second at most, once a second at least)."""
    loop = asyncio.get_running_loop()
    last_busy = loop.time()
    step = min(1.0, max(idle_s / 4, 0.05))
    while True:
        await asyncio.sleep(step)
        now = loop.time()
        if len(connections):
            last_busy = now
        elif now - last_busy >= idle_s:
            logger.info("no client for %g s: exiting", idle_s)
            stop.set()
            return


def main_listen(
    requested: list[str],
    framing: FramingMode,
    stall_timeout_s: float,
    *,
    warm_up: bool = True,
    allow_remote: bool = False,
    exec_socket: bool = False,
    idle_exit_s: float | None = None,
) -> int:
    """`cody-daemon --listen [PATH] [--listen ws://HOST:PORT]`: bind, serve, clean up;
    returns the exit code. `exec_socket`: listen where `cody-client exec` looks for its own
    daemon (`--exec-socket`); `idle_exit_s`: `--idle-exit`."""
    from ..config.paths import resolve_paths

    env = dict(os.environ)
    paths = resolve_paths(env)
    try:
        plan = plan_listen(requested, allow_remote=allow_remote)
    except ListenError as exc:
        sys.stderr.write(f"cody-daemon: {exc}\n")
        return 2
    try:
        target = (
            ListenTarget.resolve(plan.unix, env, exec_socket=exec_socket)
            if plan.unix is not None
            else None
        )
    except ListenError as exc:
        sys.stderr.write(f"cody-daemon: {exc}\n")
        return 2
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if (
        target is not None
        and target.private_dir
        and runtime
        and not target.path.is_relative_to(runtime)
    ):
        sys.stderr.write(
            f"cody-daemon: XDG_RUNTIME_DIR={runtime} is not a private directory of yours "
            f"(missing, a symlink, another user's or writable by others); using {target.path.parent}\n"
        )
    web: WebListener | None = None
    sock: socket.socket | None = None
    try:
        if plan.web is not None:
            from .web_listen import WebListener

            web = WebListener.bind(plan.web, paths.data_dir)
        if target is not None:
            sock = bind_socket(target)
    except ListenError as exc:
        if web is not None:
            web.sock.close()
        sys.stderr.write(f"cody-daemon: {exc}\n")
        return 1
    identity = os.stat(target.path) if target is not None else None

    def ready() -> None:
        if target is not None:
            sys.stderr.write(f"cody-daemon: listening on {target.path} (pid {os.getpid()})\n")
        if web is not None:
            for line in web.announce(os.getpid()):
                sys.stderr.write(f"cody-daemon: {line}\n")
        sys.stderr.flush()

    async def run() -> int:
        app = DaemonApp(env=env, paths=paths)
        return await serve_listen(
            app,
            sock,
            framing,
            stall_timeout_s=stall_timeout_s,
            ready=ready,
            warm_up=warm_up,
            web=web,
            idle_exit_s=idle_exit_s,
        )

    try:
        code = asyncio.run(run())
    except KeyboardInterrupt:
        code = 130
    finally:
        if web is not None:
            web.forget(os.getpid())
        if target is not None and identity is not None:
            _remove_socket(target.path, identity)
    return code


def _remove_socket(path: Path, identity: os.stat_result) -> None:
    """Remove the socket file if it is still the one this daemon made."""
    with contextlib.suppress(OSError):
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) == (identity.st_dev, identity.st_ino):
            path.unlink()
