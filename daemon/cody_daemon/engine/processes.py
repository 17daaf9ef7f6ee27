"""The engine's side of a session's processes (tools/processes/): what clients see of them.

- `SessionProcessEvents` (the table's listener): a process that outlived its `exec` call
  keeps that call's live output going (`ToolCallOutput`, throttled like a running call's and
  redacted with the credentials guard of the turn that started it), and its end closes it
  (`ToolCallOutputEnd`, then a `ToolCallProgress` whose `rawOutput` has the exit code). They
  go to every client attached to the session (the manager's link), between turns too.
- `process_info`: a process as `_cody/session/processes` lists it (its command redacted).
- `attach_processes`: give a live session its table.

Invariants: nothing here runs for a process its call waited for (the call's own live output
and result say everything); each kept process gets exactly one end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from cody_protocol.processes import ProcessInfo

from ..errors import InvalidParams, Issue
from ..policy.sandbox import SandboxPolicy, network_namespace_prefix
from ..tools.processes.host import ProcessHost
from ..tools.processes.process import ManagedProcess
from ..tools.processes.table import ProcessNotFound, ProcessTable
from ..tools.registry import ToolRegistry
from .events import EngineEvent, ToolCallOutput, ToolCallOutputEnd, ToolCallProgress
from .ports import ClientLink
from .session import Session
from .toolcalls import LiveOutput

__all__ = [
    "SessionProcessEvents",
    "attach_processes",
    "kill_process",
    "list_processes",
    "prepare_processes",
    "process_info",
]


class SessionProcessEvents:
    """The listener of one session's table (see the module docstring)."""

    def __init__(self, session_id: str, link: Callable[[], ClientLink | None]) -> None:
        self.session_id = session_id
        self._link = link
        self._live: dict[int, LiveOutput] = {}

    def _emit(self, event: EngineEvent) -> None:
        link = self._link()
        if link is not None:
            link.emit(self.session_id, event)

    def output(self, process: ManagedProcess, text: str) -> None:
        call_id = process.facts.call_id
        if call_id is None:
            return
        live = self._live.get(process.id)
        if live is None:
            guard = process.guard

            def send(chunk: str) -> None:
                self._emit(ToolCallOutput(call_id, guard.redact(chunk)))

            live = self._live[process.id] = LiveOutput(send)
        live.add(text)

    def ended(self, process: ManagedProcess) -> None:
        call_id = process.facts.call_id
        live = self._live.pop(process.id, None)
        cut = False
        if live is not None:
            live.close()
            cut = live.cut
        if call_id is None:
            return
        feed = process.feed
        self._emit(
            ToolCallOutputEnd(
                call_id=call_id,
                exit_code=process.exit_code,
                signal=process.signal_name,
                complete=not cut and not (feed is not None and feed.cut),
            )
        )
        self._emit(
            ToolCallProgress(
                call_id=call_id,
                raw_output={
                    "processId": process.id,
                    "running": False,
                    "exitCode": process.exit_code,
                    **({"signal": process.signal_name} if process.signal_name else {}),
                },
            )
        )


def attach_processes(
    host: ProcessHost, session_id: str, link: Callable[[], ClientLink | None]
) -> ProcessTable:
    """The session's table, reporting to its attached clients."""
    table = host.table(session_id)
    table.listener = SessionProcessEvents(session_id, link)
    return table


def process_info(process: ManagedProcess, *, kept: bool) -> ProcessInfo:
    facts = process.facts
    guard = process.guard
    command = (
        guard.redact(facts.command)
        if isinstance(facts.command, str)
        else [guard.redact(word) for word in facts.command]
    )
    return ProcessInfo(
        process_id=process.id,
        command=command,
        pid=process.pid,
        started_at=facts.started_at,
        running=process.running,
        exit_code=None if process.running else process.exit_code,
        signal=None if process.running else process.signal_name,
        cwd=facts.cwd,
        background=facts.background,
        kept=kept,
        tty=facts.tty,
        sandboxed=facts.isolation == "sandbox",
        output_bytes=process.ring.total,
        tool_call_id=facts.call_id,
        stopped_by=process.stopped_by,
    )


def list_processes(table: ProcessTable | None) -> list[ProcessInfo]:
    """The session's processes, oldest first (`_cody/session/processes`)."""
    if table is None:
        return []
    kept = {process.id for process in table.kept()}
    return [process_info(p, kept=p.id in kept) for p in table.listed()]


async def kill_process(table: ProcessTable | None, process_id: int) -> tuple[ProcessInfo, bool]:
    """Stop one of the session's processes for a client (`_cody/process/kill`): the process
    afterwards, and whether it was still running."""
    try:
        if table is None:
            raise ProcessNotFound(f"there is no process {process_id} in this session (it has none)")
        process = table.get(process_id)
    except ProcessNotFound as exc:
        raise InvalidParams(
            str(exc).capitalize() + ".",
            [Issue(key="processId", message="no such process", value=process_id, source="params")],
        ) from None
    was_running = process.running
    await table.stop(process_id, by="the user (_cody/process/kill)")
    kept = any(p.id == process_id for p in table.kept())
    return process_info(process, kept=kept), was_running


def prepare_processes(session: Session, sandbox: SandboxPolicy, tools: ToolRegistry) -> None:
    """While the model thinks, when the session can run commands: start the launcher the
    turn's commands will need (a session's own network launcher only once it ran a command:
    each costs a process), and find the workspace's protected paths (the first command then
    waits for neither)."""
    table = session.processes
    if table is None or "exec" not in tools:
        return
    if sandbox.exec_isolation() == "bwrap":
        table.track(asyncio.ensure_future(asyncio.to_thread(sandbox.find_protected)))
        if not sandbox.reaches_network():
            if table.started_any:  # a session that runs commands: its namespace, ahead
                table.prepare_network(network_namespace_prefix())
            return
    table.host.prepare()
