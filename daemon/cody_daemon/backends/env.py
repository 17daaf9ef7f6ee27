"""Which environment variables of the CLI's environment matter, by name (for dry runs).

The CLI inherits the daemon's whole environment (the user's PATH, HOME, keys and proxy
settings are what make it work); a dry run lists only the names that affect it, never a
value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .base import BackendKind

__all__ = ["relevant_env_names"]

_COMMON: Final = ("HOME", "PATH", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE")
_PREFIXES: Final[dict[BackendKind, tuple[str, ...]]] = {
    "codex": ("CODEX_", "OPENAI_", "AZURE_OPENAI_", "RUST_LOG"),
    "claude": ("CLAUDE_", "ANTHROPIC_", "AWS_", "GOOGLE_", "VERTEX_", "DISABLE_", "IS_SANDBOX"),
}


def relevant_env_names(kind: BackendKind, env: Mapping[str, str]) -> list[str]:
    names = [
        name
        for name in env
        if name in _COMMON or name.upper().startswith(_PREFIXES[kind]) or name.endswith("_API_KEY")
    ]
    return sorted(names)
