"""Keeping credentials away from tools: which variables, files and values are secret.

A `SecretGuard` is built per turn by the engine (engine/secrets.py) from everything the daemon
knows to be a credential. Invariants:

- `child_environment` never passes a withheld variable: one whose name contains KEY, SECRET,
  TOKEN, PASSWORD, PASSWD or CREDENTIAL, one the configuration names as a credential (a
  provider's or a tool's `env_key`, an MCP server's `bearer_token_env_var`, whatever the name),
  or one whose value contains a known secret.
- `is_login_file` is True for the login files of the Codex CLI and Claude Code (and anything
  that is the same file: a symlink or a hard link to it); the engine refuses file tools on them.
- `redact` replaces every run of 8 or more characters that also occurs in a known secret (so a
  secret cut by truncation, or printed in pieces of 8+ characters, is caught too) with
  `[REDACTED]`. Known secrets: the values of withheld variables, the token-like strings of the
  login files (re-read whenever a file changes, so a refreshed token is known at once), and
  the extra values the engine adds (configured headers, MCP server environments). Values
  shorter than 8 characters are not secrets to this module (they cannot be told from text).

Redaction only recognises the literal characters: a tool that reads a login file and prints
it transformed (base64, reversed, in 7-character pieces) is not caught. That is why the
variables are withheld, the login files are refused to file tools and hidden from sandboxed
commands, and redaction is the last line, not the only one.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..core.safe_read import read_regular

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SecretGuard",
    "SecretSources",
    "looks_like_token",
    "secret_name",
]

MIN_SECRET_CHARS: Final = 8
"""Shortest value treated as a secret, and the length of the runs `redact` looks for."""
REDACTED: Final = "[REDACTED]"
_NAME_MARKERS: Final = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9._~+/=-]+$")
_MAX_LOGIN_FILE_BYTES: Final = 1024 * 1024


def secret_name(name: str) -> bool:
    """A variable or header name that says its value is a credential."""
    upper = name.upper()
    return any(marker in upper for marker in _NAME_MARKERS) or upper in (
        "AUTHORIZATION",
        "PROXY-AUTHORIZATION",
        "COOKIE",
    )


def looks_like_token(value: str, *, min_chars: int = 16) -> bool:
    """A long run of token characters with letters and digits (an API key, not a word or path)."""
    return (
        len(value) >= min_chars
        and _TOKEN_CHARS.match(value) is not None
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretSources:
    """What the configuration says is secret (the engine fills this in)."""

    env_names: frozenset[str] = frozenset()
    """Variables that hold credentials whatever their names (configured `env_key`s, ...)."""
    values: tuple[str, ...] = ()
    """Further secret values (configured headers, MCP server environments, ...)."""
    login_files: tuple[Path, ...] = ()
    """Files that hold logins (`auth.json`, `.credentials.json`), whether they exist or not."""


@dataclass(slots=True)
class _LoginFile:
    path: Path
    stamp: tuple[int, int, int, int] | None = None
    """(device, inode, mtime_ns, size) when last read."""
    values: tuple[str, ...] = ()


@dataclass(slots=True)
class _Redactor:
    grams: frozenset[str] = frozenset()

    @classmethod
    def of(cls, values: Iterable[str]) -> _Redactor:
        n = MIN_SECRET_CHARS
        return cls(frozenset(v[i : i + n] for v in values for i in range(len(v) - n + 1)))

    def redact(self, text: str) -> str:
        grams = self.grams
        n = MIN_SECRET_CHARS
        if not grams or len(text) < n:
            return text
        pieces: list[str] = []
        done = 0  # text[:done] is in pieces
        start = end = -1  # the current secret run
        for i in range(len(text) - n + 1):
            if text[i : i + n] in grams:
                if i > end:  # a new run (runs that touch or overlap merge)
                    if end >= 0:
                        pieces += [text[done:start], REDACTED]
                        done = end
                    start = i
                end = i + n
        if end < 0:
            return text
        pieces += [text[done:start], REDACTED, text[end:]]
        return "".join(pieces)


@dataclass(slots=True)
class SecretGuard:
    """The secrets of one turn; see the module docstring."""

    env: Mapping[str, str] = field(default_factory=dict)
    """The daemon's environment."""
    sources: SecretSources = field(default_factory=SecretSources)
    _logins: list[_LoginFile] = field(default_factory=list)
    _redactor: _Redactor | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for path in self.sources.login_files:
            key = os.path.abspath(path)
            if key not in seen:
                seen.add(key)
                self._logins.append(_LoginFile(Path(key)))

    # -- environment --------------------------------------------------------------------

    def child_environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """`base` (default: the daemon's environment) minus every withheld variable."""
        source = self.env if base is None else base
        secrets = self.secrets()
        return {
            name: value
            for name, value in source.items()
            if not (
                secret_name(name)
                or name in self.sources.env_names
                or any(secret in value for secret in secrets)
            )
        }

    # -- login files --------------------------------------------------------------------

    def is_login_file(self, path: Path) -> bool:
        """`path` is a login file, a symlink to one or another name (hard link) of one."""
        real = os.path.realpath(path)
        try:
            info = os.stat(real)
        except OSError:
            info = None
        for login in self._logins:
            if real == os.path.realpath(login.path):
                return True
            if info is not None:
                try:
                    other = os.stat(login.path)
                except OSError:
                    continue
                if (info.st_dev, info.st_ino) == (other.st_dev, other.st_ino):
                    return True
        return False

    def login_file_below(self, root: Path) -> Path | None:
        """A login file a walk of `root` would read: below it, with no hidden (dot) name on
        the way (the file tools' walks skip hidden entries), else None."""
        real_root = Path(os.path.realpath(root))
        for login in self._logins:
            real = Path(os.path.realpath(login.path))
            if not real.exists() or real_root not in real.parents:
                continue
            relative = real.relative_to(real_root)
            if not any(part.startswith(".") for part in relative.parts):
                return login.path
        return None

    # -- redaction ----------------------------------------------------------------------

    def secrets(self) -> tuple[str, ...]:
        """Every known secret value now (login files re-read when they changed)."""
        self._refresh_logins()
        values = [*self._static_secrets()]
        for login in self._logins:
            values.extend(login.values)
        return tuple(dict.fromkeys(values))

    def redact(self, text: str) -> str:
        if self._refresh_logins() or self._redactor is None:
            self._redactor = _Redactor.of(self.secrets())
        return self._redactor.redact(text)

    def redact_json(self, value: Any) -> Any:
        """`value` (JSON-like: dicts, lists, strings...) with every string redacted."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {key: self.redact_json(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_json(item) for item in value]
        return value

    # -- internals ----------------------------------------------------------------------

    def _static_secrets(self) -> list[str]:
        values = [
            value
            for name, value in self.env.items()
            if (secret_name(name) or name in self.sources.env_names)
            and len(value.strip()) >= MIN_SECRET_CHARS
        ]
        values += [v for v in self.sources.values if len(v) >= MIN_SECRET_CHARS]
        return [v.strip() for v in values]

    def _refresh_logins(self) -> bool:
        """Re-read the login files that changed; True when any did."""
        changed = False
        for login in self._logins:
            try:
                info = os.stat(login.path)
                stamp: tuple[int, int, int, int] | None = (
                    info.st_dev,
                    info.st_ino,
                    info.st_mtime_ns,
                    info.st_size,
                )
            except OSError:
                stamp = None
            if stamp == login.stamp:
                continue
            login.stamp = stamp
            login.values = () if stamp is None else _login_values(login.path)
            changed = True
        return changed


def _login_values(path: Path) -> tuple[str, ...]:
    """The token-like strings of a JSON login file (every string leaf of 8+ token characters:
    access, refresh and id tokens, API keys, account ids); () when it cannot be read."""
    try:
        data = json.loads(read_regular(path, _MAX_LOGIN_FILE_BYTES))
    except (OSError, ValueError):
        return ()
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            if len(node) >= MIN_SECRET_CHARS and _TOKEN_CHARS.match(node):
                found.append(node)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return tuple(found)
