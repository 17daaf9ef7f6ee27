"""`cody-client`'s entry point: for `exec`, the daemon starts before anything else is imported.

asyncio, argparse and the client's own stack take ~60 ms to import; a daemon started first
spends them importing its own stack on the other core (bench/README.md, "Startup").
Everything else is `cli.main`.

Invariants: the early daemon is started exactly as `DaemonProcess.spawn` would start it (the
same command, environment, working directory, pipes and session); it is started only when
`exec` would spawn one (no warm daemon's socket, no `--help`), and a daemon `exec` does not
take over (bad arguments, a socket that appeared meanwhile) is killed before this process ends.
`exec`'s own warm daemon (cody_client.exec_daemon) is started here too when its socket is not
there yet; it is detached and exits on its own when idle.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["main", "start_early_daemon"]


def start_early_daemon(
    argv: Sequence[str],
) -> tuple[subprocess.Popen[bytes] | None, subprocess.Popen[bytes] | None]:
    """Start the daemon `exec` is about to need: (a daemon on pipes, exec's own warm daemon
    just started); (None, None) when it needs none now (not `exec`, help, a warm daemon's
    socket there, or no daemon to start: `exec` then reports it as usual)."""
    if not argv or argv[0] != "exec" or "-h" in argv or "--help" in argv:
        return None, None
    if "--no-daemon-socket" not in argv:
        from cody_protocol.endpoint import client_socket_path, exec_socket_path

        path = client_socket_path(os.environ)
        if path is not None and path.is_socket():
            return None, None
        own = exec_socket_path(os.environ)
        if own is not None:  # exec's own warm daemon (cody_client.exec_daemon)
            if own.is_socket():
                return None, None
            from .exec_daemon import start_exec_daemon

            return None, start_exec_daemon()
    from .daemon_command import DaemonNotFound, daemon_command
    from .process_start import start_daemon_process

    try:
        return start_daemon_process(daemon_command()), None
    except (DaemonNotFound, OSError):
        return None, None


def main() -> None:
    argv = sys.argv[1:]
    early, exec_daemon = start_early_daemon(argv)
    from .cli import main as cli_main

    cli_main(argv, early_daemon=early, exec_daemon=exec_daemon)
