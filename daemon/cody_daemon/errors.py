"""The daemon's error tree. Every layer raises these; `rpc/errors.py` maps them to JSON-RPC.

    CodyError
    ├── InvalidRequest          -> -32600  (e.g. a request before `initialize`)
    ├── InvalidParams           -> -32602  (params or configuration; carries ParamIssues)
    ├── NotFound                -> -32002  (unknown session, missing session file)
    ├── SessionBusy             -> -32011  (a turn is running, or another daemon holds the file)
    │   └── NoTurnRunning       -> -32011  (a steer with no turn to join: send a prompt instead)
    ├── AuthRequired            -> -32000  (no credentials at all for the chosen provider)
    ├── StorageError            -> -32603  (a session file could not be written: disk full, ...)
    └── ProviderError           -> -32010  (a model call failed: kind, retryable, status)

    ClientFileError: the client failed an `fs/*_text_file` request (never sent to the client:
    file tools report it to the model as a tool error).

Messages are for users: they say what happened and what to do, and never contain secrets,
prompts or file contents.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_protocol.codes import ProviderErrorKind

__all__ = [
    "AuthRequired",
    "ClientFileError",
    "CodyError",
    "InvalidParams",
    "InvalidRequest",
    "Issue",
    "NoTurnRunning",
    "NotFound",
    "ProviderError",
    "SessionBusy",
    "StorageError",
]


class CodyError(Exception):
    """Base of every error the daemon reports to a client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(CodyError):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """One bad field or config key: which key, what value, what would have been valid."""

    key: str
    message: str
    value: Any = None
    valid: tuple[Any, ...] | None = None
    source: str | None = None

    def describe(self) -> str:
        where = f" (in {self.source})" if self.source else ""
        text = f"{self.key}: {self.message}{where}"
        if self.valid:
            text += "; valid values: " + ", ".join(str(v) for v in self.valid)
        return text


class InvalidParams(CodyError):
    def __init__(self, message: str, issues: list[Issue] | None = None) -> None:
        super().__init__(message)
        self.issues: list[Issue] = issues or []


class NotFound(CodyError):
    pass


class SessionBusy(CodyError):
    pass


class NoTurnRunning(SessionBusy):
    """`_cody/session/steer` found no turn to join (the contract's -32011: the client then
    sends the message as a prompt)."""


class StorageError(CodyError):
    """Writing a session file failed (issue 8.9); the message says why and where.

    `reason` is `disk_full` (ENOSPC), `quota` (EDQUOT), `read_only` (EROFS) or `io`.
    """

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path = path
        self.errno_name = errno.errorcode.get(exc.errno or 0, "")
        self.reason = _STORAGE_REASONS.get(exc.errno or 0, "io")
        where = f"the session file {path}"
        folder = path.parent
        if self.reason == "disk_full":
            message = (
                f"The disk is full: cannot write {where}. Free some space on the disk that "
                f"holds {folder}; the session can then go on."
            )
        elif self.reason == "quota":
            message = (
                f"Disk quota exceeded: cannot write {where}. Free some space in your quota; "
                "the session can then go on."
            )
        elif self.reason == "read_only":
            message = f"The file system holding {folder} is read-only: cannot write {where}."
        else:
            detail = exc.strerror or exc.__class__.__name__
            message = f"Cannot write {where}: {detail}."
        super().__init__(message)


_STORAGE_REASONS = {
    errno.ENOSPC: "disk_full",
    errno.EDQUOT: "quota",
    errno.EROFS: "read_only",
}


class AuthRequired(CodyError):
    def __init__(self, provider: str, fix: str, *, why: str | None = None) -> None:
        """`why`: replaces "No credentials for provider ..." (e.g. the user logged out)."""
        reason = why if why is not None else f"No credentials for provider '{provider}'."
        super().__init__(f"{reason} {fix}")
        self.provider = provider
        self.fix = fix


class ClientFileError(Exception):
    """The client (editor) failed a file request it was asked to do (`fs/*_text_file`):
    an error answer, or an answer of the wrong shape. File tools turn it into a tool error."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(slots=True, kw_only=True)
class ProviderError(Exception):
    """A model call failed. `message` tells the user what to do about it."""

    kind: ProviderErrorKind
    message: str
    provider: str
    retryable: bool = False
    http_status: int | None = None
    retry_after_s: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message
