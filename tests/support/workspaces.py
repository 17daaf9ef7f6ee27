"""A workspace and a directory outside it, for tests of the sandbox and the file tools.

Neither lies under the sandbox's temp root (a writable root of `workspace-write`): the temp
root is moved to its own directory, so a write that reaches `outside` proves an escape.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from cody_daemon.policy.sandbox import SandboxPolicy
from cody_daemon.tools.base import ToolContext
from cody_protocol.settings import SandboxMode

__all__ = ["Dirs", "ctx_for", "workspace_and_outside"]


@dataclass
class Dirs:
    workspace: Path
    outside: Path
    """Holds `secret.txt` ("original\\n"), which no test may change."""
    temp_root: Path


def workspace_and_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    """Make the two directories (resolved) and point TMPDIR at a third."""
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp_root))
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("original\n")
    return Dirs(workspace.resolve(), outside.resolve(), temp_root.resolve())


def ctx_for(workspace: Path, mode: SandboxMode = "workspace-write") -> ToolContext:
    """A tool call's context in `workspace` under the sandbox `mode`."""
    sandbox = SandboxPolicy.create(mode, workspace)
    return ToolContext(session_id="s", call_id="c", cwd=workspace, sandbox=sandbox)
