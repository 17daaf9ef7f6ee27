"""Running git on the user's own repository (worktrees) so that it runs no other program.

A repository is hostile (docs/sandbox.md): its `.git/config` can name hooks, an fsmonitor,
filter drivers and includes, its hooks directory can hold scripts, and `.gitattributes`
selects drivers. The daemon's own git commands on it therefore:

- run only where `policy/git_repo.guarded_status_hazard` finds no filter driver and no
  include in the repository's configuration (what `-c` cannot switch off: a driver's
  `process` set to an empty string still makes git start something); `WorktreeGit.hazard`
  says why not;
- carry `GUARD_CONFIG` with `-c` on every command line (it wins over every file, and reaches
  the git processes git starts itself through `GIT_CONFIG_PARAMETERS`): no hooks, no
  fsmonitor, no submodule recursion, no pager, no credential helper, no network, no
  automatic gc;
- get the daemon's environment without any `GIT_*` variable (no `GIT_DIR` or
  `GIT_CONFIG_*` of the daemon's caller redirects them), with no terminal prompt and no
  optional locks.

System and global configuration belong to the user and are trusted (as in
policy/git_repo.py). Every command is a subprocess awaited on the event loop; one that is
cancelled or takes longer than `GIT_TIMEOUT_S` gets SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..core.child_stop import stop_gently
from ..errors import CodyError
from ..policy.git_repo import guarded_status_hazard

__all__ = ["GUARD_CONFIG", "GitFailed", "WorktreeGit"]

GIT_TIMEOUT_S: Final = 120.0
_STOP_GRACE_S: Final = 2.0

GUARD_CONFIG: Final = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.askPass=",
    "credential.helper=",
    "protocol.allow=never",
    "submodule.recurse=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "advice.detachedHead=false",
)


class GitFailed(CodyError):
    """git could not be run, failed, or took too long (the message says which)."""


@dataclass(frozen=True, slots=True)
class WorktreeGit:
    binary: str
    env: Mapping[str, str]

    @classmethod
    def find(cls, env: Mapping[str, str]) -> WorktreeGit | None:
        """git on the daemon's PATH (absolute entries only), or None."""
        path = env.get("PATH", os.defpath)
        absolute = os.pathsep.join(p for p in path.split(os.pathsep) if os.path.isabs(p))
        found = shutil.which("git", path=absolute or os.defpath)
        if found is None:
            return None
        clean = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        clean.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
        return cls(os.path.abspath(found), clean)

    def hazard(self, cwd: Path) -> str | None:
        """Why git must not run in `cwd` (blocking: reads the repository's config files)."""
        return guarded_status_hazard(cwd, self.env)

    async def run(self, cwd: Path, *args: str, ok: tuple[int, ...] = (0,)) -> bytes:
        """`git args` in `cwd`; its stdout. GitFailed when it cannot start, exits with a code
        not in `ok`, or takes longer than GIT_TIMEOUT_S."""
        config = [item for setting in GUARD_CONFIG for item in ("-c", setting)]
        try:
            process = await asyncio.create_subprocess_exec(
                self.binary,
                *config,
                *args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(self.env),
                start_new_session=True,
            )
        except OSError as exc:
            raise GitFailed(f"cannot run git: {exc.strerror or exc}") from None
        try:
            out, err = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT_S)
        except TimeoutError:
            await stop_gently(process, _STOP_GRACE_S)
            raise GitFailed(f"git {args[0]} took longer than {GIT_TIMEOUT_S:.0f} s") from None
        except BaseException:
            await stop_gently(process, _STOP_GRACE_S)
            raise
        if process.returncode not in ok:
            raise GitFailed(f"git {args[0]} failed: {_first_line(err)}")
        return out


def _first_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[-1][:300] if text else "no message"
