"""What the engine is built from (the composition root in app.py fills this in)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..config.paths import CodyPaths
from ..providers.pool import ProviderPool
from ..store.store import SessionStore
from ..tools.registry import ToolRegistry
from .ports import CodeServers
from .scan_pool import ScanPool

__all__ = ["EngineDeps"]


@dataclass(kw_only=True)
class EngineDeps:
    paths: CodyPaths
    store: SessionStore
    tools: ToolRegistry
    providers: ProviderPool
    env: Mapping[str, str]
    codex_home: Path
    claude_dir: Path
    version: str
    code: CodeServers | None = None
    """The language servers (None: none in this daemon)."""
    scans: ScanPool = field(default_factory=ScanPool)
    """Threads for reading session files (history, session/list): engine/scan_pool.py."""
