"""What a session tells the language-server pool about its project (no pygls here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..config.model import LspConfig
from .specs import ServerSpec

__all__ = ["Project"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Project:
    session_id: str
    cwd: Path
    config: LspConfig
    trusted: bool
    """The user's config trusts the project: servers run unsandboxed (lsp/launch.py)."""
    env: Mapping[str, str] = field(repr=False)
    """The scrubbed environment servers get (no credentials)."""
    hidden_files: tuple[Path, ...] = ()
    """Login files a sandboxed server cannot read."""
    specs: tuple[ServerSpec, ...] = ()
    """The servers found for this project (lsp/specs.py), found programs only."""
