"""Where a warm daemon listens: the per-user unix socket `cody-daemon --listen` serves and
`cody-client` looks for (docs/architecture.md, "The warm daemon").

Both sides compute the path from the environment alone, so they agree without talking:

- `$CODY_DAEMON_SOCKET`, when set and not empty, is the path.
- Otherwise the socket lives in a per-user directory: `$XDG_RUNTIME_DIR/cody/` when
  `XDG_RUNTIME_DIR` names a private directory of this user (preferred: no one else can
  create anything there), else `<temp dir>/cody-<uid>/`, the temp dir being the first of
  `$TMPDIR`, `$TEMP`, `$TMP` that is an absolute, writable directory, else `/tmp`.
- Its name is `daemon-<hash>.sock`, the hash of the locations the daemon reads
  (cody_protocol.locations: `HOME`, config and data dirs, `CODEX_HOME`,
  `CLAUDE_CONFIG_DIR`): a daemon serves one set of them, so a client run with another
  `HOME`, `XDG_CONFIG_HOME` or `CODY_HOME` looks elsewhere and never reaches it (and the
  client checks the locations the daemon reports before it sends anything else).

`CODY_DAEMON_SOCKET=` (set but empty) tells clients not to use a warm daemon at all.

The daemon `cody-client exec` starts for itself (`exec_socket_path`, when no warm daemon
listens at the default path) lives in the same directory as `exec-<hash>.sock`: the hash
covers the locations *and the whole environment* but for variables that only describe the
shell or terminal (`EXEC_ENV_IGNORED`), and the installed Cody (the modification time of this
file, which every install rewrites). So a command run with another API key, `PATH`, proxy
or a reinstalled Cody never reaches a daemon started for another: it starts its own. It
exits after `CODY_EXEC_DAEMON_IDLE` seconds without a client (`EXEC_IDLE_DEFAULT_S`); `0`
makes `exec` start none (a daemon of its own for each command, as before).

`socket_dir_problem` says why the default directory cannot be used (another user created
`/tmp/cody-<uid>`, a symlink is in the way), for the daemon's refusal and the client's note.

Pure standard library, and only `os` and `pathlib` at import (`hashlib`, `stat` and `pwd`
when a path is computed): `cody-client exec` reads this before it starts its daemon, so it
costs the daemon's start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "RUNTIME_DIR_HINT",
    "SOCKET_ENV",
    "EXEC_ENV_IGNORED",
    "EXEC_IDLE_DEFAULT_S",
    "EXEC_IDLE_ENV",
    "client_socket_path",
    "default_socket_path",
    "exec_daemon_idle",
    "exec_socket_path",
    "socket_dir",
    "socket_dir_problem",
    "socket_name",
]

SOCKET_ENV = "CODY_DAEMON_SOCKET"
"""The socket path; set but empty: clients do not use a warm daemon."""


def socket_dir(env: Mapping[str, str]) -> Path:
    """The per-user directory the default socket lives in (not created here):
    `$XDG_RUNTIME_DIR/cody` when `XDG_RUNTIME_DIR` is a private directory of this user (as
    systemd's `/run/user/<uid>` is: no other user can create anything in it), else
    `<temp dir>/cody-<uid>`, which another user can take first in a shared `/tmp`
    (`socket_dir_problem` then says so)."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and _private_dir(runtime):
        return Path(runtime) / "cody"
    return Path(_temp_dir(env)) / f"cody-{os.getuid()}"


def _private_dir(path: str) -> bool:
    """An existing directory (not a symlink) of this user that no one else may write."""
    import stat

    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def socket_dir_problem(env: Mapping[str, str]) -> str | None:
    """Why the default socket directory cannot hold this user's warm daemon (someone else
    made it, or something else is in its place); None when it is usable or not there yet."""
    import stat

    directory = socket_dir(env)
    try:
        info = os.lstat(directory)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return f"{directory} is a symlink (a warm daemon's directory must be a real one)"
    if not stat.S_ISDIR(info.st_mode):
        return f"{directory} is not a directory"
    if info.st_uid != os.getuid():
        return (
            f"{directory} belongs to another user (uid {info.st_uid}), who can keep a warm "
            "daemon from starting there"
        )
    return None


RUNTIME_DIR_HINT = (
    "set XDG_RUNTIME_DIR to a private directory of yours (e.g. /run/user/<uid>), "
    "have the directory removed, or pass a socket path: cody-daemon --listen PATH and "
    "CODY_DAEMON_SOCKET=PATH for the clients"
)
"""What a user can do when `socket_dir_problem` answers."""


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
    return socket_dir(env) / socket_name(env)


def socket_name(env: Mapping[str, str]) -> str:
    """`daemon-<hash of the locations a daemon with env reads>.sock`."""
    import hashlib

    from .locations import daemon_locations

    locations = daemon_locations(env)
    key = "\0".join(f"{name}={value}" for name, value in sorted(locations.items()))
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
    return f"daemon-{digest[:16]}.sock"


def client_socket_path(env: Mapping[str, str]) -> Path | None:
    """Where a client looks for a warm daemon; None when `CODY_DAEMON_SOCKET=` opts out."""
    if SOCKET_ENV in env and not env[SOCKET_ENV]:
        return None
    return default_socket_path(env)


EXEC_IDLE_ENV = "CODY_EXEC_DAEMON_IDLE"
EXEC_IDLE_DEFAULT_S = 300.0
"""How long the daemon `exec` starts waits for another client before it exits."""
EXEC_ENV_IGNORED = frozenset(
    {
        "_", "PWD", "OLDPWD", "SHLVL", "TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION",
        "TERM_SESSION_ID", "COLORTERM", "COLUMNS", "LINES", "TMUX", "TMUX_PANE", "STY",
        "WINDOW", "WINDOWID", "SSH_TTY", "SSH_CONNECTION", "SSH_CLIENT", "PS1", "PS2",
        "PROMPT_COMMAND", "HISTFILE", "HISTSIZE", "HISTCONTROL", "LS_COLORS", "NO_COLOR",
        "FORCE_COLOR", "CLICOLOR", "MAIL", "LOGNAME_SESSION", EXEC_IDLE_ENV,
    }
)  # fmt: skip
"""Variables that describe the shell or terminal a command runs in, not what a daemon does
(a daemon that `exec` starts never has a terminal): they do not name its socket."""


def exec_daemon_idle(env: Mapping[str, str]) -> float:
    """Seconds the daemon `exec` starts stays without a client; 0: `exec` starts none (also
    for a value that is not a number >= 0)."""
    raw = env.get(EXEC_IDLE_ENV, "")
    if not raw:
        return EXEC_IDLE_DEFAULT_S
    try:
        value = float(raw)
    except ValueError:
        return 0.0
    return value if 0 <= value < float("inf") else 0.0  # NaN compares false: 0


def exec_socket_path(env: Mapping[str, str]) -> Path | None:
    """The socket of the daemon `exec` starts for this environment (see the module doc);
    None when the user chose a socket (`CODY_DAEMON_SOCKET`, set or empty) or turned it off."""
    if SOCKET_ENV in env or exec_daemon_idle(env) <= 0:
        return None
    import hashlib

    from .locations import daemon_locations

    parts = [f"{name}={value}" for name, value in sorted(daemon_locations(env).items())]
    parts += [
        f"env:{name}={value}" for name, value in sorted(env.items()) if name not in EXEC_ENV_IGNORED
    ]
    try:
        installed = os.stat(__file__).st_mtime_ns
    except OSError:
        installed = 0
    parts.append(f"installed={__file__}:{installed}")
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
    return socket_dir(env) / f"exec-{digest[:16]}.sock"
