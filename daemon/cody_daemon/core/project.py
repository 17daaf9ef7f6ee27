"""Where a project starts: the nearest ancestor of the working directory holding a `.git`.

Project instructions (engine/project_docs.py), the environment item and the extension files
(extensions/discovery.py) all look from the project root down to the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["project_chain", "project_root"]


def project_root(cwd: Path) -> Path:
    """The nearest ancestor of `cwd` (itself included) holding a `.git`; else `cwd`."""
    probe = cwd
    while True:
        if os.path.lexists(probe / ".git"):
            return probe
        if probe.parent == probe:
            return cwd
        probe = probe.parent


def project_chain(root: Path, cwd: Path) -> list[Path]:
    """The directories from `root` down to `cwd`, both included (`cwd` below `root`)."""
    chain = [cwd]
    probe = cwd
    while probe not in (root, probe.parent):
        probe = probe.parent
        chain.append(probe)
    return list(reversed(chain))
