"""A live session: its settings, history, grants, usage, open file and running turn.

Invariants: at most one turn runs at a time (`turn` is set while it runs); every history
item is in the session file before the turn that produced it answers; the file stays
locked while the session is live.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from cody_protocol.prompt import TokenUsage

from ..policy.approval import Grants
from ..store.session_file import SessionFile
from .history import HistoryItem
from .settings import SessionSettings

__all__ = ["Session", "TurnOutcome"]


@dataclass(kw_only=True)
class TurnOutcome:
    stop_reason: str
    turn_id: str
    last: TokenUsage
    turn: TokenUsage
    total: TokenUsage


@dataclass(kw_only=True, eq=False)
class Session:
    id: str
    cwd: Path
    created: str
    settings: SessionSettings
    file: SessionFile
    history: list[HistoryItem] = field(default_factory=list)
    grants: Grants = field(default_factory=Grants)
    usage_total: TokenUsage = field(default_factory=TokenUsage)
    title: str | None = None
    turn: asyncio.Task[TurnOutcome] | None = None

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()
