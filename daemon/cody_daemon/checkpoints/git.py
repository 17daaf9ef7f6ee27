"""Running git on the shadow repository so that nothing can make it run a program.

A workspace is hostile (docs/sandbox.md): its `.gitattributes` can name filter, diff and
merge drivers, its `.git/config` can set `core.fsmonitor`, hooks and includes, and the
environment the daemon was started with may carry `GIT_CONFIG_*` or `GIT_DIR`. The shadow
repository's git therefore runs with:

- an environment built from nothing (`git_environment`): our `GIT_DIR`, `GIT_WORK_TREE` and
  `GIT_INDEX_FILE`, no system or global configuration (`GIT_CONFIG_NOSYSTEM`,
  `GIT_CONFIG_GLOBAL=/dev/null`), a `HOME` and `XDG_CONFIG_HOME` that are an empty directory
  of ours, no system attributes; nothing of the daemon's environment but nothing at all;
- the settings of `SAFE_CONFIG` on every command line (they win over any file): no hooks, no
  fsmonitor, no attributes or excludes file of the user, no line-ending conversion;
- the repository's own `info/attributes` (written by repo.py) unsetting every attribute
  that converts content or selects a driver, for every path: it takes precedence over the
  workspace's `.gitattributes`, so a file is stored and restored byte for byte;
- `cwd` the shadow repository itself, never the workspace (git never discovers the
  workspace's `.git`).

The workspace's `.git` is never read: git skips every entry named `.git` when it walks a
work tree. Every command is a subprocess awaited on the event loop; one that is cancelled or
outlives its time limit gets SIGTERM (git then removes its lock files), then SIGKILL. Work
nobody waits for yet runs niced (`background`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..core.child_stop import stop_gently
from ..errors import CodyError

__all__ = [
    "SAFE_CONFIG",
    "CheckpointError",
    "Git",
    "find_git",
    "git_environment",
]

GIT_TIMEOUT_S: Final = 300.0
"""A snapshot of a very large tree may take minutes the first time; nothing takes longer."""
_STOP_GRACE_S: Final = 2.0
BACKGROUND_NICE: Final = 10
"""The niceness of a git nobody waits for yet (the warm-up of a workspace: repo.py)."""

SAFE_CONFIG: Final = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.eol=lf",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.ignoreCase=false",
    "core.quotePath=false",
    "core.splitIndex=false",
    "core.sparseCheckout=false",
    "core.checkRoundtripEncoding=",
    "core.askPass=",
    "credential.helper=",
    "protocol.allow=never",
    "gc.auto=0",
    "maintenance.auto=false",
    "index.recordEndOfIndexEntries=false",
    "commit.gpgSign=false",
)
"""Given with `-c` to every command: these override whatever any config file says."""


class CheckpointError(CodyError):
    """A checkpoint could not be taken, read or restored (git missing, failed or too slow)."""


def find_git(env: Mapping[str, str]) -> str | None:
    """The absolute path of git on the daemon's PATH (relative PATH entries are skipped)."""
    path = env.get("PATH", os.defpath)
    absolute = os.pathsep.join(part for part in path.split(os.pathsep) if os.path.isabs(part))
    found = shutil.which("git", path=absolute or os.defpath)
    return os.path.abspath(found) if found else None


def git_environment(git_dir: Path, work_tree: Path, index: Path, home: Path) -> dict[str, str]:
    """The whole environment of a shadow-repository git (see the module docstring)."""
    return {
        "PATH": os.defpath,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_SYSTEM": "/dev/null",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(work_tree),
        "GIT_INDEX_FILE": str(index),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_AUTHOR_NAME": "Cody",
        "GIT_AUTHOR_EMAIL": "cody@localhost",
        "GIT_COMMITTER_NAME": "Cody",
        "GIT_COMMITTER_EMAIL": "cody@localhost",
        "LC_ALL": "C",
    }


@dataclass(frozen=True, slots=True)
class Git:
    """git for one shadow repository and work tree."""

    binary: str
    git_dir: Path
    work_tree: Path
    index: Path
    home: Path

    def argv(self, args: Sequence[str]) -> list[str]:
        config = [item for setting in SAFE_CONFIG for item in ("-c", setting)]
        return [self.binary, *config, *args]

    def environment(self) -> dict[str, str]:
        return git_environment(self.git_dir, self.work_tree, self.index, self.home)

    async def run(
        self,
        *args: str,
        input: bytes | None = None,
        ok: tuple[int, ...] = (0,),
        background: bool = False,
    ) -> bytes:
        """Run `git args` and return its stdout; CheckpointError when it exits with a code
        not in `ok`, cannot start, or takes longer than GIT_TIMEOUT_S. `background`: at
        BACKGROUND_NICE (work nobody waits for yet)."""
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv(args),
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.git_dir,
                env=self.environment(),
                start_new_session=True,
            )
        except OSError as exc:
            raise CheckpointError(f"Cannot run git for a checkpoint: {exc.strerror}.") from None
        if background:
            # From the parent, not a preexec_fn (unsafe with the daemon's threads); a child
            # may always be made nicer. Its first instants run at our priority.
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, process.pid, BACKGROUND_NICE)
        try:
            out, err = await asyncio.wait_for(process.communicate(input), GIT_TIMEOUT_S)
        except TimeoutError:
            await stop_gently(process, _STOP_GRACE_S)
            raise CheckpointError(
                f"git {args[0]} took longer than {GIT_TIMEOUT_S:.0f} s; no checkpoint."
            ) from None
        except BaseException:
            await stop_gently(process, _STOP_GRACE_S)
            raise
        if process.returncode not in ok:
            raise CheckpointError(f"git {args[0]} failed: {_first_line(err)}")
        return out

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """A long-running git with pipes (`cat-file --batch`), for a worker thread."""
        try:
            return subprocess.Popen(
                self.argv(args),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=self.git_dir,
                env=self.environment(),
                start_new_session=True,
            )
        except OSError as exc:
            raise CheckpointError(f"Cannot run git for a checkpoint: {exc.strerror}.") from None


def _first_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[0][:300] if text else "no message"
