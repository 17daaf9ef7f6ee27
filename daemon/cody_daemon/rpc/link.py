"""The rpc implementation of the engine's `ClientLink`: updates out, approvals and the
client's files (`fs/read_text_file`, `fs/write_text_file`) round-trip.

Coalescing: consecutive text chunks of the same kind and message in one session are merged. The first
chunk after a quiet period is sent at once (no added latency); later ones are held for at
most `COALESCE_S` and sent as one notification. Any other event first flushes the pending
text, so order is preserved.

Approvals: `session/request_permission` with the JSON-RPC id repeated in
`_meta.cody.requestId`; option ids equal their kinds (plus `allow_project`, offered only
with the rules it would save, and accepted only then), and the ids older clients answer with
(`allow_session`, `reject_session`) are still accepted; an error answer, an unknown option or
a malformed `_meta.cody` (`message`, `updatedInput`) is `invalid` (the engine treats it as
reject_once); when the awaiting task is cancelled (turn cancel, approval timeout) the
request is withdrawn and cancelled on the wire.

Files: sent only when the client declared `fs.readTextFile` / `writeTextFile` (`file_access`);
an error answer or a malformed result raises `ClientFileError` (a tool error for the model);
cancelling the awaiting tool withdraws the request like an approval.

Live output: for a client with `_meta.terminal_output` (Zed), calls of live-output tools are
shown as display-only terminals (rpc/live_output.py); a client with `_meta.cody.appendOutput`
gets increments to append (rpc/updates.py); any other client, as ACP's `content` replaces,
the output so far (rpc/output_so_far.py).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from cody_protocol.files import ReadTextFileParams, ReadTextFileResult, WriteTextFileParams
from cody_protocol.initialize import ClientCapabilities
from cody_protocol.methods import (
    CODY_DIAGNOSTICS,
    CODY_MCP_STATUS,
    FS_READ_TEXT_FILE,
    FS_WRITE_TEXT_FILE,
    SESSION_REQUEST_PERMISSION,
    SESSION_UPDATE,
)
from cody_protocol.permission import (
    ALLOW_PROJECT,
    LEGACY_OPTION_IDS,
    PERMISSION_OPTIONS,
    CancelledOutcome,
    CodyPermissionMeta,
    PermissionMeta,
    PermissionOption,
    PermissionToolCall,
    RequestPermissionParams,
    RequestPermissionResult,
    allow_project_option,
)
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException

from ..engine.events import (
    AgentText,
    AgentThought,
    DiagnosticsReported,
    EngineEvent,
    McpStatusChanged,
)
from ..engine.ports import ApprovalAnswer, ApprovalReply, ApprovalRequest, ClientFileAccess
from ..errors import ClientFileError
from .live_output import TerminalView
from .output_so_far import OutputSoFar
from .protocol import CodyProtocol
from .updates import chunk_update, diagnostics_params, event_updates, mcp_status_params

__all__ = ["COALESCE_S", "RpcClientLink"]

logger = logging.getLogger(__name__)

COALESCE_S = 0.02
_ANSWERS: dict[str, ApprovalAnswer] = {
    "allow_once": "allow_once",
    "allow_always": "allow_session",
    "reject_once": "reject_once",
    "reject_always": "reject_session",
    ALLOW_PROJECT: "allow_project",
}
"""Wire option id -> the engine's answer (`allow_project` counts only where it was offered)."""
assert set(_ANSWERS) == {option.option_id for option in PERMISSION_OPTIONS} | {ALLOW_PROJECT}


@dataclass(slots=True)
class _Pending:
    kind: str
    message_id: str | None
    parts: list[str] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


class RpcClientLink:
    def __init__(self, protocol: CodyProtocol, *, coalesce_s: float = COALESCE_S) -> None:
        self._protocol = protocol
        self._coalesce_s = coalesce_s
        self._pending: dict[str, _Pending] = {}
        self._last_chunk_at: dict[str, float] = {}
        self._ids = itertools.count(1)
        self.capabilities = ClientCapabilities()
        """What the client declared in `initialize` (set by the handler)."""
        self._terminals = TerminalView()
        self._outputs = OutputSoFar()

    # -- updates --------------------------------------------------------------------------

    def emit(self, session_id: str, event: EngineEvent) -> None:
        if isinstance(event, AgentText | AgentThought):
            kind = "agent_message_chunk" if isinstance(event, AgentText) else "agent_thought_chunk"
            self._chunk(session_id, kind, event.text, event.message_id)
            return
        if isinstance(event, McpStatusChanged):
            self._flush_pending(session_id)
            self._protocol.notify(CODY_MCP_STATUS, mcp_status_params(session_id, event))
            return
        if isinstance(event, DiagnosticsReported):
            self._flush_pending(session_id)
            self._protocol.notify(CODY_DIAGNOSTICS, diagnostics_params(session_id, event))
            return
        self._flush_pending(session_id)
        updates = None
        if self.capabilities.terminal_output:
            updates = self._terminals.updates(session_id, event)
        elif not self.capabilities.append_output:
            updates = self._outputs.updates(session_id, event)
        for update in updates if updates is not None else event_updates(event):
            self._send_update(session_id, update)

    def _chunk(self, session_id: str, kind: str, text: str, message_id: str | None) -> None:
        pending = self._pending.get(session_id)
        if pending is not None and (pending.kind != kind or pending.message_id != message_id):
            self._flush_pending(session_id)
            pending = None
        if pending is not None:
            pending.parts.append(text)
            return
        now = time.monotonic()
        if now - self._last_chunk_at.get(session_id, 0.0) >= self._coalesce_s:
            self._last_chunk_at[session_id] = now
            self._send_update(session_id, chunk_update(kind, text, message_id))
            return
        pending = _Pending(kind, message_id, [text])
        self._pending[session_id] = pending
        loop = asyncio.get_running_loop()
        pending.timer = loop.call_later(self._coalesce_s, self._flush_pending, session_id)

    def _flush_pending(self, session_id: str) -> None:
        pending = self._pending.pop(session_id, None)
        if pending is None:
            return
        if pending.timer is not None:
            pending.timer.cancel()
        self._last_chunk_at[session_id] = time.monotonic()
        self._send_update(
            session_id, chunk_update(pending.kind, "".join(pending.parts), pending.message_id)
        )

    def _send_update(self, session_id: str, update: dict[str, Any]) -> None:
        self._protocol.notify(SESSION_UPDATE, {"sessionId": session_id, "update": update})

    async def wait_writable(self) -> None:
        if self._protocol.sink is not None:
            await self._protocol.sink.wait_writable()

    async def flush(self, session_id: str) -> None:
        self._flush_pending(session_id)
        self._last_chunk_at.pop(session_id, None)
        if self._protocol.sink is not None:
            await self._protocol.sink.drain()

    # -- approvals ------------------------------------------------------------------------

    async def request_approval(self, session_id: str, request: ApprovalRequest) -> ApprovalReply:
        self._flush_pending(session_id)
        msg_id = f"cody-{next(self._ids)}"
        params = RequestPermissionParams(
            session_id=session_id,
            tool_call=PermissionToolCall(
                tool_call_id=request.call_id,
                title=request.title,
                kind=request.kind,
                status="pending",
                raw_input=request.raw_input,
                content=request.content,
                locations=request.locations,
            ),
            options=_options(request),
            meta=PermissionMeta(
                cody=CodyPermissionMeta(
                    request_id=msg_id,
                    grant_key=request.grant_key,
                    sandboxed=request.sandboxed,
                    justification=request.justification,
                    project_rules=request.project_rules,
                    project=request.project,
                )
            ),
        ).wire()
        future = self._protocol.send_request_async(
            SESSION_REQUEST_PERMISSION, params, msg_id=msg_id
        )
        try:
            result = await future
        except asyncio.CancelledError:
            self._protocol.withdraw_request(msg_id)
            raise
        except JsonRpcException as exc:
            logger.info("approval %s answered with error %s", msg_id, exc.code)
            return ApprovalReply("invalid")
        reply = _reply_of(result)
        if reply.answer == "allow_project" and not request.project_rules:
            logger.info("approval answer names an option that was not offered")
            return ApprovalReply("invalid")
        return reply

    # -- the client's files (fs/*) --------------------------------------------------------

    def file_access(self) -> ClientFileAccess:
        fs = self.capabilities.fs
        return ClientFileAccess(read=fs.read_text_file, write=fs.write_text_file)

    async def read_text_file(self, session_id: str, path: str) -> str:
        params = ReadTextFileParams(session_id=session_id, path=path).wire()
        result = await self._file_request(session_id, FS_READ_TEXT_FILE, params)
        try:
            return ReadTextFileResult.model_validate(result).content
        except ValidationError:
            raise ClientFileError("its answer to fs/read_text_file has no `content` text") from None

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        params = WriteTextFileParams(session_id=session_id, path=path, content=content).wire()
        await self._file_request(session_id, FS_WRITE_TEXT_FILE, params)

    async def _file_request(self, session_id: str, method: str, params: dict[str, Any]) -> Any:
        self._flush_pending(session_id)
        msg_id = f"cody-{next(self._ids)}"
        future = self._protocol.send_request_async(method, params, msg_id=msg_id)
        try:
            return await future
        except asyncio.CancelledError:
            self._protocol.withdraw_request(msg_id)
            raise
        except JsonRpcException as exc:
            logger.info("%s %s answered with error %s", method, msg_id, exc.code)
            raise ClientFileError(
                f"{exc.message or 'error'} (JSON-RPC error {exc.code})", exc.code
            ) from None


def _options(request: ApprovalRequest) -> list[PermissionOption]:
    """The four options, plus `allow_project` (after `allow_always`) when a rule was derived."""
    options = list(PERMISSION_OPTIONS)
    if request.project_rules and request.project:
        options.insert(2, allow_project_option(request.project_rules, request.project))
    return options


def _reply_of(result: Any) -> ApprovalReply:
    try:
        parsed = RequestPermissionResult.model_validate(result)
    except ValidationError:
        logger.info("approval answer has an invalid shape")
        return ApprovalReply("invalid")
    if isinstance(parsed.outcome, CancelledOutcome):
        return ApprovalReply("cancelled")
    option = LEGACY_OPTION_IDS.get(parsed.outcome.option_id, parsed.outcome.option_id)
    answer: ApprovalAnswer | None = _ANSWERS.get(option)
    if answer is None:
        logger.info("approval answer names an unknown option")
        return ApprovalReply("invalid")
    extra = parsed.meta.cody if parsed.meta is not None else None
    if extra is None:
        return ApprovalReply(answer)
    allowed = answer in ("allow_once", "allow_session", "allow_project")
    return ApprovalReply(
        answer,
        message=None if allowed else extra.message,
        updated_input=extra.updated_input if allowed else None,
    )
