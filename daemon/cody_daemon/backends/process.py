"""A CLI child process speaking newline-delimited JSON over stdio, and killing it for good.

Invariants:
- the child runs in a new session (its own process group), so the CLI and everything it
  started can be signalled together;
- `kill()` signals the whole tree: the process group, plus every descendant found through
  `/proc` (or `ps`) that moved to a group or session of its own, first SIGTERM, then SIGKILL
  after `grace_s`; when it returns, the CLI has exited;
- every stdout line is handed to `on_message` parsed, in order; a line that is not a JSON
  object is reported once through `on_garbage` (the protocol stream is then untrustworthy);
- stderr is drained continuously (a chatty CLI never blocks) and its last `STDERR_TAIL`
  bytes are kept for error messages;
- EOF on stdout calls `on_exit` once with the exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["STDERR_TAIL", "JsonLineProcess", "descendants", "kill_tree"]

logger = logging.getLogger(__name__)

STDERR_TAIL = 8192
_LINE_LIMIT = 64 * 1024 * 1024


class JsonLineProcess:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        on_message: Callable[[dict[str, Any]], None],
        on_garbage: Callable[[str], None],
        on_exit: Callable[[int | None], None],
    ) -> None:
        self.argv = list(argv)
        self._cwd = cwd
        self._env = dict(env)
        self._on_message = on_message
        self._on_garbage = on_garbage
        self._on_exit = on_exit
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr = bytearray()
        self._garbage_seen = False

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    @property
    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    async def start(self) -> None:
        """Spawn the CLI. OSError (not executable, vanished) propagates to the caller."""
        self._proc = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self._cwd,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            limit=_LINE_LIMIT,
        )
        self._tasks = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
        ]

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON line; a dead pipe is ignored here (the exit is reported by `on_exit`)."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            proc.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")

    async def drain(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await proc.stdin.drain()

    async def _read_stdout(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        try:
            while True:
                try:
                    line = await proc.stdout.readline()
                except ValueError:  # a line beyond the limit: not a protocol line
                    self._garbage("<a line longer than 64 MiB>")
                    continue
                if not line:
                    break
                text = line.strip()
                if not text:
                    continue
                try:
                    message = json.loads(text)
                except ValueError:
                    self._garbage(text.decode("utf-8", "replace"))
                    continue
                if not isinstance(message, dict):
                    self._garbage(text.decode("utf-8", "replace"))
                    continue
                self._on_message(message)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
            self._on_exit(proc.returncode)

    def _garbage(self, text: str) -> None:
        if not self._garbage_seen:
            self._garbage_seen = True
            self._on_garbage(text[:200])

    async def _read_stderr(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            self._stderr += chunk
            if len(self._stderr) > STDERR_TAIL:
                del self._stderr[: len(self._stderr) - STDERR_TAIL]

    async def close_stdin(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()

    async def wait(self, timeout_s: float) -> bool:
        """True when the CLI exited within `timeout_s`."""
        proc = self._proc
        if proc is None:
            return True
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def kill(self, grace_s: float = 1.0) -> None:
        """End the CLI and everything it started (see the module docstring). Idempotent."""
        proc = self._proc
        if proc is None:
            return
        await kill_tree(proc.pid, lambda: proc.returncode is not None, grace_s=grace_s)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 5)
        for task in self._tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 2)
        for task in self._tasks:
            task.cancel()


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (children first), from /proc or `ps`."""
    children: dict[int, list[int]] = {}
    for child, parent in _parent_pairs():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    queue = [pid]
    while queue:
        current = queue.pop(0)
        for child in children.get(current, []):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


def _parent_pairs() -> list[tuple[int, int]]:
    proc = Path("/proc")
    pairs: list[tuple[int, int]] = []
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces and parentheses
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 1:
                pairs.append((int(entry.name), int(fields[1])))
        return pairs
    try:
        out = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid="],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return pairs
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            pairs.append((int(parts[0]), int(parts[1])))
    return pairs


async def kill_tree(pid: int, exited: Callable[[], bool], *, grace_s: float) -> None:
    """SIGTERM the group of `pid` and its descendants, then SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        tree = [pid, *descendants(pid)]
        _signal_group(pid, sig)
        for member in tree:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, sig)
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                group = os.getpgid(member)
                if group not in (pid, os.getpgrp()):
                    os.killpg(group, sig)
        if sig == signal.SIGKILL:
            return
        deadline = asyncio.get_running_loop().time() + grace_s
        while asyncio.get_running_loop().time() < deadline:
            if exited() and not any(_alive(m) for m in tree[1:]):
                return
            await asyncio.sleep(0.02)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purposes
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return state[state.rfind(")") + 2 : state.rfind(")") + 3] != "Z"
