"""What a tool looks like to a model (`ToolSpec`), what it can do (`ToolFacts`) and what a
grant remembers (`GrantKey`).

Shared by providers (which advertise tools), tools (which declare them), policy and backends
(which derive phases, approvals and the CLIs' settings from the facts, and key grants), so
none of those needs to import another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["FileAccess", "GrantKey", "ToolChange", "ToolFacts", "ToolSpec"]

GrantKey = tuple[str, ...]
"""What a session grant or rejection remembers (the protocol reference's "Grant keys")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool as advertised to the model."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""


ToolChange = Literal["nothing", "plan", "processes", "agents", "files", "programs", "elsewhere"]
"""The most one call of a tool can change: `nothing` (it only reads: files, the web, an MCP
server's resources, a language server), the session's `plan`, the session's `processes` (read
their output, stop them), child `agents` (start them, collect their answers), `files`, any
`programs` (run a command, type into one), or things `elsewhere` (an MCP server's tool that
is not trusted to only read)."""

FileAccess = Literal["none", "read", "write"]
"""What a tool does to the files and directories its arguments name. A tool that reads or
writes them says which for each call (`Tool.path_reads` / `Tool.path_writes`); every call of
one that never says asks before it runs (fail closed: engine/approvals.py)."""

_ASKS: frozenset[ToolChange] = frozenset({"files", "programs", "elsewhere"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFacts:
    """What a tool can do, declared by the tool itself (`Tool.facts`). Phases
    (policy/allowlist.py), the backends' mappings (backends/mapping.py) and whether a call
    asks by default (`Tool.requires_approval`) are derived from these, never from names."""

    changes: ToolChange
    files: FileAccess = "none"
    network: bool = False
    """The tool itself reaches hosts beyond this machine (the web tools; a command's reach is
    the sandbox's, an MCP server's is the server's)."""

    @property
    def read_only(self) -> bool:
        """It changes nothing (the `research` phase's tools)."""
        return self.changes == "nothing"

    @property
    def writes_or_runs(self) -> bool:
        """It can change files or run programs (what a read-only sandbox forbids)."""
        return self.changes in ("files", "programs")

    @property
    def asks(self) -> bool:
        """A call asks by default: it changes files, programs or things elsewhere, or it
        reaches the network (the approval policy and the sandbox then weigh it)."""
        return self.changes in _ASKS or self.network
