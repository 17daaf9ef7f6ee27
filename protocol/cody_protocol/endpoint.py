"""Where a warm daemon listens: the per-user unix socket `cody-daemon --listen` serves and
`cody-client` looks for (docs/architecture.md, "The warm daemon").

Both sides compute the path from the environment alone, so they agree without talking:

- `$CODY_DAEMON_SOCKET`, when set and not empty, is the path.
- Otherwise the socket lives in a per-user directory: `$XDG_RUNTIME_DIR/cody/` when
  `XDG_RUNTIME_DIR` is set, else `<temp dir>/cody-<uid>/`, the temp dir being the first
  of `$TMPDIR`, `$TEMP`, `$TMP` that is an absolute, writable directory, else `/tmp`.
- Its name is `daemon.sock`, or `daemon-<hash>.sock` when `CODY_HOME` is set (the hash of
  its absolute path): a daemon serves one data directory, so a client with another
  `CODY_HOME` never reaches it.

`CODY_DAEMON_SOCKET=` (set but empty) tells clients not to use a warm daemon at all.

Pure standard library, and only `os` and `pathlib` at import: `cody-client exec` reads this
before it starts its daemon, so it costs the daemon's start (hashlib loads when `CODY_HOME`
is set).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["SOCKET_ENV", "client_socket_path", "default_socket_path", "socket_dir"]

SOCKET_ENV = "CODY_DAEMON_SOCKET"
"""The socket path; set but empty: clients do not use a warm daemon."""


def socket_dir(env: Mapping[str, str]) -> Path:
    """The per-user directory the default socket lives in (not created here)."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "cody"
    return Path(_temp_dir(env)) / f"cody-{os.getuid()}"


def _temp_dir(env: Mapping[str, str]) -> str:
    """The first of `$TMPDIR`, `$TEMP`, `$TMP` that is an absolute directory this user may
    write, else `/tmp` (as tempfile would choose, read from `env` and without importing
    tempfile)."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = env.get(name, "")
        if value and os.path.isabs(value) and os.access(value, os.W_OK | os.X_OK):
            return value
    return "/tmp"


def default_socket_path(env: Mapping[str, str]) -> Path:
    """`$CODY_DAEMON_SOCKET` when set and not empty, else the per-user default."""
    explicit = env.get(SOCKET_ENV, "")
    if explicit:
        return Path(explicit).expanduser().absolute()
    home = env.get("CODY_HOME", "")
    if home:
        import hashlib

        key = str(Path(home).expanduser().absolute()).encode("utf-8", "surrogateescape")
        name = f"daemon-{hashlib.sha256(key).hexdigest()[:12]}.sock"
    else:
        name = "daemon.sock"
    return socket_dir(env) / name


def client_socket_path(env: Mapping[str, str]) -> Path | None:
    """Where a client looks for a warm daemon; None when `CODY_DAEMON_SOCKET=` opts out."""
    if SOCKET_ENV in env and not env[SOCKET_ENV]:
        return None
    return default_socket_path(env)
