"""What Cody reads from the Codex CLI's own files: where its home is, whether it has a login,
how it is billed, and which variable its configured model provider reads a key from.

Invariants: `CODEX_HOME` and `HOME` are taken from the `env` mapping handed in (the daemon's
environment), never from `os.environ`; a login file is only looked at for which kind of login
it holds, and no value from it ever reaches a message.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

from ..core.safe_read import CONFIG_FILE_LIMIT, read_regular_text
from .discovery import home_dir, json_object
from .info import LoginStatus

__all__ = ["codex_bills_per_token", "codex_home", "codex_login", "codex_provider_env_key"]


def codex_home(env: Mapping[str, str]) -> Path:
    """`$CODEX_HOME`, else `~/.codex` (HOME taken from `env`)."""
    return Path(env.get("CODEX_HOME") or home_dir(env) / ".codex")


def codex_login(env: Mapping[str, str]) -> LoginStatus:
    home = codex_home(env)
    auth = json_object(home / "auth.json")
    if auth is not None and (auth.get("tokens") or auth.get("OPENAI_API_KEY")):
        return LoginStatus("ok", str(home / "auth.json"))
    provider = _custom_provider(home / "config.toml")
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
    auth = json_object(codex_home(env) / "auth.json")
    if auth is not None and auth.get("tokens"):
        return False
    return bool((auth or {}).get("OPENAI_API_KEY") or env.get("OPENAI_API_KEY"))


def codex_provider_env_key(env: Mapping[str, str]) -> str | None:
    """The variable the model provider selected in Codex's config.toml reads its key from."""
    provider = _custom_provider(codex_home(env) / "config.toml")
    return provider[1] if provider is not None else None


def _custom_provider(config: Path) -> tuple[str, str | None] | None:
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
