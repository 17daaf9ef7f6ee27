"""Starting one command for `exec`: which launcher, which bubblewrap argv, which descriptors.

Invariants:
- A sandboxed command runs under bubblewrap with the seccomp filter (its fd 3); when the
  sandbox keeps it off the network it starts through the session's network launcher (in the
  session's own network namespace, so `--unshare-net` is left out and it shares the session's
  loopback), or, when that namespace cannot be made, through the daemon's launcher with a
  namespace of its own and a note saying so.
- Any other command (no sandbox needed, none available, or let out of it) starts through the
  daemon's launcher in the daemon's namespaces.
- The workspace scan behind the bubblewrap argv (`SandboxPolicy.plan_exec`) runs off the
  event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from ...policy import seccomp
from ...policy.sandbox import ExecPlan, SandboxPolicy, network_namespace_prefix
from ...policy.secrets import SecretGuard
from ..base import ToolError
from .launcher_client import Launcher, LauncherError, SpawnError, SpawnRequest
from .process import ManagedProcess, ProcessFacts
from .table import ProcessTable

__all__ = ["SECCOMP_FD", "start_command"]

SECCOMP_FD = 3
"""The seccomp filter's descriptor number in the command (bubblewrap's `--seccomp 3`)."""


async def start_command(
    table: ProcessTable,
    sandbox: SandboxPolicy,
    argv: list[str],
    *,
    facts: ProcessFacts,
    env: dict[str, str],
    grace_s: float,
    guard: SecretGuard,
) -> tuple[ManagedProcess, list[str]]:
    """The started command, and what the user should know about its isolation; raises
    ToolError when it cannot start."""
    sandboxed = facts.isolation == "sandbox"
    cwd = Path(facts.cwd)
    may_outlive = facts.may_outlive
    with seccomp.filter_fd() if sandboxed else contextlib.nullcontext() as filter_fd:
        launcher, joined, notes = await _launcher(table, sandbox, sandboxed)
        if sandboxed:
            plan = await asyncio.to_thread(
                sandbox.plan_exec,
                argv,
                cwd,
                seccomp_fd=None if filter_fd is None else SECCOMP_FD,
                joined_network=joined,
                new_session=not facts.tty,
            )
        else:
            plan = ExecPlan(list(argv))
        request = SpawnRequest(
            argv=plan.argv, cwd=str(cwd), env=env, tty=facts.tty, grace_s=grace_s
        )
        try:
            process = await table.start(
                request,
                facts,
                launcher=launcher,
                extra_fds=() if filter_fd is None else (filter_fd,),
                stdin=may_outlive,
                guard=guard,
            )
        except SpawnError as exc:
            raise ToolError(str(exc)) from None
        except LauncherError as exc:
            raise ToolError(f"cannot run {argv[0]}: {exc}") from None
    return process, [*plan.notes, *notes]


async def _launcher(
    table: ProcessTable, sandbox: SandboxPolicy, sandboxed: bool
) -> tuple[Launcher, bool, list[str]]:
    """The launcher to start the command with; whether it is in the session's network
    namespace; what the user should know."""
    notes: list[str] = []
    if sandboxed and not sandbox.reaches_network():
        launcher = await table.network_launcher(network_namespace_prefix())
        if launcher is not None:
            return launcher, True, notes
        notes.append(
            "this command gets a network namespace of its own (servers other commands "
            f"started are not reachable from it): {table.network_problem}"
        )
    try:
        return await table.host.launcher(), False, notes
    except LauncherError as exc:
        raise ToolError(f"cannot run the command: {exc}") from None
