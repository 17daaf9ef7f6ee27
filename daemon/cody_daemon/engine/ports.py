"""What the engine needs from the outside: a link to the attached client, and the language
servers.

The rpc layer implements `ClientLink`; tests may implement it in-process. `CodeServers` is
implemented by lsp/service.py (app.py passes it in `EngineDeps.code`). The engine never
imports pygls, nor the lsp package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from cody_protocol.content import ToolCallContent
from cody_protocol.updates import ToolCallLocation, ToolKind

from ..config.model import LspConfig
from ..core.code_intel import EditedFile, FileDiagnostics, ServerReport
from .events import EngineEvent

__all__ = [
    "ApprovalAnswer",
    "ApprovalReply",
    "ApprovalRequest",
    "ClientFileAccess",
    "ClientLink",
    "CodeServers",
]

ApprovalAnswer = Literal[
    "allow_once",
    "allow_session",
    "allow_project",
    "reject_once",
    "reject_session",
    "cancelled",
    "invalid",
]
"""The engine's names for the client's choice (also what session files record):
`allow_session` / `reject_session` are the options of kind `allow_always` / `reject_always`
(the rpc layer maps the wire ids); `allow_project` (offered only with `project_rules`) also
saves those rules. `invalid`: the client answered with an error or an unknown option
(counts as reject_once)."""


@dataclass(frozen=True, slots=True)
class ApprovalReply:
    """The client's answer to an approval request."""

    answer: ApprovalAnswer
    message: str | None = None
    """The user's reason for a rejection, for the model (the client's `_meta.cody.message`)."""
    updated_input: dict[str, Any] | None = None
    """Arguments the user edited, to run instead of the model's (`_meta.cody.updatedInput`);
    only with an allow answer, and decided on again like the model's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    call_id: str
    title: str
    kind: ToolKind
    raw_input: Any
    content: list[ToolCallContent]
    grant_key: str
    """Human description of what `allow_session`/`reject_session` would remember."""
    sandboxed: bool | None
    """For process-running tools: whether the call would run inside the sandbox."""
    locations: list[ToolCallLocation] | None = None
    """The files the call would touch (as on its `tool_call`)."""
    justification: str | None = None
    """Why the model asks to run the command outside the sandbox (`exec` with `escalate`)."""
    project_rules: list[str] | None = None
    """The allow rules the `allow_project` option would save (None: not offered)."""
    project: str | None = None
    """The project root those rules are for."""


@dataclass(frozen=True, slots=True)
class ClientFileAccess:
    """Which file requests the client declared it serves (`clientCapabilities.fs`)."""

    read: bool = False
    write: bool = False


class ClientLink(Protocol):
    def emit(self, session_id: str, event: EngineEvent) -> None:
        """Send an event to the client (may be buffered/coalesced, never reordered)."""
        ...

    async def wait_writable(self) -> None:
        """Back-pressure: return when the client can take more output (at once, normally).

        Producers of many updates (a streaming turn, a session replay) await it between
        updates, so a client that reads slowly slows them down instead of growing a buffer.
        """
        ...

    async def flush(self, session_id: str) -> None:
        """Deliver everything buffered for the session (at turn end)."""
        ...

    async def request_approval(self, session_id: str, request: ApprovalRequest) -> ApprovalReply:
        """Ask the client. Cancelling the awaiting task withdraws the request."""
        ...

    def file_access(self) -> ClientFileAccess:
        """What the attached client can do with files for us (nothing: the disk is used)."""
        ...

    async def read_text_file(self, session_id: str, path: str) -> str:
        """`fs/read_text_file`; raises ClientFileError. Cancelling withdraws the request."""
        ...

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        """`fs/write_text_file`; raises ClientFileError. Cancelling withdraws the request."""
        ...


class CodeServers(Protocol):
    """The language servers (lsp/service.py): diagnostics after edits. Nothing raises: a
    slow or broken server is reported in `FileDiagnostics.late`."""

    def attach(
        self,
        session_id: str,
        *,
        cwd: Path,
        config: LspConfig,
        trusted: bool,
        env: Mapping[str, str],
        hidden_files: tuple[Path, ...] = (),
    ) -> None:
        """Who the session is: its project, `[lsp]`, trust, the environment servers get."""
        ...

    def prepare(self, session_id: str, paths: Iterable[Path]) -> None:
        """An edit of `paths` is coming: start servers and learn the diagnostics before it."""
        ...

    async def check(
        self, session_id: str, edits: Sequence[EditedFile], bound_s: float
    ) -> list[FileDiagnostics]:
        """The new diagnostics of the edited files, returned within `bound_s`."""
        ...

    async def recheck(self, session_id: str, bound_s: float) -> list[FileDiagnostics]:
        """After a command: the new diagnostics of files the servers hold that changed."""
        ...

    async def release(self, session_id: str) -> None:
        """The session ended (its servers stop when nobody else uses them)."""
        ...

    @property
    def switched_off(self) -> bool:
        """`CODY_LSP=off` in the daemon's environment."""
        ...

    async def report(
        self,
        *,
        cwd: Path,
        config: LspConfig,
        trusted: bool,
        env: Mapping[str, str],
        start: bool,
        timeout_s: float = 20.0,
    ) -> list[ServerReport]:
        """The servers a session in `cwd` gets; with `start`, whether each one starts."""
        ...

    async def aclose(self) -> None: ...
