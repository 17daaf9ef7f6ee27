"""Where each workspace's shadow repository lives: `<data dir>/checkpoints/<key>/`.

The key is a hash of the workspace's resolved real path, so two sessions in one workspace
share a repository (and its incremental index) and a workspace reached through a symlink
is the same workspace. The directory is hidden from sandboxed commands
(policy/sandbox.py: `hidden_dirs`), and is inside Cody's data directory, which the sandbox
never lets a command write. Files the store reads itself are opened as regular files only
(core/safe_read.py): a FIFO planted there neither hangs nor blocks the daemon.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from ..core.safe_read import read_regular_text
from .git import CheckpointError, find_git
from .repo import ShadowRepo

__all__ = ["CheckpointStore"]

_WORKSPACE_LIMIT = 64 * 1024
"""A repository's `workspace` file holds one path; anything larger is not one of ours."""


class CheckpointStore:
    def __init__(self, data_dir: Path, env: Mapping[str, str]) -> None:
        self.root = data_dir / "checkpoints"
        self._env = dict(env)
        self._git: str | None = None
        self._repos: dict[Path, ShadowRepo] = {}

    def repo_for(self, workspace: Path) -> ShadowRepo:
        """The shadow repository of `workspace` (made on its first snapshot)."""
        real = Path(os.path.realpath(workspace))
        repo = self._repos.get(real)
        if repo is None:
            key = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
            repo = ShadowRepo(self._git_binary(), self.root / key, real)
            self._repos[real] = repo
        return repo

    def holding(self, ref: str) -> list[ShadowRepo]:
        """The repositories on disk that keep snapshots under `refs/cody/<ref>`."""
        found: list[ShadowRepo] = []
        try:
            entries = list(self.root.iterdir())
        except OSError:
            return found
        for entry in entries:
            try:
                workspace = read_regular_text(entry / "workspace", _WORKSPACE_LIMIT).strip()
            except (OSError, UnicodeDecodeError):
                continue
            repo = self.repo_for(Path(workspace))
            if repo.root == entry and repo.has_ref(ref):
                found.append(repo)
        return found

    def _git_binary(self) -> str:
        if self._git is None:
            self._git = find_git(self._env)
        if self._git is None:
            raise CheckpointError(
                "Checkpoints need git, which is not on the daemon's PATH; install git to "
                "make turns undoable."
            )
        return self._git
