"""Where Cody keeps its configuration and data.

Invariants:
- `CODY_HOME` (when set and non-empty) holds everything: `$CODY_HOME/config.toml` and the
  data (`$CODY_HOME/sessions/...`). Otherwise the platformdirs user config and data dirs for
  the app name `cody` are used.
- Resolving paths never creates or touches a directory; whoever writes creates what it needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["APP_NAME", "CONFIG_FILE_NAME", "PROJECT_CONFIG", "CodyPaths", "resolve_paths"]

APP_NAME = "cody"
CONFIG_FILE_NAME = "config.toml"
PROJECT_CONFIG = Path(".cody") / CONFIG_FILE_NAME
"""A project's config file, relative to the session's cwd."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CodyPaths:
    """Absolute locations of the user config file and the data directories."""

    config_dir: Path
    config_file: Path
    data_dir: Path
    sessions_dir: Path

    @classmethod
    def under(cls, config_dir: Path, data_dir: Path) -> CodyPaths:
        """Paths for the given config and data directories (derived files follow the layout)."""
        return cls(
            config_dir=config_dir,
            config_file=config_dir / CONFIG_FILE_NAME,
            data_dir=data_dir,
            sessions_dir=data_dir / "sessions",
        )


def resolve_paths(env: Mapping[str, str] | None = None) -> CodyPaths:
    """Resolve the paths from `env` (default: the process environment); nothing is created."""
    environ = os.environ if env is None else env
    home = environ.get("CODY_HOME", "")
    if home:
        root = Path(home).expanduser().absolute()
        return CodyPaths.under(root, root)
    import platformdirs

    return CodyPaths.under(
        platformdirs.user_config_path(APP_NAME, appauthor=False),
        platformdirs.user_data_path(APP_NAME, appauthor=False),
    )
