"""The session's processes in the terminal: the status bar's count, `/ps`, and what `exec`
stops before it exits.

- `ProcessCount` knows which of the session's processes run: refreshed from
  `_cody/session/processes` after each turn and by `/ps`, and kept current in between by
  the updates (a call's `rawOutput` with `processId` and `running`), so the count drops when
  a server exits on its own.
- `process_lines` renders the listing (every field from the daemon goes through
  `one_line`: a command cannot fake further rows).
- `stop_left_running` stops what a one-shot `exec` run leaves running, and says which.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from cody_protocol.processes import ProcessInfo
from cody_protocol.updates import SessionUpdate, ToolCallStart, ToolCallUpdate

from .inert import one_line
from .session import ClientSession

__all__ = ["ProcessCount", "describe", "process_lines", "stop_left_running"]


class ProcessCount:
    """Which of the session's processes run (see the module docstring)."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self.running: set[int] = set()
        self._on_change = on_change

    def _set(self, running: set[int]) -> None:
        if running != self.running:
            self.running = running
            if self._on_change is not None:
                self._on_change()

    def observe(self, update: SessionUpdate) -> None:
        if not isinstance(update, ToolCallStart | ToolCallUpdate):
            return
        raw = update.raw_output
        if not isinstance(raw, dict) or not isinstance(raw.get("processId"), int):
            return
        if raw.get("running") is True:
            self._set(self.running | {raw["processId"]})
        elif raw.get("running") is False:
            self._set(self.running - {raw["processId"]})

    async def refresh(self, session: ClientSession) -> list[ProcessInfo]:
        listed = await session.processes()
        self._set({p.process_id for p in listed if p.running})
        return listed

    def text(self) -> str:
        """`2 processes` for the status bar ("" when none runs)."""
        count = len(self.running)
        if not count:
            return ""
        return f"{count} process{'es' if count != 1 else ''} running (/ps)"


def describe(info: ProcessInfo) -> str:
    """`running`, `exited 0`, `killed by SIGTERM`."""
    if info.running:
        return "running"
    if info.signal:
        return f"killed by {info.signal}"
    return f"exited {info.exit_code}"


def _command(info: ProcessInfo) -> str:
    if isinstance(info.command, str):
        return info.command
    return " ".join(info.command)


def _age(started_at: str, now: datetime.datetime) -> str:
    try:
        started = datetime.datetime.fromisoformat(started_at)
    except ValueError:
        return "?"
    seconds = max(0, int((now - started).total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def process_lines(listed: list[ProcessInfo], *, width: int = 80) -> list[str]:
    """One line per process: id, state, pid, age, command (cut to `width`)."""
    if not listed:
        return ["No processes in this session."]
    now = datetime.datetime.now(datetime.UTC)
    lines: list[str] = []
    for info in listed:
        flags = "".join(
            [
                " bg" if info.background else "",
                " tty" if info.tty else "",
                "" if info.sandboxed else " unsandboxed",
            ]
        )
        head = (
            f"{info.process_id:>3}  {describe(info):<18} pid {info.pid:<7} "
            f"{_age(info.started_at, now):>6}{flags}  "
        )
        command = _command(info)
        room = max(20, width - len(head))
        if len(command) > room:
            command = command[: room - 1] + "…"
        lines.append(one_line(head + command))
    return lines


async def stop_left_running(session: ClientSession) -> list[str]:
    """Stop every process of the session that still runs (a one-shot run is over); a line
    for each, to tell the user."""
    stopped = []
    for info in await session.processes():
        if not info.running:
            continue
        result = await session.kill_process(info.process_id)
        stopped.append(
            f"stopped process {info.process_id} the model left running "
            f"(pid {info.pid}, {describe(result.process)}): {one_line(_command(info))}"
        )
    return stopped


async def ps_command(
    session: ClientSession, words: list[str], count: ProcessCount, *, width: int = 80
) -> list[str]:
    """`/ps` (list), `/ps kill ID`, `/ps kill all`: the lines to show (at most `width`
    columns). Raises ValueError for other words (the chat shows the usage)."""
    if not words:
        return process_lines(await count.refresh(session), width=width)
    if words[0] != "kill" or len(words) != 2:
        raise ValueError("usage")
    if words[1] == "all":
        targets = [p.process_id for p in await count.refresh(session) if p.running]
        if not targets:
            return ["No process is running."]
    else:
        targets = [int(words[1])]
    lines = []
    for process_id in targets:
        result = await session.kill_process(process_id)
        verb = "Stopped" if result.outcome == "stopped" else "Already ended:"
        lines.append(
            f"{verb} process {process_id} ({describe(result.process)}): "
            f"{one_line(_command(result.process))}"
        )
    await count.refresh(session)
    return lines
