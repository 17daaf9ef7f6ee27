"""The web listener's capability token and address, shared by `cody-daemon --listen ws://...`
and `cody-client web` (docs/web.md, "Security").

Both live in `<data dir>/web/` (a directory of this user's, 0700, never a symlink):

- `token`: 32 random bytes as URL-safe base64 (43 characters), mode 0600. Every WebSocket
  must present it (`?token=` or `Authorization: Bearer`). It is created atomically: written
  to a temp file opened 0600 with `O_EXCL | O_NOFOLLOW` in the private directory, synced,
  then linked (first creation: two starters agree on one token) or renamed (a new token)
  into place, so it is never readable by anyone else, never half-written, even briefly.
  A token file that is not a regular file of ours with mode 0600 and the right shape is
  never used: it is replaced.
- `listening.json`: where a daemon serves the page (`{"url", "pid"}`), written by the daemon
  when it listens and removed when it stops; `cody-client web` reads it to open the page.
  It holds no secret.

Pure standard library (the client reads it without importing the daemon).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

__all__ = [
    "TOKEN_BYTES",
    "WebAccessError",
    "ensure_token",
    "new_token",
    "page_url",
    "read_record",
    "read_token",
    "remove_record",
    "token_path",
    "valid_token",
    "web_dir",
    "write_record",
]

TOKEN_BYTES = 32
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")
_RECORD = "listening.json"


class WebAccessError(Exception):
    """The web directory or its token cannot be used; the message says why."""


def web_dir(data_dir: Path) -> Path:
    return data_dir / "web"


def token_path(data_dir: Path) -> Path:
    return web_dir(data_dir) / "token"


def valid_token(text: str) -> bool:
    """A token of the shape `ensure_token` makes (nothing else is ever accepted)."""
    return _TOKEN_SHAPE.fullmatch(text) is not None


def _private_dir(data_dir: Path) -> Path:
    """`<data dir>/web`, created 0700; refused unless it is a real directory of ours."""
    directory = web_dir(data_dir)
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError as exc:
        raise WebAccessError(f"cannot create {directory}: {exc.strerror or exc}") from None
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise WebAccessError(f"{directory} is not a directory (a symlink or a file is in the way)")
    if info.st_uid != os.getuid():
        raise WebAccessError(f"{directory} belongs to another user (uid {info.st_uid})")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(directory, 0o700, follow_symlinks=False)
    return directory


def read_token(data_dir: Path) -> str | None:
    """The token, if a usable one is there: a regular file (not a symlink) of ours, mode
    0600, holding one token. None otherwise (missing, or not to be trusted)."""
    path = token_path(data_dir)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.getuid()
            or stat.S_IMODE(info.st_mode) != 0o600
            or info.st_size > 256
        ):
            return None
        text = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return text if valid_token(text) else None


def _write_temp(directory: Path, token: str) -> Path:
    temp = directory / f".token.{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask: never more, never less
        os.write(fd, token.encode("ascii") + b"\n")
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temp


def ensure_token(data_dir: Path) -> str:
    """The token, created when there is no usable one (see the module docstring)."""
    existing = read_token(data_dir)
    if existing is not None:
        return existing
    directory = _private_dir(data_dir)
    path = token_path(data_dir)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        temp = _write_temp(directory, token)
    except OSError as exc:
        raise WebAccessError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        try:
            os.link(temp, path)  # first creation: whoever links first wins
        except FileExistsError:
            theirs = read_token(data_dir)
            if theirs is not None:
                return theirs
            os.replace(temp, path)  # an unusable file was there: replaced
    except OSError as exc:
        raise WebAccessError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
    return token


def new_token(data_dir: Path) -> str:
    """Replace the token with a new one (the old one stops working at once)."""
    directory = _private_dir(data_dir)
    path = token_path(data_dir)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        temp = _write_temp(directory, token)
        os.replace(temp, path)
    except OSError as exc:
        raise WebAccessError(f"cannot write {path}: {exc.strerror or exc}") from None
    return token


def page_url(base_url: str, token: str) -> str:
    """The page's address with the token in the fragment (never sent to the server, so it
    reaches no log): `http://127.0.0.1:PORT/#token=...`."""
    return f"{base_url.rstrip('/')}/#token={token}"


def write_record(data_dir: Path, url: str, pid: int) -> Path:
    """Say where this daemon serves the page (replaced atomically)."""
    directory = _private_dir(data_dir)
    path = directory / _RECORD
    temp = directory / f".{_RECORD}.{secrets.token_hex(8)}.tmp"
    body = json.dumps({"url": url, "pid": pid}).encode()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, body)
    finally:
        os.close(fd)
    os.replace(temp, path)
    return path


def read_record(data_dir: Path) -> dict[str, Any] | None:
    """`{"url": str, "pid": int}` of the daemon that last said it serves the page, if any."""
    path = web_dir(data_dir) / _RECORD
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_size > 4096:
            return None
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("url"), str)
        or not isinstance(record.get("pid"), int)
        or not re.fullmatch(r"http://[0-9A-Za-z.:\[\]-]+/", record["url"])
    ):
        return None
    return record


def remove_record(data_dir: Path, pid: int) -> None:
    """Remove the record if it is still this daemon's."""
    record = read_record(data_dir)
    if record is not None and record.get("pid") == pid:
        with contextlib.suppress(OSError):
            (web_dir(data_dir) / _RECORD).unlink()
