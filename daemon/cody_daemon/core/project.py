"""Where a project starts: the nearest ancestor of the working directory holding a `.git`.

Project instructions (engine/project_docs.py), the environment item and the extension files
(extensions/discovery.py) all look from the project root down to the working directory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["project_chain", "project_root", "shared_directory"]


def project_root(cwd: Path) -> Path:
    """The nearest ancestor of `cwd` (itself included) holding a `.git`; else `cwd`. A
    directory other users may write (`/tmp`) is never a project root: anyone could have put a
    `.git` there (the Codex CLI's sandbox leaves empty `.git` mount points in `/tmp`), which
    would make that shared directory's files the project's."""
    probe = cwd
    while True:
        if os.path.lexists(probe / ".git") and not shared_directory(probe):
            return probe
        if probe.parent == probe:
            return cwd
        probe = probe.parent


def shared_directory(directory: Path) -> bool:
    """Other users may create files in `directory` (world-writable, like `/tmp`): nothing
    found there is the project's (its instructions, commands, skills or hooks)."""
    try:
        return bool(os.stat(directory).st_mode & stat.S_IWOTH)
    except OSError:
        return False


def project_chain(root: Path, cwd: Path) -> list[Path]:
    """The directories from `root` down to `cwd`, both included (`cwd` below `root`)."""
    chain = [cwd]
    probe = cwd
    while probe not in (root, probe.parent):
        probe = probe.parent
        chain.append(probe)
    return list(reversed(chain))
