"""What the model is told about a process: new output since its last read, and its state.

Shared by `exec` (a command still running after `yieldMs`, or started in the background),
`readOutput` and `writeStdin`. Each read starts where the previous one ended
(`ManagedProcess.read_cursor`); a read returns at most the first and last 32 KiB of what is
new (like `exec`), says how many bytes the bounded buffer dropped before they were read, and
never cuts a UTF-8 character of a running process in two (its last bytes wait for the next
read).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from cody_protocol.content import ContentToolCallContent, TextContent

from ..base import ToolError, ToolResult
from .buffers import OutputBuffer
from .process import ManagedProcess
from .table import ProcessNotFound, ProcessTable

__all__ = [
    "IDLE_S",
    "MAX_WAIT_MS",
    "NewOutput",
    "find_process",
    "new_output_result",
    "read_new",
    "state_line",
    "wait_for_output",
]

MAX_WAIT_MS = 300_000
"""The longest `waitMs` / `yieldMs` (five minutes): a call never waits longer."""
IDLE_S = 0.2
"""A wait ends this long after output stops coming (the process is waiting for something)."""


def find_process(table: ProcessTable | None, process_id: int) -> ManagedProcess:
    if table is None:
        raise ToolError("this session has no processes")
    try:
        return table.get(process_id)
    except ProcessNotFound as exc:
        raise ToolError(str(exc)) from None


async def wait_for_output(process: ManagedProcess, wait_s: float) -> None:
    """Until the process ends, `wait_s` passes, or there is unread output and none more
    came for `IDLE_S` (an answer to input, a server's log line), whichever is first."""
    deadline = time.monotonic() + wait_s
    while not process.ended.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        unread = process.ring.total > process.read_cursor
        process.changed.clear()
        try:
            await asyncio.wait_for(
                process.changed.wait(), min(remaining, IDLE_S) if unread else remaining
            )
        except TimeoutError:
            if unread:
                return


def _complete_utf8(data: bytes) -> int:
    """How many leading bytes of `data` end on a character boundary (0-3 bytes of a
    character still being written are left for later)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return len(data)
        if byte >= 0xC0:  # the lead byte of the last character
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) if back >= need else len(data) - back
    return len(data)


class NewOutput:
    """Output of a process since its last read (and the cursor moved past it)."""

    def __init__(self, text: str, new_bytes: int, dropped: int, truncated: bool) -> None:
        self.text = text
        self.new_bytes = new_bytes
        self.dropped = dropped
        self.truncated = truncated

    def lines(self) -> list[str]:
        """The lines the model reads about it (the output itself last)."""
        notes: list[str] = []
        if self.dropped:
            notes.append(
                f"[... {self.dropped} earlier bytes were dropped before they were read: a "
                "process keeps its latest 1 MiB of output ...]"
            )
        if self.truncated:
            notes.append(f"(new output: {self.new_bytes} bytes; showing its first and last 32 KiB)")
        if not self.new_bytes:
            return [*notes, "No new output."]
        return [*notes, "Output:", self.text]


def read_new(process: ManagedProcess) -> NewOutput:
    """What came since the last read; moves the read cursor past it."""
    read = process.ring.read(process.read_cursor)
    data = read.data
    if process.running:
        data = data[: _complete_utf8(data)]
    buffer = OutputBuffer()
    buffer.append(data)
    process.read_cursor = read.end - (len(read.data) - len(data))
    return NewOutput(buffer.text(), len(data), read.dropped, buffer.truncated)


def state_line(process: ManagedProcess) -> str:
    """`Process 3 (npm run dev, pid 1234): running.`"""
    return (
        f"Process {process.id} ({process.facts.title}, pid {process.pid}): {process.status_text()}."
    )


def raw_state(process: ManagedProcess, new: NewOutput | None = None) -> dict[str, Any]:
    """`rawOutput` for clients: the process, its state, what this read returned."""
    raw: dict[str, Any] = {
        "processId": process.id,
        "pid": process.pid,
        "running": process.running,
        "exitCode": None if process.running else process.exit_code,
    }
    if new is not None:
        raw["newBytes"] = new.new_bytes
        if new.dropped:
            raw["droppedBytes"] = new.dropped
    return raw


async def new_output_result(process: ManagedProcess, wait_s: float) -> ToolResult:
    """`readOutput`'s and `writeStdin`'s answer: wait up to `wait_s` for output, then the
    process's state line and what is new since the last read."""
    await wait_for_output(process, wait_s)
    new = read_new(process)
    text = "\n".join([state_line(process), *new.lines()])
    return ToolResult(
        output=text,
        raw_output=raw_state(process, new),
        content=[ContentToolCallContent(content=TextContent(text=text))],
    )
