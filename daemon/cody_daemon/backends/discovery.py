"""Finding the agent CLIs and their versions, and asking each for its login.

Lookup order for each CLI (seed 003 `detectCli`, extended): the env override (its
`BackendInfo.cli_env`, e.g. `CODEX_CLI_PATH`; when set it must name an executable, else the
CLI counts as missing and the hint says why), then `PATH`, then the usual install dirs:
Homebrew (`/opt/homebrew/bin`, `/usr/local/bin`), `~/.local/bin`, npm's global prefix
(`$NPM_CONFIG_PREFIX/bin`, `~/.npm-global/bin`) and the CLI's own (`BackendInfo.install_dirs`,
e.g. `~/.claude/local`). Everything is read from the `env` mapping handed in (the daemon's
environment), never from `os.environ` directly, so tests and clients see the same answer.

Login detection (`BackendInfo.login`) only looks for the presence of credentials (env var
names, login files); it never reads a secret's value into a message.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.safe_read import JSON_FILE_LIMIT, read_regular
from .info import BackendKind, LoginStatus, backend_info

__all__ = [
    "CliLocation",
    "cli_version",
    "find_cli",
    "home_dir",
    "json_object",
    "login_status",
    "not_installed_message",
]


@dataclass(frozen=True, slots=True)
class CliLocation:
    path: Path | None
    via: str | None
    """`CODEX_CLI_PATH`, `PATH` or the directory it was found in."""
    problem: str | None = None
    """Why it was not found (the override names a missing file, ...)."""

    @property
    def found(self) -> bool:
        return self.path is not None


def home_dir(env: Mapping[str, str]) -> Path:
    """HOME as `env` says (else the process's own)."""
    return Path(env.get("HOME") or os.path.expanduser("~"))


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _which(name: str, path_var: str) -> Path | None:
    for directory in path_var.split(os.pathsep):
        if directory:
            candidate = Path(directory) / name
            if _executable(candidate):
                return candidate
    return None


def _install_dirs(kind: BackendKind, env: Mapping[str, str]) -> list[Path]:
    home = home_dir(env)
    dirs = [Path("/opt/homebrew/bin"), Path("/usr/local/bin"), home / ".local" / "bin"]
    prefix = env.get("NPM_CONFIG_PREFIX") or env.get("npm_config_prefix")
    if prefix:
        dirs.append(Path(prefix) / "bin")
    dirs.append(home / ".npm-global" / "bin")
    dirs += [home / own for own in backend_info(kind).install_dirs]
    return dirs


def find_cli(kind: BackendKind, env: Mapping[str, str]) -> CliLocation:
    """Where the CLI is (see the module docstring for the order)."""
    info = backend_info(kind)
    override = env.get(info.cli_env, "").strip()
    if override:
        path = Path(override).expanduser()
        if _executable(path):
            return CliLocation(path, info.cli_env)
        return CliLocation(None, None, f"{info.cli_env}={override} is not an executable file")
    found = _which(info.cli_name, env.get("PATH", ""))
    if found is not None:
        return CliLocation(found, "PATH")
    for directory in _install_dirs(kind, env):
        candidate = directory / info.cli_name
        if _executable(candidate):
            return CliLocation(candidate, str(directory))
    return CliLocation(
        None, None, f"`{info.cli_name}` is not on PATH nor in the usual install dirs"
    )


def not_installed_message(kind: BackendKind, location: CliLocation) -> str:
    """One sentence for a user whose CLI is missing: what was wrong and how to install it."""
    info = backend_info(kind)
    why = location.problem or "it was not found"
    return f"{info.display_name} is not installed ({why}): {info.install_hint}."


def cli_version(path: Path, env: Mapping[str, str], timeout_s: float = 10.0) -> str | None:
    """The first line of `<cli> --version` (None when it fails)."""
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (done.stdout or "").strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def login_status(kind: BackendKind, env: Mapping[str, str]) -> LoginStatus:
    return backend_info(kind).login(env)


def json_object(path: Path) -> dict[str, object] | None:
    """The JSON object in `path` (None when unreadable, not JSON or not an object)."""
    try:
        data = json.loads(read_regular(path, JSON_FILE_LIMIT))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
