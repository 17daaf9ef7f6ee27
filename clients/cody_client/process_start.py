"""How the daemon is started (standard library only: `launch` starts it before asyncio is
imported, `DaemonProcess.spawn` with asyncio; both from `spawn_options`)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["spawn_options", "start_daemon_process"]


def spawn_options(env: Mapping[str, str] | None, cwd: str | None) -> dict[str, Any]:
    """The daemon's pipes, environment and directory, and its own session: a terminal's
    Ctrl-C goes to the client (which cancels the turn), not to the daemon. The daemon still
    exits when the client goes away (stdin EOF)."""
    return {
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "env": dict(env) if env is not None else None,
        "cwd": cwd,
        "start_new_session": True,
    }


def start_daemon_process(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> subprocess.Popen[bytes]:
    """Start the daemon without asyncio; `DaemonProcess.adopt` takes it over."""
    return subprocess.Popen(list(argv), **spawn_options(env, cwd))
