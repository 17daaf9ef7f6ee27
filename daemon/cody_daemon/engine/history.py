"""History across agents, as the engine offers it: list, read, a Cody session's history, and
import into a new Cody session (the only part that touches live sessions).

Parsing and file I/O run in the scan pool's threads (engine/scan_pool.py: a 100 MB file
must not stall other requests, nor a burst of them the file tools' threads);
the new session of an import is created and written on the event loop, like `fork`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cody_protocol.session import CodySessionMeta

from ..history.api import DEFAULT_PAGE, FileScan, list_sessions, read_messages, resolve
from ..history.discovery import HistoryIndex, HistoryRoots, SessionFile
from ..history.importer import ImportPlan, plan_import
from .deps import EngineDeps
from .loading import check_cwd
from .manager import SessionManager
from .session import Session

__all__ = ["HistoryService", "ImportOutcome"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportOutcome:
    session: Session
    entry: SessionFile
    source_id: str
    plan: ImportPlan
    skipped_lines: int
    source_cwd: str | None
    """The directory the file says it ran in (reported, never used)."""

    def stats(self) -> dict[str, Any]:
        return {
            "agent": self.entry.agent,
            "sessionId": self.source_id,
            "path": str(self.entry.path),
            "messages": self.plan.messages,
            "items": len(self.plan.items),
            "toolCalls": self.plan.tool_calls,
            "skippedMessages": self.plan.skipped_messages,
            "skippedLines": self.skipped_lines,
            "cwd": str(self.session.cwd),
            "sourceCwd": self.source_cwd,
            "imagesLeftOut": self.plan.images_left_out,
        }


class HistoryService:
    def __init__(self, deps: EngineDeps, manager: SessionManager) -> None:
        self.manager = manager
        self.index = HistoryIndex(
            HistoryRoots(
                codex_home=deps.codex_home,
                claude_dir=deps.claude_dir,
                cody_sessions=deps.store.sessions_dir,
            )
        )
        self._store = deps.store
        self._scans = deps.scans

    async def list(
        self, agent: str | None, cwd: str | None, cursor: str | None, query: str | None = None
    ) -> dict[str, Any]:
        return await self._scans.run(list_sessions, self.index, agent, cwd, cursor, query)

    async def read(
        self,
        agent: str | None,
        session_id: str | None,
        path: str | None,
        *,
        cursor: str | None,
        limit: int | None,
        include_original: bool,
    ) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            entry = resolve(self.index, agent, session_id, path)
            return read_messages(
                self.index, entry, cursor, limit or DEFAULT_PAGE, include_original=include_original
            )

        return await self._scans.run(work)

    async def session_history(
        self, session_id: str, cursor: str | None, limit: int | None, include_original: bool
    ) -> dict[str, Any]:
        """A Cody session's messages (all of them unless `limit`), from its file."""
        path = self._store.find(session_id)
        entry = SessionFile("cody", "cody-session", path)

        def work() -> dict[str, Any]:
            result = read_messages(
                self.index, entry, cursor, limit, include_original=include_original
            )
            result.pop("session", None)
            return result

        return await self._scans.run(work)

    async def import_session(
        self,
        agent: str | None,
        session_id: str | None,
        path: str | None,
        cwd: str,
        meta: CodySessionMeta | None,
    ) -> ImportOutcome:
        """A new Cody session in `cwd` holding the file's conversation. The file's own cwd
        is reported, never used: a session file may name any directory (`/`), and the
        workspace is what approvals and the sandbox are measured against."""
        check_cwd(cwd)  # before the file is read

        def work() -> tuple[SessionFile, ImportPlan, int, str, str | None]:
            entry = resolve(self.index, agent, session_id, path)
            scan = FileScan(entry)
            plan = plan_import(scan.messages())
            source_id = scan.session_id or session_id or entry.path.stem
            return entry, plan, scan.skipped_lines, source_id, scan.cwd

        entry, plan, skipped, source_id, source_cwd = await self._scans.run(work)
        session = await self.manager.new_session(cwd, meta)
        session.file.append(
            "event",
            {"kind": "imported", "agent": entry.agent, "from": source_id, "path": str(entry.path)},
        )
        for item in plan.items:
            session.history.append(item)
            session.file.append("response_item", item.payload())
        await session.file.sync()
        return ImportOutcome(
            session=session,
            entry=entry,
            source_id=source_id,
            plan=plan,
            skipped_lines=skipped,
            source_cwd=source_cwd,
        )
