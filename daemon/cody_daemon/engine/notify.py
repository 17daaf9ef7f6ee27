"""The user's `notify` program: run by the daemon when a turn ends or an approval waits.

`notify = ["program", "arg", ...]` (Codex's key) runs `program arg ... <JSON>`: the payload
is the last argument, as Codex passes it. Payloads (Codex's keys, kebab-case):

    {"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", "input-messages": [...],
     "last-assistant-message", "stop-reason"}
    {"type": "approval-requested", "thread-id", "turn-id", "cwd", "call-id", "title", "kind"}

(`thread-id` is the session id; `stop-reason` and `approval-requested` are Cody's.)

Invariants:
- only the user's config (or a trusted project's) sets `notify` (config/loader.py
  PROTECTED_KEYS): a cloned repository cannot make the daemon run a program;
- the program never holds up a turn: it is started detached (its own session and process
  group, stdin, stdout and stderr on /dev/null) and the turn goes on at once; it is killed
  (its whole group) after `NOTIFY_TIMEOUT_S`, and at daemon shutdown;
- it runs with the environment exec's commands get (`SecretGuard.child_environment`: no
  provider or tool keys) in the session's directory, and the payload's texts are redacted
  with the same guard and cut to `MAX_TEXT_CHARS` each (`MAX_MESSAGES` latest inputs), so
  the argument stays far below Linux's 128 KiB limit per argument;
- a program that cannot start costs one log line (no payload, no prompt text in it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.history import HistoryItem, MessageItem
from ..policy.secrets import SecretGuard
from .events import EngineEvent
from .ports import ApprovalReply, ApprovalRequest, ClientFileAccess, ClientLink
from .session import Session

__all__ = ["MAX_MESSAGES", "MAX_TEXT_CHARS", "NOTIFY_TIMEOUT_S", "Notifier", "NotifyingLink"]

logger = logging.getLogger(__name__)

NOTIFY_TIMEOUT_S = 10.0
MAX_TEXT_CHARS = 4000
MAX_MESSAGES = 8


class Notifier:
    """Starts the `notify` program and keeps its processes bounded (module docstring)."""

    def __init__(self) -> None:
        self._running: set[asyncio.Task[None]] = set()

    def turn_complete(
        self,
        session: Session,
        turn_id: str,
        stop_reason: str,
        turn_items: Sequence[HistoryItem],
        secrets: SecretGuard,
    ) -> None:
        """`agent-turn-complete` for a turn whose history items are `turn_items` (`stop_reason`
        `error`: it failed)."""
        inputs = [
            item.text
            for item in turn_items
            if isinstance(item, MessageItem) and item.role == "user" and item.text
        ]
        replies = [
            item.text
            for item in turn_items
            if isinstance(item, MessageItem) and item.role == "assistant" and item.text
        ]
        self._start(
            session,
            secrets,
            {
                "type": "agent-turn-complete",
                "thread-id": session.id,
                "turn-id": turn_id,
                "cwd": str(session.cwd),
                "input-messages": [_cut(text, secrets) for text in inputs[-MAX_MESSAGES:]],
                "last-assistant-message": _cut(replies[-1], secrets) if replies else None,
                "stop-reason": stop_reason,
            },
        )

    def approval_requested(
        self, session: Session, turn_id: str, request: ApprovalRequest, secrets: SecretGuard
    ) -> None:
        self._start(
            session,
            secrets,
            {
                "type": "approval-requested",
                "thread-id": session.id,
                "turn-id": turn_id,
                "cwd": str(session.cwd),
                "call-id": request.call_id,
                "title": _cut(request.title, secrets),
                "kind": request.kind,
            },
        )

    def _start(self, session: Session, secrets: SecretGuard, payload: dict[str, Any]) -> None:
        argv = list(session.settings.notify)
        if not argv:
            return
        argv.append(json.dumps(payload, ensure_ascii=False))
        cwd = session.cwd if session.cwd.is_dir() else Path.home()
        task = asyncio.get_running_loop().create_task(
            _run(argv, cwd, secrets.child_environment(), str(payload["type"]))
        )
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def aclose(self) -> None:
        """Stop every program still running (daemon shutdown)."""
        for task in list(self._running):
            task.cancel()
        if self._running:
            await asyncio.wait(self._running, timeout=2)


async def _run(argv: list[str], cwd: Path, env: dict[str, str], kind: str) -> None:
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        logger.warning("notify program %r could not start (%s): %s", argv[0], kind, exc.strerror)
        return
    try:
        await asyncio.wait_for(process.wait(), NOTIFY_TIMEOUT_S)
    except (TimeoutError, asyncio.CancelledError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), 2)
        logger.info("notify program %r stopped after %g s (%s)", argv[0], NOTIFY_TIMEOUT_S, kind)


def _cut(text: str, secrets: SecretGuard) -> str:
    text = secrets.redact(text)
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"


class NotifyingLink:
    """A turn's `ClientLink` that also starts `approval-requested` before each approval."""

    def __init__(
        self, link: ClientLink, notifier: Notifier, session: Session, secrets: SecretGuard
    ) -> None:
        self._link = link
        self._notifier = notifier
        self._session = session
        self._secrets = secrets
        self.turn_id = ""
        """Set once the turn's runner exists (its id)."""

    def emit(self, session_id: str, event: EngineEvent) -> None:
        self._link.emit(session_id, event)

    async def wait_writable(self) -> None:
        await self._link.wait_writable()

    async def flush(self, session_id: str) -> None:
        await self._link.flush(session_id)

    async def request_approval(self, session_id: str, request: ApprovalRequest) -> ApprovalReply:
        self._notifier.approval_requested(self._session, self.turn_id, request, self._secrets)
        return await self._link.request_approval(session_id, request)

    def file_access(self) -> ClientFileAccess:
        return self._link.file_access()

    async def read_text_file(self, session_id: str, path: str) -> str:
        return await self._link.read_text_file(session_id, path)

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await self._link.write_text_file(session_id, path, content)

    def __getattr__(self, name: str) -> Any:  # any other port method: the link's own
        return getattr(self._link, name)
