"""Engine events -> ACP `session/update` payloads.

Text chunks are built as plain dicts (the hot path); everything else goes through the
protocol models, so the wire shape has one definition. A unit test checks both against
the models and ACP's schema.
"""

from __future__ import annotations

from typing import Any

from cody_protocol.commands import AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate
from cody_protocol.content import ContentToolCallContent, ImageContent, TextContent
from cody_protocol.extensions import DiagnosticInfo, DiagnosticsNotification, McpStatusNotification
from cody_protocol.updates import (
    CodySessionInfoMeta,
    CompactionNotice,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    PlanEntry,
    PlanUpdate,
    SessionInfoMeta,
    SessionInfoUpdate,
    ToolCallDecision,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)
from cody_protocol.updates import Cost as WireCost

from ..engine.events import (
    AgentText,
    AgentThought,
    CallDecision,
    CommandsAvailable,
    Compacted,
    ConfigChanged,
    DiagnosticsReported,
    EngineEvent,
    McpStatusChanged,
    PlanChanged,
    TitleChanged,
    ToolCallOpened,
    ToolCallOutput,
    ToolCallOutputEnd,
    ToolCallProgress,
    UsageChanged,
    UserImage,
    UserText,
)

__all__ = [
    "APPENDED_OUTPUT_META",
    "chunk_update",
    "decision_meta",
    "diagnostics_params",
    "event_updates",
    "mcp_status_params",
]

APPENDED_OUTPUT_META = {"cody": {"appendOutput": True}}
"""`_meta` of a live-output `tool_call_update` whose text continues the previous ones, sent
only to a client that opted in (`_meta.cody.appendOutput`; others get the output so far,
rpc/output_so_far.py, as ACP's `content` replaces)."""


def decision_meta(decision: CallDecision | None) -> dict[str, Any] | None:
    """`{"cody": {"decision": {by, detail, outcome}}}`: what decided a call (or None)."""
    if decision is None:
        return None
    wire = ToolCallDecision(by=decision.by, detail=decision.detail, outcome=decision.outcome)
    return {"cody": {"decision": wire.wire()}}


def chunk_update(kind: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def event_updates(event: EngineEvent) -> list[dict[str, Any]]:
    """The `update` objects for one event (usually one; a mode change adds a second, a user
    message replayed with its content blocks one per block)."""
    if isinstance(event, AgentText):
        return [chunk_update("agent_message_chunk", event.text, event.message_id)]
    if isinstance(event, AgentThought):
        return [chunk_update("agent_thought_chunk", event.text, event.message_id)]
    if isinstance(event, UserText):
        if event.blocks:
            return [_block_update(block, event.message_id) for block in event.blocks]
        return [chunk_update("user_message_chunk", event.text, event.message_id)]
    if isinstance(event, UserImage):
        image = ImageContent(data=event.data, mime_type=event.mime_type)
        return [UserMessageChunk(content=image, message_id=event.message_id).wire()]
    if isinstance(event, ToolCallOpened):
        return [
            ToolCallStart(
                tool_call_id=event.call_id,
                title=event.title,
                kind=event.kind,
                status=event.status,
                raw_input=event.raw_input,
                content=event.content,
                raw_output=event.raw_output,
                locations=event.locations,
                meta=decision_meta(event.decision),
            ).wire()
        ]
    if isinstance(event, ToolCallProgress):
        return [
            ToolCallUpdate(
                tool_call_id=event.call_id,
                status=event.status,
                title=event.title,
                content=event.content,
                raw_input=event.raw_input,
                raw_output=event.raw_output,
                locations=event.locations,
                meta=decision_meta(event.decision),
            ).wire()
        ]
    if isinstance(event, ToolCallOutput):
        return [
            ToolCallUpdate(
                tool_call_id=event.call_id,
                content=[ContentToolCallContent(content=TextContent(text=event.text))],
                meta=APPENDED_OUTPUT_META,
            ).wire()
        ]
    if isinstance(event, ToolCallOutputEnd):
        return []  # shown only as a terminal's exit (rpc/live_output.py)
    if isinstance(event, PlanChanged):
        return [
            PlanUpdate(
                entries=[PlanEntry(content=step, status=status) for step, status in event.entries]
            ).wire()
        ]
    if isinstance(event, UsageChanged):
        cost = (
            WireCost(amount=event.cost_usd, currency="USD") if event.cost_usd is not None else None
        )
        return [UsageUpdate(used=event.used, size=event.size, cost=cost).wire()]
    if isinstance(event, ConfigChanged):
        updates = [ConfigOptionUpdate(config_options=event.options).wire()]
        if event.mode_changed:
            updates.append(CurrentModeUpdate(current_mode_id=event.mode_id).wire())
        return updates
    if isinstance(event, TitleChanged):
        return [SessionInfoUpdate(title=event.title).wire()]
    if isinstance(event, McpStatusChanged):
        return []  # not a session update: sent as `_cody/mcp/status` (see mcp_status_params)
    if isinstance(event, DiagnosticsReported):
        return []  # not a session update: sent as `_cody/diagnostics` (diagnostics_params)
    if isinstance(event, Compacted):
        notice = CompactionNotice(
            reason=event.reason,
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
            summarized_items=event.summarized_items,
            kept_items=event.kept_items,
        )
        meta = SessionInfoMeta(cody=CodySessionInfoMeta(compaction=notice))
        return [SessionInfoUpdate(meta=meta).wire()]
    if isinstance(event, CommandsAvailable):
        commands = [
            AvailableCommand(
                name=name,
                description=description,
                input=AvailableCommandInput(hint=hint) if hint is not None else None,
            )
            for name, description, hint in event.commands
        ]
        return [AvailableCommandsUpdate(available_commands=commands).wire()]
    raise TypeError(f"unknown engine event {type(event).__name__}")


def _block_update(block: dict[str, Any], message_id: str | None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "user_message_chunk", "content": block}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def mcp_status_params(session_id: str, event: McpStatusChanged) -> dict[str, Any]:
    """The params of a `_cody/mcp/status` notification."""
    return McpStatusNotification(
        session_id=session_id,
        server=event.server,
        state=event.state,
        reason=event.reason,
        tools=event.tools,
    ).wire()


def diagnostics_params(session_id: str, event: DiagnosticsReported) -> dict[str, Any]:
    """The params of a `_cody/diagnostics` notification."""
    return DiagnosticsNotification(
        session_id=session_id,
        tool_call_id=event.call_id,
        path=event.path,
        diagnostics=[
            DiagnosticInfo(
                line=d.line,
                column=d.column,
                end_line=d.end_line,
                end_column=d.end_column,
                severity=d.severity,
                message=d.message,
                code=d.code,
                source=d.source,
            )
            for d in event.diagnostics
        ],
        servers=list(event.servers),
        late=list(event.late),
    ).wire()
