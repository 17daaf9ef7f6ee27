"""The daemon's error tree. Every layer raises these; `rpc/errors.py` maps them to JSON-RPC.

    CodyError
    ├── InvalidRequest          -> -32600  (e.g. a request before `initialize`)
    ├── InvalidParams           -> -32602  (params or configuration; carries ParamIssues)
    ├── NotFound                -> -32002  (unknown session, missing session file)
    ├── SessionBusy             -> -32011  (a turn is running, or another daemon holds the file)
    ├── AuthRequired            -> -32000  (no credentials at all for the chosen provider)
    └── ProviderError           -> -32010  (a model call failed: kind, retryable, status)

    ClientFileError: the client failed an `fs/*_text_file` request (never sent to the client:
    file tools report it to the model as a tool error).

Messages are for users: they say what happened and what to do, and never contain secrets,
prompts or file contents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cody_protocol.errors import ProviderErrorKind

__all__ = [
    "AuthRequired",
    "ClientFileError",
    "CodyError",
    "InvalidParams",
    "InvalidRequest",
    "Issue",
    "NotFound",
    "ProviderError",
    "SessionBusy",
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
