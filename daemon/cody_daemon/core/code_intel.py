"""What language servers tell the engine and the tools: diagnostics and symbol lookups.

Neutral types only (no LSP, no pygls): the engine (engine/diagnostics.py), the `symbols`
tool (tools/symbols.py) and the language-server pool (lsp/) all speak them. Lines and
columns are 1-based, as people and `path:line:col` read them (LSP's are 0-based).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

__all__ = [
    "Diagnostic",
    "EditedFile",
    "FileDiagnostics",
    "Navigator",
    "ServerReport",
    "Severity",
    "SymbolQuery",
    "shown_path",
]

Severity = Literal["error", "warning", "information", "hint"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    path: str
    """Absolute path of the file."""
    line: int
    column: int
    end_line: int
    end_column: int
    severity: Severity
    message: str
    code: str | None = None
    source: str | None = None
    """Who reported it: the server's own `source` (`Ruff`, `basedpyright`) or its name."""

    def render(self, cwd: Path) -> str:
        """`path:line:col severity code message` on one line (path relative to `cwd`)."""
        code = f" {self.code}" if self.code else ""
        return (
            f"{shown_path(self.path, cwd)}:{self.line}:{self.column} {self.severity}{code} "
            f"{self.message}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EditedFile:
    """A file a tool call changed: its text before (None: it did not exist) and after
    (None: it was deleted)."""

    path: Path
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FileDiagnostics:
    """What the servers found in one changed file that was not there before the change."""

    path: str
    new: tuple[Diagnostic, ...]
    """The new errors and warnings, most severe first."""
    servers: tuple[str, ...]
    """The servers that checked the file in time."""
    late: tuple[str, ...] = ()
    """Servers that did not answer within the bound (or failed): their findings are missing."""
    baseline: bool = True
    """False when the diagnostics before the change were unknown: `new` then holds the
    diagnostics on the changed lines."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SymbolQuery:
    """One `symbols` call: `operation` with its arguments, in the session's `cwd`."""

    operation: Literal["workspaceSymbols", "documentSymbols", "definition", "references"]
    cwd: Path
    """The session's directory: paths in the answer are relative to it."""
    query: str | None = None
    path: Path | None = None
    line: int | None = None
    column: int | None = None
    symbol: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerReport:
    """One language server as `cody-client doctor` shows it."""

    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    path: str | None
    """Where its program was found (None: not found)."""
    state: Literal["found", "not found", "started", "failed", "not started"]
    sandboxed: bool
    problem: str | None = None


class Navigator(Protocol):
    """The language servers as the `symbols` tool sees them (lsp/service.py)."""

    def not_navigable(self, session_id: str | None) -> str | None:
        """Why no server that answers symbol requests runs for this session's project (None:
        one does; `session_id` None: no session)."""
        ...

    async def navigate(self, session_id: str, query: SymbolQuery, timeout_s: float) -> str:
        """The answer as text for the model; raises `ValueError` with a readable reason."""
        ...


def shown_path(path: str | os.PathLike[str], cwd: Path) -> str:
    """`path` relative to `cwd` when it lies inside it, else as given."""
    text = os.fspath(path)
    try:
        relative = os.path.relpath(text, cwd)
    except ValueError:
        return text
    return text if relative.startswith("..") else relative
