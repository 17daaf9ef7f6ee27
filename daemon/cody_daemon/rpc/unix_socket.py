"""The warm daemon's unix socket (docs/architecture.md, "The warm daemon"): where it is, that
it is ours, and who may connect.

Invariants:
- The socket is mode 0600 (created under umask 0177, checked with lstat, never chmod-ed by
  path) and the default directory (endpoint.socket_dir) is 0700 and ours.
- A connection from another uid (SO_PEERCRED) is served nothing (`peer_allowed`).
- One daemon per socket: a live daemon on the path makes a second one refuse to start; a
  stale socket file (nobody listening) is replaced; anything else at the path is left alone.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import struct
from pathlib import Path
from typing import Any

from cody_protocol.endpoint import (
    RUNTIME_DIR_HINT,
    SOCKET_ENV,
    default_socket_path,
    exec_socket_path,
)

__all__ = [
    "MAX_SOCKET_PATH",
    "ListenError",
    "ListenTarget",
    "bind_socket",
    "peer_allowed",
    "peer_credentials",
]

logger = logging.getLogger(__name__)

MAX_SOCKET_PATH = 107
"""sun_path holds 108 bytes on Linux, one of them the terminating NUL."""


class ListenError(Exception):
    """The daemon cannot listen where asked; the message says why and what to do."""


class ListenTarget:
    """Where to listen, and whether the directory is Cody's own per-user one (then it must
    be ours and is kept 0700) or one the user named (then only the socket's mode is ours)."""

    def __init__(self, path: Path, *, private_dir: bool) -> None:
        self.path = path
        self.private_dir = private_dir

    @classmethod
    def resolve(
        cls, requested: str, env: dict[str, str], *, exec_socket: bool = False
    ) -> ListenTarget:
        """`exec_socket`: the socket `cody-client exec` looks for (cody_client/exec_daemon.py),
        in the same per-user directory as the default one."""
        if exec_socket:
            path = exec_socket_path(env)
            if path is None or requested:
                raise ListenError(
                    "--exec-socket takes no PATH and needs CODY_DAEMON_SOCKET unset and "
                    "CODY_EXEC_DAEMON_IDLE not 0"
                )
            return cls(path, private_dir=True)
        if requested:
            return cls(Path(requested).expanduser().absolute(), private_dir=False)
        explicit = bool(env.get(SOCKET_ENV))
        return cls(default_socket_path(env), private_dir=not explicit)


# -- peers ----------------------------------------------------------------------------------


def peer_allowed(peer_uid: int, own_uid: int) -> bool:
    """Only the daemon's own user may talk to it (root included: no exception for root)."""
    return peer_uid == own_uid


def peer_credentials(sock: Any) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a unix socket; None if unknown."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid, uid


# -- the socket file ------------------------------------------------------------------------


def _own_directory(directory: Path, *, private: bool) -> None:
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass  # checked below, without following a symlink (a dangling one included)
    except OSError as exc:
        raise ListenError(f"cannot create {directory}: {exc.strerror or exc}") from None
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise ListenError(
            f"{directory} is not a directory (a symlink or a file is in the way); "
            + (RUNTIME_DIR_HINT if private else "pass another path with --listen PATH")
        )
    if not private:
        return
    if info.st_uid != os.getuid():
        raise ListenError(
            f"{directory} belongs to another user (uid {info.st_uid}), who may have made it "
            "to keep this daemon from starting; clients start a daemon of their own meanwhile. "
            f"To listen: {RUNTIME_DIR_HINT}"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        directory.chmod(0o700)  # ours and not a symlink (lstat above): no one else can swap it


def _listening_pid(path: Path) -> int | None | bool:
    """The pid of a daemon answering on `path` (True: alive, pid unknown); False: stale."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError as exc:
        raise ListenError(f"cannot check the socket {path}: {exc.strerror or exc}") from None
    else:
        credentials = peer_credentials(probe)
        return credentials[0] if credentials is not None else True
    finally:
        probe.close()


def bind_socket(target: ListenTarget) -> socket.socket:
    """A listening-ready socket at `target.path`, mode 0600 (see the module invariants)."""
    path = target.path
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ListenError(
            f"the socket path is too long for a unix socket ({len(os.fsencode(path))} bytes, "
            f"at most {MAX_SOCKET_PATH}): {path}; pass a shorter one with --listen PATH"
        )
    _own_directory(path.parent, private=target.private_dir)
    try:
        info = path.lstat()
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(info.st_mode):
            raise ListenError(f"{path} exists and is not a socket; remove it or pick another path")
        alive = _listening_pid(path)
        if alive is not False:
            who = f" (pid {alive})" if alive is not True else ""
            raise ListenError(
                f"another Cody daemon{who} is already listening on {path}; "
                "use it, stop it, or pass another path with --listen PATH"
            )
        try:
            path.unlink()
        except OSError as exc:
            raise ListenError(
                f"cannot replace the stale socket {path}: {exc.strerror or exc} "
                f"(owned by uid {info.st_uid}); remove it or pass another path with --listen PATH"
            ) from None
        logger.warning("replaced a stale socket file at %s (its daemon is gone)", path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)  # the socket is never, even briefly, open to others
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(previous)
    # No chmod by path: it follows a symlink that someone with write access to a directory
    # the user named could swap in after bind. The umask made the socket 0600; check it.
    try:
        created: os.stat_result | None = path.lstat()
    except OSError:
        created = None
    if (
        created is None
        or not stat.S_ISSOCK(created.st_mode)
        or created.st_uid != os.getuid()
        or stat.S_IMODE(created.st_mode) & 0o077
    ):
        sock.close()
        raise ListenError(f"{path} was replaced right after it was created; not listening there")
    sock.setblocking(False)
    return sock
