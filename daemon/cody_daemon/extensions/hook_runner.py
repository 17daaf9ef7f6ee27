"""Running one hook command: `bash -c <command>` (`sh` where there is no bash) with its JSON
on stdin, in the session's directory, with the environment the caller gives (the session's,
credentials removed: engine/hooks.py).

Invariants:
- the hook runs in its own session and process group; when `run_hook` returns or raises
  (a timeout, the turn or the session cancelled), the whole group has been sent SIGKILL:
  nothing a hook started in its group outlives it (a process that left the group with
  `setsid` is not followed; hooks are the user's own programs, not the model's);
- a hook gets at most `timeout_s` seconds (then it is killed and the run says `timed_out`);
- stdout and stderr are read to the end, but at most `OUTPUT_LIMIT` bytes of each are kept,
  so a chatty hook costs bounded memory; after the hook exits its output is awaited at most
  `DRAIN_S` seconds (a process that kept the pipe open cannot hold the turn);
- a hook that does not read its stdin does not block (a closed pipe is ignored);
- `HookProcesses.kill_all` kills every hook still running (the session closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["DRAIN_S", "OUTPUT_LIMIT", "HookProcesses", "HookRun", "hook_shell", "run_hook"]

OUTPUT_LIMIT: Final = 1024 * 1024
DRAIN_S: Final = 2.0
_CHUNK: Final = 65536


@dataclass(frozen=True, slots=True)
class HookRun:
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None
    """Why the hook could not start (then `exit_code` is None)."""


@dataclass(slots=True)
class HookProcesses:
    """The process groups of a session's running hooks."""

    groups: set[int] = field(default_factory=set)

    def kill_all(self) -> None:
        for group in list(self.groups):
            _kill_group(group)
        self.groups.clear()


def hook_shell() -> str:
    """The shell hooks run in: the system's bash, else `/bin/sh` (never one found through a
    PATH the repository could set)."""
    for candidate in ("/bin/bash", "/usr/bin/bash"):
        if os.access(candidate, os.X_OK):
            return candidate
    return "/bin/sh"


async def run_hook(
    command: str,
    stdin: bytes,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    processes: HookProcesses | None = None,
) -> HookRun:
    try:
        proc = await asyncio.create_subprocess_exec(
            hook_shell(),
            "-c",
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(None, error=f"could not start: {exc.strerror or type(exc).__name__}")
    if processes is not None:
        processes.groups.add(proc.pid)
    assert proc.stdout is not None and proc.stderr is not None
    feeder = asyncio.create_task(_feed(proc, stdin))
    out = asyncio.create_task(_collect(proc.stdout))
    err = asyncio.create_task(_collect(proc.stderr))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
        _kill_group(proc.pid)  # the hook (on timeout) and whatever it left in its group
        if timed_out:
            await proc.wait()
        await asyncio.wait({out, err}, timeout=DRAIN_S)
    except asyncio.CancelledError:
        _kill_group(proc.pid)  # the turn or the session ended: the hook goes with it
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(proc.wait(), DRAIN_S)  # reaped, not left a zombie
        raise
    finally:
        _kill_group(proc.pid)
        if processes is not None:
            processes.groups.discard(proc.pid)
        for task in (feeder, out, err):
            if not task.done():
                task.cancel()
    return HookRun(
        exit_code=None if timed_out else proc.returncode,
        stdout=_text(out),
        stderr=_text(err),
        timed_out=timed_out,
    )


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.close()


async def _collect(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(_CHUNK):
        if len(kept) < OUTPUT_LIMIT:
            kept += chunk[: OUTPUT_LIMIT - len(kept)]
    return bytes(kept)


def _text(task: asyncio.Task[bytes]) -> str:
    if not task.done() or task.cancelled() or task.exception() is not None:
        return ""
    return task.result().decode("utf-8", errors="replace")


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
