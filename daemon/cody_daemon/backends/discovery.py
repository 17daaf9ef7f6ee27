"""Finding the agent CLIs, their versions, and whether they have a usable login.

Lookup order for each CLI (seed 003 `detectCli`, extended): the env override
(`CODEX_CLI_PATH` / `CLAUDE_CLI_PATH`; when set it must name an executable, else the CLI
counts as missing and the hint says why), then `PATH`, then the usual install dirs: Homebrew
(`/opt/homebrew/bin`, `/usr/local/bin`), `~/.local/bin`, npm's global prefix
(`$NPM_CONFIG_PREFIX/bin`, `~/.npm-global/bin`) and, for Claude Code, `~/.claude/local`.
Everything is read from the `env` mapping handed in (the daemon's environment), never from
`os.environ` directly, so tests and clients see the same answer.

Login detection only looks for the presence of credentials (env var names, login files); it
never reads a secret's value into a message.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ..core.safe_read import CONFIG_FILE_LIMIT, JSON_FILE_LIMIT, read_regular, read_regular_text
from .base import BackendKind

__all__ = [
    "CLI_NAMES",
    "DISPLAY_NAMES",
    "ENV_OVERRIDES",
    "INSTALL_HINTS",
    "LOGIN_HINTS",
    "CliLocation",
    "LoginStatus",
    "cli_version",
    "codex_bills_per_token",
    "codex_home",
    "codex_provider_env_key",
    "find_cli",
    "login_status",
    "not_installed_message",
]

CLI_NAMES: Final[dict[BackendKind, str]] = {"codex": "codex", "claude": "claude"}
DISPLAY_NAMES: Final[dict[BackendKind, str]] = {"codex": "Codex CLI", "claude": "Claude Code"}
ENV_OVERRIDES: Final[dict[BackendKind, str]] = {
    "codex": "CODEX_CLI_PATH",
    "claude": "CLAUDE_CLI_PATH",
}
INSTALL_HINTS: Final[dict[BackendKind, str]] = {
    "codex": "install it with `npm install -g @openai/codex` (or `brew install codex`), "
    "or set CODEX_CLI_PATH to the `codex` executable",
    "claude": "install it with `npm install -g @anthropic-ai/claude-code` "
    "(see https://docs.claude.com/en/docs/claude-code/setup), "
    "or set CLAUDE_CLI_PATH to the `claude` executable",
}
LOGIN_HINTS: Final[dict[BackendKind, str]] = {
    "codex": "run `codex login` (or set OPENAI_API_KEY)",
    "claude": "run `claude` and log in (/login), or set ANTHROPIC_API_KEY",
}


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


@dataclass(frozen=True, slots=True)
class LoginStatus:
    state: Literal["ok", "missing", "unknown"]
    source: str | None = None


def _home(env: Mapping[str, str]) -> Path:
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
    home = _home(env)
    dirs = [Path("/opt/homebrew/bin"), Path("/usr/local/bin"), home / ".local" / "bin"]
    prefix = env.get("NPM_CONFIG_PREFIX") or env.get("npm_config_prefix")
    if prefix:
        dirs.append(Path(prefix) / "bin")
    dirs.append(home / ".npm-global" / "bin")
    if kind == "claude":
        dirs.append(home / ".claude" / "local")
    return dirs


def find_cli(kind: BackendKind, env: Mapping[str, str]) -> CliLocation:
    """Where the CLI is (see the module docstring for the order)."""
    override_name = ENV_OVERRIDES[kind]
    override = env.get(override_name, "").strip()
    if override:
        path = Path(override).expanduser()
        if _executable(path):
            return CliLocation(path, override_name)
        return CliLocation(None, None, f"{override_name}={override} is not an executable file")
    name = CLI_NAMES[kind]
    found = _which(name, env.get("PATH", ""))
    if found is not None:
        return CliLocation(found, "PATH")
    for directory in _install_dirs(kind, env):
        candidate = directory / name
        if _executable(candidate):
            return CliLocation(candidate, str(directory))
    return CliLocation(None, None, f"`{name}` is not on PATH nor in the usual install dirs")


def not_installed_message(kind: BackendKind, location: CliLocation) -> str:
    """One sentence for a user whose CLI is missing: what was wrong and how to install it."""
    why = location.problem or "it was not found"
    return f"{DISPLAY_NAMES[kind]} is not installed ({why}): {INSTALL_HINTS[kind]}."


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
    return _codex_login(env) if kind == "codex" else _claude_login(env)


def codex_home(env: Mapping[str, str]) -> Path:
    """`$CODEX_HOME`, else `~/.codex` (HOME taken from `env`)."""
    return Path(env.get("CODEX_HOME") or _home(env) / ".codex")


def _codex_login(env: Mapping[str, str]) -> LoginStatus:
    home = codex_home(env)
    auth = _json_object(home / "auth.json")
    if auth is not None and (auth.get("tokens") or auth.get("OPENAI_API_KEY")):
        return LoginStatus("ok", str(home / "auth.json"))
    provider = _codex_custom_provider(home / "config.toml")
    if provider is not None:
        name, env_key = provider
        if not env_key:
            return LoginStatus("ok", f"model provider {name} (no key needed)")
        if env.get(env_key):
            return LoginStatus("ok", f"env {env_key} (model provider {name})")
        return LoginStatus("missing", f"env {env_key} (model provider {name}) is not set")
    if env.get("OPENAI_API_KEY"):
        return LoginStatus("ok", "env OPENAI_API_KEY")
    return LoginStatus("missing")


def codex_bills_per_token(env: Mapping[str, str]) -> bool:
    """Codex calls OpenAI with an API key (billed per token), not a ChatGPT plan login."""
    auth = _json_object(codex_home(env) / "auth.json")
    if auth is not None and auth.get("tokens"):
        return False
    return bool((auth or {}).get("OPENAI_API_KEY") or env.get("OPENAI_API_KEY"))


def codex_provider_env_key(env: Mapping[str, str]) -> str | None:
    """The variable the model provider selected in Codex's config.toml reads its key from."""
    provider = _codex_custom_provider(codex_home(env) / "config.toml")
    return provider[1] if provider is not None else None


def _codex_custom_provider(config: Path) -> tuple[str, str | None] | None:
    """(provider id, env_key) when config.toml selects a `[model_providers.<id>]` of its own."""
    try:
        data = tomllib.loads(read_regular_text(config, CONFIG_FILE_LIMIT))
    except (OSError, ValueError):
        return None
    name = data.get("model_provider")
    providers = data.get("model_providers")
    if not isinstance(name, str) or not isinstance(providers, dict):
        return None
    table = providers.get(name)
    if not isinstance(table, dict):
        return None
    env_key = table.get("env_key")
    return name, env_key if isinstance(env_key, str) and env_key else None


def _claude_login(env: Mapping[str, str]) -> LoginStatus:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        if env.get(name):
            return LoginStatus("ok", f"env {name}")
    for name in ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
        if env.get(name):
            return LoginStatus("ok", f"env {name}")
    config_dir = Path(env.get("CLAUDE_CONFIG_DIR") or _home(env) / ".claude")
    credentials = _json_object(config_dir / ".credentials.json")
    if credentials is not None and isinstance(credentials.get("claudeAiOauth"), dict):
        return LoginStatus("ok", str(config_dir / ".credentials.json"))
    if os.uname().sysname == "Darwin":
        return LoginStatus("unknown", "the macOS keychain (not inspected)")
    return LoginStatus("missing")


def _json_object(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(read_regular(path, JSON_FILE_LIMIT))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
