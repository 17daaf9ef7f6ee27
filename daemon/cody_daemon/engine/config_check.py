"""`_cody/config/check`: what `session/new` would say about the configuration, with no session.

Invariants:
- It runs the very checks `session/new` runs (`SessionLoader.resolve`: the cwd, every config
  file with the project's trust, `_meta.cody`, the model, the tool allowlist, the backend's
  CLI; then the MCP server specs), so a configuration it passes creates a session and one it
  fails gives the error `session/new` would give. There is no second validator.
- Nothing is created, written or started: no session file, no MCP server, no agent CLI.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cody_protocol.session import CodySessionMeta, McpServer

from ..config.loader import project_trusted
from ..config.paths import PROJECT_CONFIG
from ..errors import CodyError
from .loading import SessionLoader, mcp_specs

__all__ = ["ConfigCheck", "ConfigFile", "check_config"]


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A config file `session/new` reads for this cwd (whether or not it exists yet)."""

    path: Path
    scope: Literal["user", "project"]
    exists: bool
    trusted: bool | None = None
    """For the project file: whether the user file lists the project in `trusted_projects`
    (when it does not, the keys a project may not set are ignored, with a warning)."""


@dataclass(frozen=True, slots=True)
class ConfigCheck:
    files: list[ConfigFile]
    warnings: list[str] = field(default_factory=list)
    """What `session/new` would report in `_meta.cody.warnings` (ignored keys and why)."""
    error: CodyError | None = None
    """What `session/new` would fail with (an InvalidParams naming every problem)."""


def check_config(
    loader: SessionLoader,
    cwd: str,
    meta: CodySessionMeta | None,
    mcp_servers: Sequence[McpServer] = (),
) -> ConfigCheck:
    files = config_files(loader, cwd)
    try:
        cwd_path, settings, _catalog = loader.resolve(cwd, meta)
        mcp_specs(settings, mcp_servers, env=loader.deps.env, cwd=cwd_path)
    except CodyError as exc:
        return ConfigCheck(files=files, error=exc)
    return ConfigCheck(files=files, warnings=list(settings.warnings))


def config_files(loader: SessionLoader, cwd: str) -> list[ConfigFile]:
    """The user file, then the project's `.cody/config.toml` (unless it is the user file)."""
    paths = loader.deps.paths
    user = paths.config_file
    files = [ConfigFile(path=user, scope="user", exists=user.is_file())]
    project = Path(cwd) / PROJECT_CONFIG
    if os.path.realpath(project) != os.path.realpath(user):
        files.append(
            ConfigFile(
                path=project,
                scope="project",
                exists=project.is_file(),
                trusted=project_trusted(paths, Path(cwd)),
            )
        )
    return files
