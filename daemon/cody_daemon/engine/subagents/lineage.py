"""Where a child session comes from: its parent session, the parent's `task` call, its agent.

Recorded in the child's `session_meta` line (`parent`), restored when the session is opened
again, and reported on the wire (`parentSessionId` in `session/list`, `_meta.cody` of its
updates and permission requests). A value read from a session file is data only: it names
sessions, it decides nothing about what the child may do (its settings do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cody_protocol.prompt import TokenUsage

__all__ = ["ChildTotals", "Lineage"]

_MAX_TEXT = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class Lineage:
    parent_session_id: str
    parent_tool_call_id: str | None
    agent: str
    depth: int
    """1 for a child of a top-level session, 2 for its child..."""

    def record(self) -> dict[str, Any]:
        """The `parent` field of the child's `session_meta` line."""
        return {
            "sessionId": self.parent_session_id,
            "toolCallId": self.parent_tool_call_id,
            "agent": self.agent,
            "depth": self.depth,
        }

    @classmethod
    def from_record(cls, value: Any) -> Lineage | None:
        """The lineage a session file recorded; None when absent or malformed."""
        if not isinstance(value, dict):
            return None
        parent, call, agent, depth = (
            value.get("sessionId"),
            value.get("toolCallId"),
            value.get("agent"),
            value.get("depth"),
        )
        if not isinstance(parent, str) or not isinstance(agent, str):
            return None
        if not _plain(parent) or not (call is None or _plain(call)) or not _plain(agent):
            return None
        if type(depth) is not int or not 1 <= depth <= 16:
            return None
        return cls(parent_session_id=parent, parent_tool_call_id=call, agent=agent, depth=depth)


def _plain(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= _MAX_TEXT
        and value.isprintable()
        and value == value.strip()
    )


@dataclass(slots=True)
class ChildTotals:
    """What a session's children used: part of the session's own totals, kept apart too
    (restored from the session file's `subagent_usage` events)."""

    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    sessions: int = 0

    @classmethod
    def from_record(cls, value: Any) -> ChildTotals:
        """The totals of the last `subagent_usage` event (zero when absent or malformed)."""
        if not isinstance(value, dict):
            return cls()
        usage, cost, sessions = value.get("usage"), value.get("costUsd"), value.get("sessions")
        try:
            parsed = TokenUsage.model_validate(usage if isinstance(usage, dict) else {})
        except ValueError:
            parsed = TokenUsage()
        return cls(
            usage=parsed,
            cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
            sessions=sessions if type(sessions) is int and sessions >= 0 else 0,
        )

    def record(self) -> dict[str, Any]:
        return {
            "usage": self.usage.model_dump(),
            "costUsd": self.cost_usd,
            "sessions": self.sessions,
        }
