"""Starting the daemon without asyncio (standard library only, for `launch`)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence

__all__ = ["start_daemon_process"]


def start_daemon_process(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> subprocess.Popen[bytes]:
    """Start the daemon without asyncio, exactly as `DaemonProcess.spawn` would (pipes, its
    own session); `DaemonProcess.adopt` takes it over."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
