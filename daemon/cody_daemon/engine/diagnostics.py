"""The post-edit step: what the language servers found new after a tool changed files.

The turn calls `begin` before a call runs (for tools whose `file_effects` says they change
files) and `finish` with its result. For an edit (`declared`), the servers of the files it
will touch start and learn those files' diagnostics while approval and the edit happen;
afterwards the edited files (their text before and after, from the result's diffs) are
checked. For a command (`any`), the files the servers already hold are checked again.

Invariants:
- The step adds at most `[lsp] diagnostics_timeout_ms` to a call, whatever the servers do,
  and never fails it: the tool's own result is kept, and only the new errors and warnings
  (at most `[lsp] max_diagnostics`) are appended, to the text the model gets and to the
  call's content, as `path:line:col severity code message` lines.
- Every checked file is also sent to the client as a `DiagnosticsReported` event
  (`_cody/diagnostics`), an empty list meaning "nothing new".
- Nothing happens without language servers (`EngineDeps.code` None) or for other tools.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cody_protocol.content import ContentToolCallContent, DiffToolCallContent, TextContent
from cody_protocol.updates import ToolCallLocation

from ..core.code_intel import EditedFile, FileDiagnostics
from ..tools.base import Tool, ToolResult
from .events import DiagnosticsReported, EngineEvent
from .ports import CodeServers
from .session import Session
from .toolcalls import text_content

__all__ = ["EditChecks", "diagnostics_text"]

logger = logging.getLogger(__name__)


class EditChecks:
    """The diagnostics step of one turn."""

    def __init__(
        self,
        servers: CodeServers | None,
        session: Session,
        *,
        env: Mapping[str, str],
        hidden_files: tuple[Path, ...],
        emit: Callable[[EngineEvent], None],
        redact: Callable[[str], str],
    ) -> None:
        self._servers = servers
        self._session = session
        self._emit = emit
        self._redact = redact
        settings = session.settings
        self._config = settings.lsp_config
        if servers is not None:
            servers.attach(
                session.id,
                cwd=session.cwd,
                config=self._config,
                trusted=settings.project_trusted,
                env=env,
                hidden_files=hidden_files,
            )

    def begin(self, tool: Tool[Any], locations: Sequence[ToolCallLocation]) -> None:
        """Before the call: let the servers of the files it will edit get ready."""
        if self._servers is None or tool.file_effects != "declared":
            return
        self._servers.prepare(self._session.id, [Path(loc.path) for loc in locations])

    async def finish(self, call_id: str, tool: Tool[Any], result: ToolResult) -> ToolResult:
        """The call's result with the new diagnostics of the files it changed appended."""
        servers = self._servers
        if servers is None or tool.file_effects == "none":
            return result
        bound_s = self._config.diagnostics_timeout_ms / 1000
        if tool.file_effects == "declared":
            if not result.success:
                return result
            edits = await _edited_files(result)
            reports = await servers.check(self._session.id, edits, bound_s)
        else:
            reports = await servers.recheck(self._session.id, bound_s)
        if not reports:
            return result
        redact = self._redact  # messages quote the code (a literal may hold a key)
        for report in reports:
            self._emit(
                DiagnosticsReported(
                    call_id=call_id,
                    path=report.path,
                    diagnostics=tuple(replace(d, message=redact(d.message)) for d in report.new),
                    servers=report.servers,
                    late=tuple(redact(entry) for entry in report.late),
                )
            )
        text = diagnostics_text(reports, self._session.cwd, self._config.max_diagnostics)
        content = [*(result.content or text_content(result.output))]
        content.append(ContentToolCallContent(content=TextContent(text=text)))
        # The engine redacts the whole result (`TurnCalls.finish`) before it is stored or sent.
        return replace(result, output=f"{result.output}\n\n{text}", content=content)


async def _edited_files(result: ToolResult) -> list[EditedFile]:
    """The files an edit changed, from its diffs (a deleted file has no text after)."""
    edits = []
    for block in result.content:
        if not isinstance(block, DiffToolCallContent):
            continue
        path = Path(block.path)
        gone = block.new_text == "" and not await asyncio.to_thread(os.path.lexists, path)
        edits.append(
            EditedFile(path=path, before=block.old_text, after=None if gone else block.new_text)
        )
    return edits


def diagnostics_text(reports: Sequence[FileDiagnostics], cwd: Path, limit: int) -> str:
    """What the model reads after the tool's own output (see the module doc)."""
    found = sorted(
        (d for report in reports for d in report.new),
        key=lambda d: (d.severity != "error", d.path, d.line, d.column),
    )
    servers = sorted({name for report in reports for name in report.servers})
    late = sorted({entry for report in reports for entry in report.late})
    who = f" ({', '.join(servers)})" if servers else ""
    if found:
        errors = sum(1 for d in found if d.severity == "error")
        counts = [_count(errors, "error"), _count(len(found) - errors, "warning")]
        lines = [f"Diagnostics{who}, new since this change: {', '.join(c for c in counts if c)}"]
        lines += [d.render(cwd) for d in found[:limit]]
        if len(found) > limit:
            lines.append(f"... and {len(found) - limit} more")
        if not all(report.baseline for report in reports):
            lines.append("(earlier diagnostics were not known in time: changed lines only)")
    elif servers:
        lines = [f"Diagnostics{who}: no new problems."]
    else:
        lines = ["Diagnostics: not checked."]
    if late:
        lines.append(f"Not checked in time: {'; '.join(late)}")
    return "\n".join(lines)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}" if number else ""
