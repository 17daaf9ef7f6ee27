"""Cody's sandbox for the Codex CLI's own commands and edits: a Codex permission profile.

The Codex CLI runs its commands in its own sandbox (bubblewrap and seccomp on Linux, Seatbelt
on macOS). Its built-in `workspace-write` keeps `.git` read-only but not `.cody` (so a command
could write a trusted project's `.cody/config.toml` and lift the next session's sandbox), nor
nested repositories' `.git`, and lets commands read the login files. Codex 0.169 also takes a
*permission profile* (beta; selected with `permissions` on `thread/start` and `turn/start`, an
experimental field): Cody defines one per sandbox mode on the command line
(`-c permissions.<id>={...}`) from the same facts as its own bubblewrap sandbox
(policy/sandbox.py `read_only_paths`): `:workspace` plus every protected path read-only, and
every login file unreadable. Observed with the pinned CLI (tests/e2e/test_backend_attacks.py):

- under Codex approval `never` and `on-request` a command cannot write `.cody`, a nested
  `.git` or Cody's own directories, nor read a login file, and an edit there is rejected;
- a profile that denies a read also stops Codex from re-running, on its own, an approved
  command outside its sandbox after the sandbox refused it (which it does with its built-in
  modes under `untrusted`);
- a path that does not exist is created (empty, read-only) by Codex when a profile names it,
  so only existing protected paths are named, and each login file as a one-file glob (the
  last character as a class), which Codex matches when it starts each command and never
  creates.

What a profile cannot do: a command the model asks to run with escalated permissions
(`sandbox_permissions: "require_escalated"`) still runs outside the sandbox once approved,
and under `untrusted` its approval request looks exactly like any other (the justification
is optional). So an approved command of the Codex CLI still counts as unsandboxed
(codex_turn.py), and the policies that run commands unasked keep Codex's `never` /
`on-request`, where escalation is refused or asked as such (docs/backends.md).

`codex_sandbox` walks the workspace (the protected-path scan): call it off the event loop.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cody_protocol.settings import SandboxMode

from ..policy.sandbox import SandboxPolicy
from .base import BackendSettings
from .mapping import codex_policy

__all__ = ["CodexSandbox", "codex_sandbox"]

PROFILES: Final[dict[SandboxMode, str]] = {
    "workspace-write": "cody-workspace",
    "read-only": "cody-read-only",
    "danger-full-access": ":danger-full-access",
}
"""The profile each sandbox mode selects (`:danger-full-access` is Codex's own: no sandbox)."""
_EXTENDS: Final[dict[SandboxMode, str]] = {
    "workspace-write": ":workspace",
    "read-only": ":read-only",
}
_GLOB: Final = frozenset("*?[]{}\\!")


@dataclass(frozen=True, slots=True)
class CodexSandbox:
    profile: str
    """The permission profile's id (`permissions` of `thread/start` / `turn/start`)."""
    args: tuple[str, ...] = ()
    """`-c permissions.<id>={...}` defining it (the command line of `codex app-server`)."""
    notes: tuple[str, ...] = ()
    """What the user should know (a workspace too large to scan whole)."""


def codex_sandbox(settings: BackendSettings, cwd: Path, *, create: bool = True) -> CodexSandbox:
    """The profile for the sandbox mode Codex runs with (mapping.py: the session's, or
    `read-only` for an allowlist without a writing tool) in `cwd`.

    Both of Cody's profiles are defined whatever the mode, so that a change of mode is only a
    `permissions` of the next `turn/start`, not a new process. `create` makes a trusted
    project's `.cody` (and Cody's own directories inside the workspace) first, as Cody's own
    sandbox does, so that they exist to be protected (a dry run passes False: it writes
    nothing)."""
    workspace = SandboxPolicy.create(
        "workspace-write",
        cwd,
        protected=settings.protected,
        guard_project_config=settings.project_trusted,
    )
    read_only, notes = workspace.read_only_paths(create=create)
    unreadable = _unreadable(settings.hidden_files)
    writable = {str(path): "read" for path in read_only}
    args = [
        *_profile("workspace-write", {**writable, **unreadable}),
        *_profile("read-only", unreadable),
    ]
    return CodexSandbox(PROFILES[codex_policy(settings).sandbox], tuple(args), tuple(notes))


def _profile(mode: SandboxMode, entries: dict[str, str]) -> list[str]:
    """`-c permissions.<id>={...}` for `mode`: its Codex base profile plus `entries`."""
    table = ", ".join(f"{json.dumps(path)}={json.dumps(how)}" for path, how in entries.items())
    value = f'{{extends="{_EXTENDS[mode]}", filesystem={{{table}}}}}'
    return ["-c", f"permissions.{PROFILES[mode]}={value}"]


def _unreadable(files: tuple[Path, ...]) -> dict[str, str]:
    """Entries that keep `files` from being read: each as a one-file glob (matched when a
    command starts, never created), or as itself when it exists and cannot be a glob."""
    entries: dict[str, str] = {}
    for hidden in dict.fromkeys(os.path.abspath(path) for path in files):
        pattern = _one_file_glob(hidden)
        if pattern is not None:
            entries[pattern] = "none"
        elif os.path.lexists(hidden):
            entries[hidden] = "none"
    return entries


def _one_file_glob(path: str) -> str | None:
    """`path` as a glob that matches only it (`/a/auth.jso[n]`), or None when `path` holds a
    glob character itself."""
    if not path or _GLOB & set(path) or path.endswith("/"):
        return None
    return f"{path[:-1]}[{path[-1]}]"
