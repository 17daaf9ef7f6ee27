"""`cody-daemon --listen [PATH]`: the warm daemon, serving any number of clients on a unix
socket (docs/architecture.md, "The warm daemon").

Each connection is served exactly like the stdio daemon's one client (rpc/server.py: its own
framing, detected per connection, its own `initialize`, envelope checks, stall watchdog and
pygls protocol); the sessions and the engine are shared (rpc/sharing.py says who sees what).

Invariants:
- The socket is mode 0600 and the default directory (endpoint.socket_dir) is 0700 and ours;
  a connection from another uid (SO_PEERCRED) is closed before a byte is read.
- One daemon per socket: a live daemon on the path makes a second one refuse to start; a
  stale socket file (nobody listening) is replaced; anything else at the path is left alone.
- A client's `shutdown` and `exit` end that client's connection, never the daemon.
- At most `connection_limit()` connections are served at once (a quarter of the fd limit,
  at most MAX_CONNECTIONS); more are closed unanswered, so a flood of connections cannot
  take the files, pipes and sockets the served clients' turns need.
  SIGTERM/SIGINT/SIGHUP end the daemon: every connection is closed, every session saved and
  closed (running turns cancelled), and the socket file removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import socket
import stat
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cody_protocol.endpoint import (
    RUNTIME_DIR_HINT,
    SOCKET_ENV,
    default_socket_path,
    exec_socket_path,
)
from cody_protocol.session import SessionStateResult

from ..app import DaemonApp
from ..engine.slash import commands_event
from .framing import FramingMode
from .handlers import _after_response, _session_state, register_handlers
from .server import serve_frames
from .sharing import Attachments, BroadcastLink, SharingServer
from .transport import HIGH_WATER, READ_LIMIT, ByteSink, InputReader, WriteFlow
from .warm_up import WarmUp

__all__ = [
    "MAX_CONNECTIONS",
    "ListenError",
    "ListenTarget",
    "bind_socket",
    "connection_limit",
    "main_listen",
    "peer_allowed",
]

logger = logging.getLogger(__name__)

MAX_SOCKET_PATH = 107
"""sun_path holds 108 bytes on Linux, one of them the terminating NUL."""

MAX_CONNECTIONS = 256
"""Connections served at once, whatever the fd limit (a user has a few editors and terminals)."""


def connection_limit() -> int:
    """How many connections may be served now: a quarter of the current soft fd limit (read
    each time: it may be changed from outside with prlimit), at most MAX_CONNECTIONS. The
    other three quarters stay for the turns (session files, tool processes, model sockets)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, soft // 4))


class ListenError(Exception):
    """The daemon cannot listen where asked; the message says why and what to do."""


class ListenTarget:
    """Where to listen, and whether the directory is Cody's own per-user one (then it must
    be ours and is kept 0700) or one the user named (then only the socket's mode is ours)."""

    def __init__(self, path: Path, *, private_dir: bool) -> None:
        self.path = path
        self.private_dir = private_dir

    @classmethod
    def resolve(
        cls, requested: str, env: dict[str, str], *, exec_socket: bool = False
    ) -> ListenTarget:
        if exec_socket:
            path = exec_socket_path(env)
            if path is None or requested:
                raise ListenError(
                    "--exec-socket takes no PATH and needs CODY_DAEMON_SOCKET unset and "
                    "CODY_EXEC_DAEMON_IDLE not 0"
                )
            return cls(path, private_dir=True)
        if requested:
            return cls(Path(requested).expanduser().absolute(), private_dir=False)
        explicit = bool(env.get(SOCKET_ENV))
        return cls(default_socket_path(env), private_dir=not explicit)


# -- peers ----------------------------------------------------------------------------------


def peer_allowed(peer_uid: int, own_uid: int) -> bool:
    """Only the daemon's own user may talk to it (root included: no exception for root)."""
    return peer_uid == own_uid


def peer_credentials(sock: Any) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a unix socket; None if unknown."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid, uid


# -- the socket file ------------------------------------------------------------------------


def _own_directory(directory: Path, *, private: bool) -> None:
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass  # checked below, without following a symlink (a dangling one included)
    except OSError as exc:
        raise ListenError(f"cannot create {directory}: {exc.strerror or exc}") from None
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise ListenError(
            f"{directory} is not a directory (a symlink or a file is in the way); "
            + (RUNTIME_DIR_HINT if private else "pass another path with --listen PATH")
        )
    if not private:
        return
    if info.st_uid != os.getuid():
        raise ListenError(
            f"{directory} belongs to another user (uid {info.st_uid}), who may have made it "
            "to keep this daemon from starting; clients start a daemon of their own meanwhile. "
            f"To listen: {RUNTIME_DIR_HINT}"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        directory.chmod(0o700)  # ours and not a symlink (lstat above): no one else can swap it


def _listening_pid(path: Path) -> int | None | bool:
    """The pid of a daemon answering on `path` (True: alive, pid unknown); False: stale."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError as exc:
        raise ListenError(f"cannot check the socket {path}: {exc.strerror or exc}") from None
    else:
        credentials = peer_credentials(probe)
        return credentials[0] if credentials is not None else True
    finally:
        probe.close()


def bind_socket(target: ListenTarget) -> socket.socket:
    """A listening-ready socket at `target.path`, mode 0600 (see the module invariants)."""
    path = target.path
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ListenError(
            f"the socket path is too long for a unix socket ({len(os.fsencode(path))} bytes, "
            f"at most {MAX_SOCKET_PATH}): {path}; pass a shorter one with --listen PATH"
        )
    _own_directory(path.parent, private=target.private_dir)
    try:
        info = path.lstat()
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(info.st_mode):
            raise ListenError(f"{path} exists and is not a socket; remove it or pick another path")
        alive = _listening_pid(path)
        if alive is not False:
            who = f" (pid {alive})" if alive is not True else ""
            raise ListenError(
                f"another Cody daemon{who} is already listening on {path}; "
                "use it, stop it, or pass another path with --listen PATH"
            )
        try:
            path.unlink()
        except OSError as exc:
            raise ListenError(
                f"cannot replace the stale socket {path}: {exc.strerror or exc} "
                f"(owned by uid {info.st_uid}); remove it or pass another path with --listen PATH"
            ) from None
        logger.warning("replaced a stale socket file at %s (its daemon is gone)", path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)  # the socket is never, even briefly, open to others
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(previous)
    # No chmod by path: it follows a symlink that someone with write access to a directory
    # the user named could swap in after bind. The umask made the socket 0600; check it.
    try:
        created: os.stat_result | None = path.lstat()
    except OSError:
        created = None
    if (
        created is None
        or not stat.S_ISSOCK(created.st_mode)
        or created.st_uid != os.getuid()
        or stat.S_IMODE(created.st_mode) & 0o077
    ):
        sock.close()
        raise ListenError(f"{path} was replaced right after it was created; not listening there")
    sock.setblocking(False)
    return sock


# -- one connection -------------------------------------------------------------------------


class ConnectionApp(DaemonApp):
    """One connection's view of the daemon: the shared configuration, store and sessions,
    with its own pygls server, link and client capabilities. Its `shutdown` (the client's
    `shutdown` request) ends this connection's part only (rpc/sharing.py, `disconnect`).

    The shared app's state is taken over attribute by attribute (DaemonApp.__init__ is not
    run: it would build a second store and session manager)."""

    def __init__(self, shared: DaemonApp, attachments: Attachments) -> None:
        self.env = shared.env
        self.paths = shared.paths
        self.deps = shared.deps
        self.manager = shared.manager
        server = SharingServer(attachments, shared.manager)
        server.resume_live = self._resume_running
        self.sharing = server
        self.server = server
        self.link = server.link
        self._client_capabilities = {}  # the link starts with the defaults
        self._shutdown_started = False
        register_handlers(server, self)

    async def _resume_running(self, session_id: str) -> Any:
        """`session/resume` of a session whose turn is running: attach and watch it."""
        session = self.manager.get(session_id)
        link = self.link
        _after_response(lambda: link.emit(session_id, commands_event()))
        return SessionStateResult.model_validate(_session_state(self, session)).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )

    async def shutdown(self) -> None:
        if self._shutdown_started:
            return
        self._shutdown_started = True
        await self.sharing.disconnect()


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
    sock: socket.socket,
    framing: FramingMode,
    *,
    stall_timeout_s: float,
    ready: Callable[[], None] | None = None,
    own_uid: int | None = None,
    stop: asyncio.Event | None = None,
    warm_up: bool = True,
    idle_exit_s: float | None = None,
) -> int:
    """Serve every connection on `sock` until SIGTERM/SIGINT/SIGHUP; returns 0.

    `warm_up`: load what sessions need while no connection is talking (rpc/warm_up.py).
    `idle_exit_s`: also stop once no connection has been open for that long (the daemon
    `cody-client exec` starts); a connection arriving meanwhile starts the wait again.

    `own_uid` (default: this process' uid) is the only uid whose connections are served;
    `stop` (default: one set by those signals) ends serving."""
    serve_uid = os.getuid() if own_uid is None else own_uid
    loop = asyncio.get_running_loop()
    attachments = Attachments()
    app.manager.link = BroadcastLink(attachments)
    if stop is None:
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, stop.set)
    clients: dict[asyncio.Task[None], asyncio.Event] = {}
    refused = 0
    """Connections refused since the limit was last reached (logged once per episode)."""

    def admit() -> bool:
        nonlocal refused
        limit = connection_limit()
        if len(clients) < limit:
            if refused:
                logger.warning("serving new connections again (%d were refused)", refused)
                refused = 0
            return True
        if not refused:
            logger.warning(
                "%d connections open, the most this daemon serves at once (a quarter of its "
                "file descriptor limit, at most %d): refusing new ones until one closes",
                len(clients),
                MAX_CONNECTIONS,
            )
        refused += 1
        return False

    warming = WarmUp(loop) if warm_up else None

    async def serve_client(
        reader: asyncio.StreamReader, sink: ByteSink, ends: asyncio.Event
    ) -> None:
        view = ConnectionApp(app, attachments)
        view.server.protocol.attach(sink)
        try:
            await serve_frames(
                view.server, reader, sink, framing, stop=ends, stall_timeout_s=stall_timeout_s
            )
        finally:
            await view.shutdown()
            await sink.close()

    idle_timer: asyncio.TimerHandle | None = None

    def idle_check() -> None:
        """(Re)start the idle wait when no connection is open; cancel it when one is."""
        nonlocal idle_timer
        if idle_timer is not None:
            idle_timer.cancel()
            idle_timer = None
        if idle_exit_s is not None and not clients and not stop.is_set():
            idle_timer = loop.call_later(idle_exit_s, _idle_stop)

    def _idle_stop() -> None:
        logger.info("no client for %g s: exiting", idle_exit_s)
        stop.set()

    def client_done(done: asyncio.Task[None]) -> None:
        clients.pop(done, None)
        idle_check()

    def on_client(reader: InputReader, sink: ByteSink) -> None:
        if warming is not None:
            reader.on_input = warming.heard
        ends = asyncio.Event()
        task = loop.create_task(serve_client(reader, sink, ends))
        clients[task] = ends
        idle_check()
        task.add_done_callback(client_done)

    server = await loop.create_unix_server(
        lambda: _ClientProtocol(loop, on_client, serve_uid, admit), sock=sock
    )
    if ready is not None:
        ready()
    if warming is not None:
        warming.start()
    idle_check()
    try:
        await stop.wait()
    finally:
        if idle_timer is not None:
            idle_timer.cancel()
        if warming is not None:
            warming.stop()
        server.close()
        for ends in list(clients.values()):
            ends.set()
        if clients:
            await asyncio.wait(list(clients))
        await app.shutdown()
    return 0


def main_listen(
    requested: str,
    framing: FramingMode,
    stall_timeout_s: float,
    *,
    warm_up: bool = True,
    exec_socket: bool = False,
    idle_exit_s: float | None = None,
) -> int:
    """`cody-daemon --listen [PATH]`: bind, serve, remove the socket; returns the exit code.
    `exec_socket`: the socket `cody-client exec` looks for (`--exec-socket`)."""
    from ..config.paths import resolve_paths

    env = dict(os.environ)
    try:
        target = ListenTarget.resolve(requested, env, exec_socket=exec_socket)
    except ListenError as exc:
        sys.stderr.write(f"cody-daemon: {exc}\n")
        return 2
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if target.private_dir and runtime and not target.path.is_relative_to(runtime):
        sys.stderr.write(
            f"cody-daemon: XDG_RUNTIME_DIR={runtime} is not a private directory of yours "
            f"(missing, a symlink, another user's or writable by others); using {target.path.parent}\n"
        )
    try:
        sock = bind_socket(target)
    except ListenError as exc:
        sys.stderr.write(f"cody-daemon: {exc}\n")
        return 1
    identity = os.stat(target.path)

    def ready() -> None:
        sys.stderr.write(f"cody-daemon: listening on {target.path} (pid {os.getpid()})\n")
        sys.stderr.flush()

    async def run() -> int:
        app = DaemonApp(env=env, paths=resolve_paths(env))
        return await serve_listen(
            app,
            sock,
            framing,
            stall_timeout_s=stall_timeout_s,
            ready=ready,
            warm_up=warm_up,
            idle_exit_s=idle_exit_s,
        )

    try:
        code = asyncio.run(run())
    except KeyboardInterrupt:
        code = 130
    finally:
        with contextlib.suppress(OSError):
            now = os.lstat(target.path)
            if (now.st_dev, now.st_ino) == (identity.st_dev, identity.st_ino):
                target.path.unlink()
    return code
