"""Adding and removing permission rules in the user's `config.toml` (docs/protocol.md
"Approvals": `allow_project`, `_cody/permissions/remove`).

Invariants:
- The file keeps everything else as written: comments, order, quoting, blank lines (tomlkit
  round-trips the document; only the one array changes).
- The new file replaces the old one atomically (core/atomic_write.py), keeping its mode, so
  a reader (another daemon) sees the old or the new file, never half of one.
- Two daemons adding rules at once do not lose either: the read-modify-write happens under
  an exclusive `flock` of `<config dir>/.config.toml.lock`.
- A file that is not valid TOML, or whose tables have another shape than expected (`allow`
  not a list), is left untouched and the caller gets `RuleWriteError` saying why.
- Adding a rule that is already there changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.atomic_write import replace_file

__all__ = ["RuleWriteError", "add_project_rules", "remove_rule"]

_MAX_CONFIG_BYTES = 4 * 1024 * 1024


class RuleWriteError(Exception):
    """The rule could not be written; the message says why (the file is unchanged)."""


@contextlib.contextmanager
def _locked(config_file: Path) -> Iterator[None]:
    config_file.parent.mkdir(parents=True, exist_ok=True)
    lock = config_file.parent / f".{config_file.name}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _edit(config_file: Path, change: Callable[[Any], bool]) -> bool:
    """Apply `change` to the parsed document and save it when it returns True."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        with _locked(config_file):
            try:
                info = config_file.stat()
                if info.st_size > _MAX_CONFIG_BYTES:
                    raise RuleWriteError(f"{config_file} is larger than {_MAX_CONFIG_BYTES} bytes")
                text = config_file.read_text(encoding="utf-8")
                mode: int | None = info.st_mode & 0o7777
            except FileNotFoundError:
                text, mode = "", None
            try:
                document = tomlkit.parse(text)
            except TOMLKitError as exc:
                raise RuleWriteError(f"{config_file} is not valid TOML: {exc}") from None
            try:
                if not change(document):
                    return False
            except (TypeError, KeyError, ValueError) as exc:
                raise RuleWriteError(f"{config_file}: {exc}") from None
            replace_file(config_file, tomlkit.dumps(document).encode("utf-8"), new_file_mode=mode)
            return True
    except UnicodeDecodeError:
        raise RuleWriteError(f"{config_file} is not UTF-8 text") from None
    except OSError as exc:
        raise RuleWriteError(f"cannot write {config_file}: {exc.strerror or exc}") from None


def _table(parent: Any, key: str) -> Any:
    """`parent[key]` as a table, created when missing (a super-table, so that a new
    `[projects."<root>".permissions]` is written without empty parent headers)."""
    import tomlkit

    if key not in parent:
        parent[key] = tomlkit.table(is_super_table=True)
    value = parent[key]
    if not isinstance(value, dict):
        raise ValueError(f"`{key}` is not a table")
    return value


def _array(table: Any, key: str) -> Any:
    import tomlkit

    if key not in table:
        array = tomlkit.array()
        array.multiline(True)
        table[key] = array
    value = table[key]
    if not isinstance(value, list):
        raise ValueError(f"`{key}` is not a list of rules")
    return value


def add_project_rules(config_file: Path, project: str, rules: list[str]) -> bool:
    """Add `rules` to `[projects."<project>".permissions] allow`; False: all were there.
    Raises RuleWriteError (nothing written)."""

    def change(document: Any) -> bool:
        projects = _table(document, "projects")
        entry = _table(projects, project)
        permissions = _table(entry, "permissions")
        allow = _array(permissions, "allow")
        missing = [rule for rule in rules if rule not in allow]
        for rule in missing:
            allow.append(rule)
        return bool(missing)

    return _edit(config_file, change)


def remove_rule(config_file: Path, rule: str, decision: str, project: str | None) -> bool:
    """Remove one rule from `[permissions]` (or that project's table); False: not found."""

    def change(document: Any) -> bool:
        table: Any = document
        if project is not None:
            projects = document.get("projects")
            key = _project_key(projects, project) if isinstance(projects, dict) else None
            if key is None:
                return False
            table = projects[key]
        permissions = table.get("permissions") if isinstance(table, dict) else None
        if not isinstance(permissions, dict):
            return False
        entries = permissions.get(decision)
        if not isinstance(entries, list) or rule not in entries:
            return False
        entries.remove(rule)
        return True

    return _edit(config_file, change)


def _project_key(projects: dict[str, Any], project: str) -> str | None:
    """The key of `project` as written, or the key whose real path is `project`."""
    if project in projects:
        return project
    wanted = os.path.realpath(os.path.expanduser(project))
    for key in projects:
        if os.path.realpath(os.path.expanduser(key)) == wanted:
            return key
    return None
