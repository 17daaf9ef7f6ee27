"""What the engine is built from (the composition root in app.py fills this in)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..checkpoints.store import CheckpointStore
from ..config.paths import CodyPaths
from ..providers.pool import ProviderPool
from ..store.store import SessionStore
from ..tools.registry import ToolRegistry

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
    checkpoints: CheckpointStore | None = None
    """The workspaces' shadow repositories (None: checkpoints are off)."""
