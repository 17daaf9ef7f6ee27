"""Use a warm daemon when one is running, else spawn one (docs/architecture.md, "The warm
daemon").

`open_daemon()` connects to the socket of `cody-daemon --listen` (cody_protocol.endpoint says
where it is) when it is there, answers, and belongs to this user; otherwise it spawns a
daemon for this command, as before. A warm daemon that closes the connection before it
answers `initialize` (it serves as many connections as it can, or it is stopping), or does
not answer it within WARM_ANSWER_TIMEOUT_S (stopped with Ctrl-Z, wedged), is treated as
absent: the command spawns its own. `CODY_DAEMON_SOCKET=` (set, empty) or
`--no-daemon-socket` always spawns.

A warm daemon is used only when it reads the same locations this command's own daemon would
(cody_protocol.locations: `HOME`, config and data dirs, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`):
the socket name derives from them, and the locations the daemon reports in `initialize` are
compared before anything else is sent. A daemon that reads others (or does not say) is left
alone, with a note on stderr, and the command spawns its own, as it does (with a note) when
another user owns the socket directory (`/tmp/cody-<uid>` made first by someone else).

A warm daemon runs with its own environment (provider keys, PATH) from when it was started: a
key set for one command only reaches a spawned daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cody_protocol.endpoint import (
    RUNTIME_DIR_HINT,
    SOCKET_ENV,
    client_socket_path,
    socket_dir_problem,
)
from cody_protocol.locations import daemon_locations, differences

from .exec_daemon import START_TIMEOUT_S

if TYPE_CHECKING:
    from .client import CodyClient
    from .process import DaemonProcess

__all__ = ["WarmDaemon", "connect_warm", "find_warm_daemon", "open_daemon"]

STREAM_LIMIT = 256 * 1024 * 1024
WARM_ANSWER_TIMEOUT_S = 10.0
"""How long a warm daemon may take to answer `initialize` (it answers at once when well)."""


@dataclass(frozen=True, slots=True)
class WarmDaemon:
    path: Path
    pid: int | None


async def connect_warm(
    path: Path,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, WarmDaemon] | None:
    """Streams to the daemon listening on `path`; None when nobody listens there, or when
    the listener is not this user's (its prompts and files are never sent to another)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(info.st_mode):
        return None
    try:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=STREAM_LIMIT)
    except OSError:
        return None  # a stale socket file: its daemon is gone
    pid = None
    sock = writer.get_extra_info("socket")
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", raw)
    except (OSError, AttributeError):
        uid = info.st_uid
    if uid != os.getuid():
        writer.close()
        return None
    return reader, writer, WarmDaemon(path, pid)


async def connect_warm_waiting(
    path: Path, starting: subprocess.Popen[bytes] | None, timeout_s: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, WarmDaemon] | None:
    """`connect_warm`, retried while the daemon `starting` (just started for `path`) may
    still come up: until it listens, exits without a socket there, or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = await connect_warm(path)
        if found is not None or starting is None or time.monotonic() >= deadline:
            return found
        if starting.poll() is not None and not _socket_file(path):
            return None  # it exited (another daemon there may have gone too)
        await asyncio.sleep(0.005)


def _socket_file(path: Path) -> bool:
    return path.is_socket()  # one lstat: nothing to wait for


async def find_warm_daemon(env: Mapping[str, str] | None = None) -> WarmDaemon | None:
    """The warm daemon a command would use now, if any (closes the probe connection)."""
    path = client_socket_path(os.environ if env is None else env)
    found = await connect_warm(path) if path is not None else None
    if found is None:
        return None
    found[1].close()
    return found[2]


@contextlib.asynccontextmanager
async def open_daemon(
    *,
    use_socket: bool = True,
    on_stderr: Callable[[str], None] | None = None,
    process: DaemonProcess | None = None,
    socket_path: Path | None = None,
    starting: subprocess.Popen[bytes] | None = None,
    start: Callable[[], subprocess.Popen[bytes] | None] | None = None,
) -> AsyncIterator[CodyClient]:
    """An initialized client on the warm daemon if there is one, else on a spawned daemon.

    `client.process` is None on a warm daemon (closing only disconnects: the daemon and
    any session another client has open stay); `client.warm` says which daemon it is.
    `process`: a daemon this command already spawned (`cody-client exec` starts one first
    when no warm daemon's socket exists); it is used, and closed, instead.
    `socket_path`: look there instead of the default socket (`exec`'s own warm daemon,
    cody_client.exec_daemon), waiting for `starting`, the daemon just started for it, or
    calling `start` to start one when nobody listens there (a socket file left by a killed
    daemon)."""
    from .client import CodyClient
    from .connection import ConnectionClosed

    skipped: str | None = None
    if process is not None:
        skipped = _unusable_socket_dir() if use_socket else None
        _say_skipped(skipped)
        async with CodyClient.spawn(process=process) as client:
            client.warm_skipped = skipped
            yield client
        return
    path = socket_path or (client_socket_path(os.environ) if use_socket else None)
    found = None
    if path is not None:
        found = await connect_warm_waiting(path, starting, START_TIMEOUT_S)
        if found is None and starting is None and start is not None:
            found = await connect_warm_waiting(path, start(), START_TIMEOUT_S)
    if found is not None:
        reader, writer, warm = found
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(WARM_ANSWER_TIMEOUT_S):
                    client = await stack.enter_async_context(CodyClient.connect(reader, writer))
            except (ConnectionClosed, ConnectionError):
                pass  # closed unanswered (reset or EOF): spawn instead (below)
            except TimeoutError:
                skipped = f"the warm daemon on {warm.path} did not answer in " + (
                    f"{WARM_ANSWER_TIMEOUT_S:g} s"
                )
            else:
                other = other_locations(client)
                if not other:
                    client.warm = warm
                    yield client
                    return
                pid = f" (pid {warm.pid})" if warm.pid is not None else ""
                skipped = (
                    f"the warm daemon on {warm.path}{pid} reads other locations than this "
                    f"command would: {'; '.join(other)}"
                )
    elif path is not None:
        skipped = _unusable_socket_dir()
    _say_skipped(skipped)
    async with CodyClient.spawn(on_stderr=on_stderr) as client:
        client.warm_skipped = skipped
        yield client


def _unusable_socket_dir() -> str | None:
    """Why no warm daemon can listen at the default place (another user's directory...);
    None when it can, or when the user named the socket (CODY_DAEMON_SOCKET)."""
    if SOCKET_ENV in os.environ:
        return None
    problem = socket_dir_problem(os.environ)
    return (
        None if problem is None else f"no warm daemon can run here: {problem} ({RUNTIME_DIR_HINT})"
    )


def _say_skipped(skipped: str | None) -> None:
    if skipped is not None:
        sys.stderr.write(f"cody-client: {skipped}; starting a daemon for this command\n")


def other_locations(client: CodyClient) -> list[str]:
    """How the locations the connected daemon reports differ from this environment's (every
    one when it reports none); [] when they are the same."""
    result = client.initialize_result
    reported = result.meta.cody.locations if result is not None else None
    theirs = reported.wire() if reported is not None else None
    return differences(daemon_locations(os.environ), theirs)
