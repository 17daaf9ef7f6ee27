"""Stopping a child process the daemon started (git for checkpoints and worktrees).

Invariant: `stop_gently` returns only once the process is gone (reaped): SIGTERM first, so
the program can clean up (git removes its lock files), then SIGKILL after `grace_s`. A
process that already ended is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["stop_gently"]


async def stop_gently(process: asyncio.subprocess.Process, grace_s: float) -> None:
    """SIGTERM, then SIGKILL after `grace_s` (see the module docstring)."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(asyncio.shield(process.wait()), grace_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
