"""The language servers of every project the daemon's sessions work in.

Invariants:
- One server per (project root, server name, command, sandboxed or not): sessions in the
  same project share it; it records which sessions use it and is shut down when the last of
  them is released (session closed) or the daemon exits (`aclose`).
- Started lazily (on `prepare`, the start of an edit); a server that exits without being
  asked to, or fails to start, is started again at its next use, at most `restarts` times;
  then it is left off and reported (in every later result and in `cody-client doctor`).
  Nothing a server does raises out of `check`: a failure is a "late" server in the result.
- `check` returns within its bound whatever the servers do: what has not come by then is
  reported as missing, and the waits are cancelled.
- The delta (lsp/delta.py) compares a file's diagnostics after an edit with those of the
  text the edit started from, which is synced first when the server does not hold it. When a
  server did not answer for a change in time, its next check of that file starts from the
  text before that change, so what the late change broke is reported then, not lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.code_intel import Diagnostic, EditedFile, FileDiagnostics, SymbolQuery
from .client import ServerConnection, ServerGone
from .delta import new_diagnostics
from .files import read_source
from .launch import Unlaunchable, spawn_server
from .navigation import answer
from .project import Project
from .specs import ServerSpec, find_root, language_id

__all__ = ["INITIALIZE_TIMEOUT_S", "LspPool"]

logger = logging.getLogger(__name__)

INITIALIZE_TIMEOUT_S = 30.0
BASELINE_WAIT_S = 30.0
"""How long a `prepare` keeps waiting for the diagnostics before an edit (in the
background: an edit itself waits only up to its bound)."""


_Key = tuple[Path, str, tuple[str, ...], bool]


class _Server:
    """One server of the pool, across its restarts."""

    def __init__(self, spec: ServerSpec, root: Path, project: Project) -> None:
        self.spec = spec
        self.root = root
        self.project = project
        self.users: set[str] = set()
        self.connection: ServerConnection | None = None
        self.failures = 0
        self.failed: str | None = None
        self._starting: asyncio.Task[ServerConnection] | None = None
        self.warming: dict[Path, asyncio.Task[None]] = {}
        self.unchecked: dict[Path, str | None] = {}
        """Files whose last change this server did not answer for in time, with their text
        before that change: the next check reports what is new since then."""

    async def ready(self, timeout_s: float) -> ServerConnection:
        """The running connection, started (again) when needed; `ServerGone` otherwise."""
        if self.failed is not None:
            raise ServerGone(self.failed)
        connection = self.connection
        if connection is not None and connection.alive and connection.capabilities is not None:
            return connection
        if self._starting is None or self._starting.done():
            self._starting = asyncio.create_task(self._start())
        done, _ = await asyncio.wait({self._starting}, timeout=max(timeout_s, 0))
        if not done:
            raise ServerGone("still starting")
        return self._starting.result()

    async def _start(self) -> ServerConnection:
        project = self.project
        try:
            connection = await spawn_server(
                self.spec,
                self.root,
                trusted=project.trusted,
                env=project.env,
                hidden_files=project.hidden_files,
            )
        except Unlaunchable as exc:
            self.failed = str(exc)
            raise ServerGone(self.failed) from None
        except ServerGone as exc:
            self._failure(str(exc))
            raise
        try:
            await connection.initialize(INITIALIZE_TIMEOUT_S)
        except ServerGone as exc:
            await connection.close()
            self._failure(str(exc))
            raise
        except BaseException:  # cancelled (the pool is closing): the process goes too
            connection.kill()
            raise
        self.connection = connection
        asyncio.get_running_loop().create_task(self._watch(connection))
        logger.info(
            "language server %s started for %s (pid %s%s)",
            self.spec.name,
            self.root,
            connection.pid,
            ", sandboxed" if connection.sandboxed else "",
        )
        return connection

    async def _watch(self, connection: ServerConnection) -> None:
        await connection.exited.wait()
        if connection.closing:
            return
        if self.connection is connection:
            self.connection = None
        for task in self.warming.values():
            task.cancel()
        self.warming.clear()
        await connection.close()  # what it left behind goes too; its stderr is read
        self._failure(connection.why_gone())

    def _failure(self, why: str) -> None:
        """Count a crash or failed start. `why` may end with the server's stderr: it goes to
        the results (redacted by the engine), the log gets only the part before it."""
        self.failures += 1
        short = why.split(": ", 1)[0]
        if self.failures > self.project.config.restarts:
            self.failed = f"left off after {self.failures} failures (last: {why})"
            logger.warning(
                "language server %s for %s left off after %d failures (last: %s)",
                self.spec.name,
                self.root,
                self.failures,
                short,
            )
        else:
            logger.warning(
                "language server %s for %s failed (%s); it starts again at its next use",
                self.spec.name,
                self.root,
                short,
            )

    async def close(self) -> None:
        for task in self.warming.values():
            task.cancel()
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(BaseException):
                await self._starting
        if self.connection is not None:
            await self.connection.close()
            self.connection = None


class LspPool:
    def __init__(self) -> None:
        self._servers: dict[_Key, _Server] = {}

    # -- servers --------------------------------------------------------------------------

    def _servers_for(self, project: Project, path: Path) -> list[_Server]:
        found = []
        for spec in project.specs:
            if not spec.handles(path):
                continue
            root = find_root(path, project.cwd, spec.root_markers)
            key: _Key = (root, spec.name, tuple(spec.argv()), not project.trusted)
            server = self._servers.get(key)
            if server is None:
                server = self._servers[key] = _Server(spec, root, project)
            server.users.add(project.session_id)
            found.append(server)
        return found

    def servers_of(self, session_id: str) -> list[_Server]:
        return [server for server in self._servers.values() if session_id in server.users]

    # -- before and after an edit ---------------------------------------------------------

    def prepare(self, project: Project, paths: Iterable[Path]) -> None:
        """Start the servers for `paths` and send them the files as they are now, so the
        diagnostics before the edit are known (or on their way) when it is done."""
        for path in paths:
            for server in self._servers_for(project, path):
                task = server.warming.get(path)
                if task is None or task.done():
                    server.warming[path] = asyncio.create_task(_warm(server, path))

    async def check(
        self, project: Project, edits: Sequence[EditedFile], bound_s: float
    ) -> list[FileDiagnostics]:
        """The new diagnostics of each edited file with a server, within `bound_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound_s
        jobs: dict[asyncio.Task[tuple[list[Diagnostic], bool]], tuple[EditedFile, _Server]] = {}
        for edit in edits:
            for server in self._servers_for(project, edit.path):
                since = edit
                if edit.path in server.unchecked:  # an earlier change it has not answered for
                    since = replace(edit, before=server.unchecked[edit.path])
                jobs[asyncio.create_task(_check_file(server, since, deadline))] = (edit, server)
        if not jobs:
            return []
        try:
            done, pending = await asyncio.wait(jobs, timeout=max(bound_s, 0))
        finally:  # past the bound, or the turn was cancelled: stop waiting for the servers
            for task in jobs:
                task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        reports: dict[Path, FileDiagnostics] = {}
        for task, (edit, server) in jobs.items():
            report = reports.get(edit.path) or FileDiagnostics(
                path=str(edit.path), new=(), servers=()
            )
            outcome = task.result() if task in done and task.exception() is None else None
            if outcome is None:
                server.unchecked.setdefault(edit.path, edit.before)
                why = _why_late(task, done, server)
                logger.info(
                    "diagnostics of %s from %s: %s", edit.path, server.spec.name, why.split(": ")[0]
                )
                report = _merge(report, late=f"{server.spec.name} ({why})")
            else:
                server.unchecked.pop(edit.path, None)
                found, baseline = outcome
                report = _merge(report, found=found, server=server.spec.name, baseline=baseline)
            reports[edit.path] = report
        return list(reports.values())

    async def recheck(self, project: Project, bound_s: float) -> list[FileDiagnostics]:
        """After a command: the files the session's servers hold that changed on disk."""
        edits: list[EditedFile] = []
        seen: set[Path] = set()
        for server in self.servers_of(project.session_id):
            connection = server.connection
            if connection is None or not connection.alive:
                continue
            for path in connection.open_documents():
                if path in seen:
                    continue
                seen.add(path)
                synced = connection.document_text(path)
                now = await asyncio.to_thread(_read_text, path)
                if now != synced:
                    edits.append(EditedFile(path=path, before=synced, after=now))
        return await self.check(project, edits, bound_s) if edits else []

    # -- navigation -----------------------------------------------------------------------

    def navigable(self, session_id: str) -> bool:
        return any(
            server.connection is not None
            and server.connection.alive
            and _navigates(server.connection)
            for server in self.servers_of(session_id)
        )

    async def navigate(self, session_id: str, query: SymbolQuery, timeout_s: float) -> str:
        servers = [
            server.connection
            for server in self.servers_of(session_id)
            if server.connection is not None
            and server.connection.alive
            and _navigates(server.connection)
            and (query.path is None or server.spec.handles(query.path))
        ]
        if not servers:
            raise ValueError(
                "no running language server answers symbol requests for "
                + (str(query.path) if query.path is not None else "this project")
            )
        return await answer(servers, query, timeout_s)

    # -- ending ---------------------------------------------------------------------------

    async def release(self, session_id: str) -> None:
        """The session ended: servers nobody else uses are shut down."""
        unused = []
        for key, server in list(self._servers.items()):
            server.users.discard(session_id)
            if not server.users:
                unused.append(self._servers.pop(key))
        await asyncio.gather(*(server.close() for server in unused), return_exceptions=True)

    async def aclose(self) -> None:
        servers = list(self._servers.values())
        self._servers.clear()
        await asyncio.gather(*(server.close() for server in servers), return_exceptions=True)


async def _warm(server: _Server, path: Path) -> None:
    with contextlib.suppress(ServerGone):
        connection = await server.ready(INITIALIZE_TIMEOUT_S)
        text = await asyncio.to_thread(_read_text, path)
        if text is None:
            return
        if connection.document_text(path) != text:
            connection.sync(path, text, language_id(path))
        version = connection.version_of(path)
        await connection.diagnostics(path, version, BASELINE_WAIT_S)


async def _check_file(
    server: _Server, edit: EditedFile, deadline: float
) -> tuple[list[Diagnostic], bool]:
    """(new diagnostics, whether the baseline was known) of one file from one server."""
    loop = asyncio.get_running_loop()
    connection = await server.ready(deadline - loop.time())
    warming = server.warming.pop(edit.path, None)
    if warming is not None and not warming.done():
        await asyncio.wait({warming}, timeout=max(deadline - loop.time(), 0))
    path, language = edit.path, language_id(edit.path)
    baseline: list[Diagnostic] | None = []
    if edit.before is not None:
        if connection.document_text(path) != edit.before:
            connection.sync(path, edit.before, language)
        try:
            version = connection.version_of(path)
            baseline = await connection.diagnostics(path, version, deadline - loop.time())
        except ServerGone:
            if not connection.alive:
                raise
            baseline = None
    if edit.after is None:
        connection.forget(path)
        return [], True
    version = connection.sync(path, edit.after, language)
    after = await connection.diagnostics(path, version, deadline - loop.time())
    return new_diagnostics(baseline, after, edit.before, edit.after), baseline is not None


def _why_late(task: asyncio.Task[Any], done: set[asyncio.Task[Any]], server: _Server) -> str:
    if task not in done:
        return "no answer in time"
    error = task.exception()
    return str(error) if error is not None else "failed"


def _merge(
    report: FileDiagnostics,
    *,
    found: Sequence[Diagnostic] = (),
    server: str | None = None,
    late: str | None = None,
    baseline: bool = True,
) -> FileDiagnostics:
    return FileDiagnostics(
        path=report.path,
        new=(*report.new, *found),
        servers=(*report.servers, server) if server is not None else report.servers,
        late=(*report.late, late) if late is not None else report.late,
        baseline=report.baseline and baseline,
    )


def _navigates(connection: ServerConnection) -> bool:
    caps = connection.capabilities
    return caps is not None and any(
        (
            caps.definition_provider,
            caps.references_provider,
            caps.document_symbol_provider,
            caps.workspace_symbol_provider,
        )
    )


def _read_text(path: Path) -> str | None:
    """The file's text, None when it is gone or is no regular file of a sane size any more
    (lsp/files.py: a command may have made it a FIFO or a link to `/dev/zero`)."""
    try:
        return read_source(path)
    except OSError:
        return None
