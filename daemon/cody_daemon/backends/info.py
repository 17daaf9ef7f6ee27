"""The backends Cody knows, and the facts each one carries about its CLI (`BackendInfo`).

Each backend module declares one `INFO` (its CLI's name and install hints, where it may be
installed, how its login is found, which environment variables it reads and needs) and one
`BACKEND` (its `AgentBackend` class). Everything that differs per CLI outside the backend
itself (discovery.py, env.py, failures.py, mapping.py, select.py, engine/agents.py) reads it
from here; nothing else lists the backends.

Adding a backend: its module (an `AgentBackend` subclass, `INFO`, `BACKEND`), one entry in
`_MODULES`, and its name in `BackendKind` and in `cody_protocol.settings.Backend` (the wire
value). The backend modules are imported on first use only (a turn, `_cody/agents/list`,
`session/new` of such a session), never at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, cast, get_args

if TYPE_CHECKING:
    from .base import AgentBackend

__all__ = [
    "KINDS",
    "BackendInfo",
    "BackendKind",
    "LoginStatus",
    "backend_class",
    "backend_info",
]

BackendKind = Literal["codex", "claude"]
KINDS: Final[tuple[BackendKind, ...]] = get_args(BackendKind)

_MODULES: Final[dict[BackendKind, str]] = {
    "codex": "codex_app_server",
    "claude": "claude_code",
}


@dataclass(frozen=True, slots=True)
class LoginStatus:
    state: Literal["ok", "missing", "unknown"]
    source: str | None = None
    """Where the login was found (a file, an env var name), never its value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendInfo:
    kind: BackendKind
    display_name: str
    """`Codex CLI`: in titles and at the start of a sentence."""
    subject: str
    """`the Codex CLI`: inside a sentence."""
    cli_name: str
    """The executable's name on PATH."""
    cli_env: str
    """The variable that names the executable (`CODEX_CLI_PATH`), looked at first."""
    npm_package: str
    install_note: str
    """Said after the npm command in the install hint (another way, or where the docs are)."""
    install_dirs: tuple[str, ...] = ()
    """Directories under HOME it installs itself into, besides the usual ones (discovery.py)."""
    login_hint: str
    """What to do when there is no login."""
    login: Callable[[Mapping[str, str]], LoginStatus]
    """Whether a login or key is there (names and files only, never a value)."""
    env_prefixes: tuple[str, ...]
    """Variables that matter to it (shown by name in a dry run)."""
    credentials: frozenset[str]
    """Credential variables it reads itself to reach its model (kept in its environment)."""
    provider_env_key: Callable[[Mapping[str, str]], str | None] | None = None
    """The variable its own configured model provider reads a key from, when it has one."""
    env_set: Mapping[str, str] = field(default_factory=dict)
    """Variables set for it whatever the daemon's environment says (env.py says why)."""
    env_dropped: tuple[str, ...] = ()
    """Variables never passed to it (env.py says why)."""
    enforcement: str
    """What the backend enforces and what not (a dry run's note; docs/backends.md)."""

    @property
    def install_hint(self) -> str:
        return (
            f"install it with `npm install -g {self.npm_package}` {self.install_note}, "
            f"or set {self.cli_env} to the `{self.cli_name}` executable"
        )


def _module(kind: BackendKind) -> object:
    return importlib.import_module(f"{__package__}.{_MODULES[kind]}")


def backend_info(kind: BackendKind) -> BackendInfo:
    """The facts of the backend `kind` (imports its module on first use)."""
    return cast(BackendInfo, getattr(_module(kind), "INFO"))  # noqa: B009


def backend_class(kind: BackendKind) -> type[AgentBackend]:
    return cast("type[AgentBackend]", getattr(_module(kind), "BACKEND"))  # noqa: B009
