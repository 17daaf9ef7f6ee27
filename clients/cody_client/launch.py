"""`cody-client`'s entry point: for `exec`, the daemon starts before anything else is imported.

asyncio, argparse and the client's own stack take ~60 ms to import; a daemon started first
spends them importing its own stack on the other core (bench/README.md, "Startup").
Everything else is `cli.main`.

Invariants: the early daemon is started exactly as `DaemonProcess.spawn` would start it (the
same command, environment, working directory, pipes and session); it is started only when
`exec` would spawn one (no warm daemon's socket, no `--help`), and a daemon `exec` does not
take over (bad arguments, a socket that appeared meanwhile) is killed before this process ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["main", "start_early_daemon"]


def start_early_daemon(argv: Sequence[str]) -> subprocess.Popen[bytes] | None:
    """Start the daemon `exec` is about to need, or None (not `exec`, help, a warm socket, or
    no daemon to start: `exec` then reports it as usual)."""
    if not argv or argv[0] != "exec" or "-h" in argv or "--help" in argv:
        return None
    if "--no-daemon-socket" not in argv:
        from cody_protocol.endpoint import client_socket_path

        path = client_socket_path(os.environ)
        if path is not None and path.is_socket():
            return None
    from .daemon_command import DaemonNotFound, daemon_command
    from .process_start import start_daemon_process

    try:
        return start_daemon_process(daemon_command())
    except (DaemonNotFound, OSError):
        return None


def main() -> None:
    argv = sys.argv[1:]
    early = start_early_daemon(argv)
    from .cli import main as cli_main

    cli_main(argv, early_daemon=early)
