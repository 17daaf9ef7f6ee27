"""The daemon `cody-client exec` starts for itself and the commands after it (docs/architecture.md,
"The warm daemon": "`exec`'s own warm daemon").

Without a warm daemon at the default socket, `exec` uses the one listening at
`exec_socket_path(environment)` (cody_protocol.endpoint: the hash of the locations, the whole
environment but for shell and terminal variables, and the installed Cody), starting it when
none listens there: `cody-daemon --listen --exec-socket --idle-exit N`, detached (its own
session, stdin, stdout and stderr on /dev/null, so a pipe `exec` writes to ends with `exec`,
and a terminal's Ctrl-C never reaches it; working directory `/`). It exits after N seconds
(`CODY_EXEC_DAEMON_IDLE`, default 300) without a client. Every rule of the warm daemon holds:
the per-user directory, the socket's owner checked before anything is sent, the locations
the daemon reports compared with this command's.

Standard library only at import: `launch` calls `start_exec_daemon` before asyncio is
imported, so the daemon starts while this process imports its own stack.

Invariants: a daemon is started only where no socket file is (a stale one, whose daemon was
killed, is replaced by the daemon itself); two commands starting one at once leave one (the
second daemon finds the first listening and exits); when no daemon answers within
`START_TIMEOUT_S`, `exec` spawns its own over stdio, as before.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from cody_protocol.endpoint import exec_daemon_idle

__all__ = ["START_TIMEOUT_S", "start_exec_daemon"]

START_TIMEOUT_S = 10.0
"""How long `exec` waits for the daemon it started to listen before it spawns its own."""


def start_exec_daemon(env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes] | None:
    """Start the daemon for this environment's exec socket; None when the daemon program
    cannot be found (the caller checked that no socket file is there, or that nobody
    listens at it: the daemon replaces a stale one and exits if another listens)."""
    from .daemon_command import DaemonNotFound, daemon_command

    environment = dict(os.environ if env is None else env)
    idle = exec_daemon_idle(environment)
    try:
        command = daemon_command()
        return subprocess.Popen(
            [*command, "--listen", "--exec-socket", "--idle-exit", f"{idle:g}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=environment,
            cwd="/",
            start_new_session=True,
        )
    except (DaemonNotFound, OSError):
        return None
