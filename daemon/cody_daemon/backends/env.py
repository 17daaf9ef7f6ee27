"""The environment a backend CLI runs with, and which of its names matter (for dry runs).

Invariants (`cli_environment`):
- the CLI gets the daemon's environment minus every credential Cody withholds from its own
  `exec` (`SecretGuard.child_environment`: names with KEY, TOKEN, SECRET, PASSWORD...,
  configured `env_key`s, values holding a known secret), plus back only the variables the
  CLI itself reads to reach its model (`BackendInfo.credentials`, and for Codex the
  `env_key` of the model provider its config.toml selects). So `GITHUB_TOKEN`, `*_PASSWORD`
  and the rest never reach the CLI or anything it runs;
- what the CLI keeps for itself is kept from the commands it runs where the CLI allows it:
  the Codex CLI gets `-c shell_environment_policy.exclude=[...]` naming them (added to the
  user's own list; 0.169 passes every variable to its commands otherwise); Claude Code
  passes its environment to its Bash tool, so its own credential reaches the commands it
  runs (their output is redacted by the engine before it is stored or shown, but Claude
  Code's model sees what they printed: docs/backends.md);
- a CLI's `BackendInfo.env_set` is set and its `env_dropped` removed: Claude Code gets
  `CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS=1` (otherwise it runs `git status`, `git log` and
  `git config` in the workspace at every turn to describe the repository to its model, and a
  repository's own git settings can make those run a program), and never
  `CLAUDE_CODE_SAFE_MODE` / `CLAUDE_CODE_SIMPLE`, which would drop the PreToolUse hook that
  sends every tool call to Cody (backends/claude_code.py).

`relevant_env_names` lists only names, never a value.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ..core.safe_read import CONFIG_FILE_LIMIT, read_regular_text
from ..policy.secrets import SecretGuard
from .info import BackendKind, backend_info

__all__ = ["cli_credentials", "cli_environment", "codex_command_env_args", "relevant_env_names"]

_COMMON: Final = ("HOME", "PATH", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE")


def cli_credentials(
    kind: BackendKind, env: Mapping[str, str], provider_env_key: str | None = None
) -> tuple[str, ...]:
    """The credential variables of `env` that `kind`'s CLI reads itself (sorted).

    `provider_env_key`: the variable the Codex CLI's configured model provider reads its key
    from (its `env_key`)."""
    needed = set(backend_info(kind).credentials)
    if provider_env_key:
        needed.add(provider_env_key)
    return tuple(sorted(name for name in needed if name in env))


def cli_environment(
    kind: BackendKind,
    env: Mapping[str, str],
    secrets: SecretGuard,
    *,
    own_credentials: tuple[str, ...] = (),
) -> dict[str, str]:
    """The environment `kind`'s CLI is started with (see the module docstring):
    `own_credentials` (`cli_credentials`) are kept, every other credential withheld."""
    result = secrets.child_environment(env)
    for name in own_credentials:
        if name in env:
            result[name] = env[name]
    info = backend_info(kind)
    for name in info.env_dropped:
        result.pop(name, None)
    result.update(info.env_set)
    return result


def relevant_env_names(kind: BackendKind, env: Mapping[str, str]) -> list[str]:
    prefixes = backend_info(kind).env_prefixes
    names = [
        name
        for name in env
        if name in _COMMON or name.upper().startswith(prefixes) or name.endswith("_API_KEY")
    ]
    return sorted(names)


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def codex_command_env_args(own_credentials: tuple[str, ...], codex_config: Path) -> list[str]:
    """`-c shell_environment_policy.exclude=[...]`: the user's own exclusions (from Codex's
    config.toml) and the CLI's credentials, so that the commands Codex runs do not get them."""
    names = [name for name in own_credentials if _NAME.match(name)]
    if not names:
        return []
    try:
        data = tomllib.loads(read_regular_text(codex_config, CONFIG_FILE_LIMIT))
    except (OSError, ValueError):
        data = {}
    policy = data.get("shell_environment_policy")
    existing = policy.get("exclude") if isinstance(policy, dict) else None
    patterns = [p for p in existing if isinstance(p, str)] if isinstance(existing, list) else []
    value = json.dumps([*patterns, *names])  # a JSON list of strings is a TOML array
    return ["-c", f"shell_environment_policy.exclude={value}"]
