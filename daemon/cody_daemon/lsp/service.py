"""The daemon's language servers as the engine and the `symbols` tool see them.

Invariants:
- Importing this module imports no pygls and no lsprotocol: the pool (lsp/pool.py) is
  imported, in a thread, the first time a session prepares an edit of a file some server
  handles. Until then every call is a cheap no-op (tests/unit/test_lazy_imports.py).
- Nothing here raises into a turn: a server that is slow, missing or broken shows up as
  `late` in the result. `check` returns within its bound.
- `CODY_LSP=off` in the daemon's environment turns every server off (as `[lsp] enabled =
  false` does in a config file).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.model import LspConfig
from ..core.code_intel import EditedFile, FileDiagnostics, ServerReport, SymbolQuery
from .project import Project
from .specs import ServerSpec, server_specs

if TYPE_CHECKING:
    from .pool import LspPool

__all__ = ["LanguageServers"]

logger = logging.getLogger(__name__)

OFF_ENV = "CODY_LSP"


@dataclass(slots=True)
class _Attached:
    cwd: Path
    config: LspConfig
    trusted: bool
    env: Mapping[str, str] = field(repr=False)
    hidden_files: tuple[Path, ...]
    specs: tuple[ServerSpec, ...] | None = None


class LanguageServers:
    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._attached: dict[str, _Attached] = {}
        self._pool: LspPool | None = None
        self._loading: asyncio.Task[LspPool] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._unchecked: dict[Path, str | None] = {}
        """Files changed while the pool was still loading, with their text before that."""

    @property
    def switched_off(self) -> bool:
        return self._env.get(OFF_ENV, "").lower() in ("off", "0", "false", "no")

    # -- sessions -------------------------------------------------------------------------

    def attach(
        self,
        session_id: str,
        *,
        cwd: Path,
        config: LspConfig,
        trusted: bool,
        env: Mapping[str, str],
        hidden_files: tuple[Path, ...] = (),
    ) -> None:
        """What the servers of this session's edits need to know (again at every turn)."""
        known = self._attached.get(session_id)
        if known is not None and (known.cwd, known.config, known.trusted) == (
            cwd,
            config,
            trusted,
        ):
            known.env, known.hidden_files = env, hidden_files
            return
        self._attached[session_id] = _Attached(cwd, config, trusted, env, hidden_files)

    async def release(self, session_id: str) -> None:
        self._attached.pop(session_id, None)
        if self._pool is not None:
            await self._pool.release(session_id)

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        if self._pool is not None:
            await self._pool.aclose()

    # -- edits ----------------------------------------------------------------------------

    def prepare(self, session_id: str, paths: Iterable[Path]) -> None:
        """An edit of `paths` is about to happen: start their servers, note the baseline."""
        wanted = list(paths)
        if not wanted or session_id not in self._attached or self.switched_off:
            return
        task = asyncio.get_running_loop().create_task(self._prepare(session_id, wanted))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _prepare(self, session_id: str, paths: list[Path]) -> None:
        project = await self._project(session_id)
        if project is None:
            return
        matching = [path for path in paths if _handled(project.specs, path)]
        if matching:
            pool = await self._load_pool()
            pool.prepare(project, matching)

    async def check(
        self, session_id: str, edits: Sequence[EditedFile], bound_s: float
    ) -> list[FileDiagnostics]:
        """The new diagnostics of the edited files that have a server, within `bound_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound_s
        project = await self._project(session_id)
        if project is None:
            return []
        matching = [edit for edit in edits if _handled(project.specs, edit.path)]
        if not matching:
            return []
        loading = asyncio.ensure_future(self._load_pool())
        done, _ = await asyncio.wait({loading}, timeout=max(deadline - loop.time(), 0))
        if not done or loading.exception() is not None:
            why = "the language servers are still loading" if not done else "failed to load"
            for edit in matching:  # checked from this text on, next time
                self._unchecked.setdefault(edit.path, edit.before)
            return [
                FileDiagnostics(path=str(edit.path), new=(), servers=(), late=(why,))
                for edit in matching
            ]
        since = [
            replace(edit, before=self._unchecked.pop(edit.path))
            if edit.path in self._unchecked
            else edit
            for edit in matching
        ]
        return await loading.result().check(project, since, deadline - loop.time())

    async def recheck(self, session_id: str, bound_s: float) -> list[FileDiagnostics]:
        """After a command: the session's open files that changed on disk."""
        if self._pool is None:
            return []
        project = await self._project(session_id)
        if project is None:
            return []
        return await self._pool.recheck(project, bound_s)

    # -- navigation -----------------------------------------------------------------------

    def not_navigable(self, session_id: str | None) -> str | None:
        attached = self._attached.get(session_id) if session_id is not None else None
        if self.switched_off or (attached is not None and not attached.config.enabled):
            return f"language servers are turned off ([lsp] enabled = false, or {OFF_ENV}=off)"
        if session_id is not None and self._pool is not None and self._pool.navigable(session_id):
            return None
        return (
            "no language server that answers symbol requests runs for this project yet "
            "(servers start with the first edit of a file they handle)"
        )

    async def navigate(self, session_id: str, query: SymbolQuery, timeout_s: float) -> str:
        if self._pool is None:
            raise ValueError("no language server runs for this session yet")
        return await self._pool.navigate(session_id, query, timeout_s)

    # -- doctor ---------------------------------------------------------------------------

    async def report(
        self,
        *,
        cwd: Path,
        config: LspConfig,
        trusted: bool,
        env: Mapping[str, str],
        start: bool,
        timeout_s: float = 20.0,
    ) -> list[ServerReport]:
        """Every server configured or built in for `cwd`: found or not, and with `start`,
        whether it starts (each is started in `cwd`, initialized and shut down again)."""
        if self.switched_off or not config.enabled:
            return []
        specs = await asyncio.to_thread(server_specs, config, self._env, cwd)
        reports = []
        for spec in specs:
            report = ServerReport(
                name=spec.name,
                command=spec.command,
                extensions=spec.extensions,
                path=spec.program,
                state="found" if spec.found else "not found",
                sandboxed=not trusted,
            )
            if spec.found and start:
                from .probe import probe

                state, problem = await probe(
                    spec, cwd, trusted=trusted, env=env, timeout_s=timeout_s
                )
                report = replace(report, state=state, problem=problem)
            reports.append(report)
        return reports

    # -- inside ---------------------------------------------------------------------------

    async def _project(self, session_id: str) -> Project | None:
        attached = self._attached.get(session_id)
        if attached is None or self.switched_off or not attached.config.enabled:
            return None
        if attached.specs is None:
            found = await asyncio.to_thread(server_specs, attached.config, self._env, attached.cwd)
            attached.specs = tuple(spec for spec in found if spec.found)
        if not attached.specs:
            return None
        return Project(
            session_id=session_id,
            cwd=attached.cwd,
            config=attached.config,
            trusted=attached.trusted,
            env=attached.env,
            hidden_files=attached.hidden_files,
            specs=attached.specs,
        )

    async def _load_pool(self) -> LspPool:
        if self._pool is not None:
            return self._pool
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._import_pool())
        return await asyncio.shield(self._loading)

    async def _import_pool(self) -> LspPool:
        # pygls' LSP client and lsprotocol's ~1,000 classes: ~0.3 s, kept off the event loop.
        pool_class = await asyncio.to_thread(_pool_class)
        self._pool = pool_class()
        logger.info("language server pool loaded")
        return self._pool


def _pool_class() -> type[LspPool]:
    from .pool import LspPool

    return LspPool


def _handled(specs: Sequence[ServerSpec], path: Path) -> bool:
    return any(spec.handles(path) for spec in specs)
