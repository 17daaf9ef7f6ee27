"""How a language server is started: as is in a trusted project, else in the exec sandbox.

Language servers run project code in some ecosystems (build scripts, plugins, the project's
own interpreter found by a type checker). So, as docs/sandbox.md says:

- in a trusted project (`trusted_projects` in the user's config) a server runs as the user
  runs it, with the scrubbed environment commands get (no credentials);
- in any other project it runs under bubblewrap like `exec`, but with the whole file system
  read-only (a private view of nothing writable), no network, in its own pid namespace,
  under the seccomp filter, with the login files hidden and the scrubbed environment;
- where no sandbox can be built there, it does not run at all (`Unlaunchable`).

`launch_context` is a context manager because the seccomp filter travels as an fd that must
stay open until the process has started.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..policy import seccomp
from ..policy.sandbox import SandboxPolicy, bwrap_path
from .client import Launch, ServerConnection
from .specs import ServerSpec

__all__ = ["Unlaunchable", "launch_context", "spawn_server"]


class Unlaunchable(Exception):
    """The server may not run here (an untrusted project without a sandbox)."""


@contextlib.contextmanager
def launch_context(
    spec: ServerSpec,
    root: Path,
    *,
    trusted: bool,
    env: Mapping[str, str],
    hidden_files: tuple[Path, ...] = (),
) -> Iterator[Launch]:
    """The `Launch` for `spec` in `root` (see the module doc). Blocking (it may probe
    bubblewrap once per process): call it off the event loop."""
    environment = {**env, **spec.env}
    if trusted:
        yield Launch(argv=spec.argv(), env=environment, cwd=root)
        return
    if bwrap_path() is None:
        raise Unlaunchable(
            "not started: this project is not trusted and no sandbox (bubblewrap) works here; "
            "add it to trusted_projects to run its language servers unsandboxed"
        )
    policy = SandboxPolicy.create("read-only", root, hidden_files=hidden_files)
    with seccomp.filter_fd() as filter_fd:
        plan = policy.plan_exec(spec.argv(), root, seccomp_fd=filter_fd)
        yield Launch(
            argv=plan.argv,
            env=environment,
            cwd=root,
            pass_fds=() if filter_fd is None else (filter_fd,),
            sandboxed=True,
        )


async def spawn_server(
    spec: ServerSpec,
    root: Path,
    *,
    trusted: bool,
    env: Mapping[str, str],
    hidden_files: tuple[Path, ...] = (),
) -> ServerConnection:
    """The server's process, started as `launch_context` says (not yet initialized).
    Raises `Unlaunchable`, or `ServerGone` when the program cannot run."""
    context = launch_context(spec, root, trusted=trusted, env=env, hidden_files=hidden_files)
    launch = await asyncio.to_thread(context.__enter__)
    connection = ServerConnection(spec, root, sandboxed=launch.sandboxed)
    try:
        await connection.spawn(launch)
    finally:
        context.__exit__(None, None, None)
    return connection
