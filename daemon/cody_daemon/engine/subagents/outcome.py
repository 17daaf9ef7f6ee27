"""A child as its parent sees it: the `task` call's result, and what the child used.

Invariants: the result names the child's session (so the parent's model can collect or
mention it) and, for a worktree child, where its changes are; what a child's turn used is
added to the parent's totals and `Session.children` and recorded in the parent's file as a
`subagent_usage` event (store/reader.py restores both), whatever way the turn ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from cody_protocol.prompt import TokenUsage

from ...core.history import MessageItem
from ...errors import CodyError
from ...tools.base import ToolResult
from ..session import Session
from ..toolcalls import error_result, text_content
from ..usage import add_usage

__all__ = [
    "Child",
    "add_child_usage",
    "answer",
    "final_text",
    "notes_text",
    "raw_output",
    "stopped_text",
]


@dataclass(eq=False, slots=True)
class Child:
    session: Session
    agent: str
    call_id: str
    background: bool
    notes: list[str] = field(default_factory=list)
    """What its profile asked for and did not get (limits.py)."""
    run: asyncio.Task[ToolResult] | None = None
    """A background child's turn."""
    result: ToolResult | None = None
    activity: str = "starting"
    done: bool = False


def answer(child: Child, stop: str, text: str, stopped: list[str]) -> ToolResult:
    """The `task` call's result once the child's turn ended with `stop`, having written
    `text` last; `stopped`: the processes it left running, stopped then."""
    raw = raw_output(child, stop=stop)
    if stop == "cancelled":
        return error_result(
            "The subagent's turn was cancelled before it finished."
            + (f"\nWhat it had written:\n{text}" if text else "")
            + stopped_text(stopped),
            raw,
        )
    head = f"Subagent `{child.agent}` (session {child.session.id}) answered:"
    if stop != "end_turn":
        head = (
            f"Subagent `{child.agent}` (session {child.session.id}) stopped ({stop}) "
            "before it was done; what it wrote:"
        )
    said = text or "(no answer: its last message had no text)"
    where = ""
    worktree = child.session.worktree
    if worktree is not None:
        where = (
            f"\n\nIt worked in its own git worktree, {worktree.path}, on the branch "
            f"{worktree.branch}: its changes are there, not in your checkout."
        )
    return ToolResult(
        output=f"{head}\n\n{said}{where}{notes_text(child.notes)}{stopped_text(stopped)}",
        raw_output=raw,
        content=text_content(said),
    )


def raw_output(
    child: Child, *, stop: str | None = None, background: bool = False
) -> dict[str, Any]:
    """The `task` call's `rawOutput`: the child's session, agent, and (once its turn ended)
    stop reason, usage and cost; where it worked when in a worktree."""
    raw: dict[str, Any] = {"sessionId": child.session.id, "agent": child.agent}
    if stop is not None:
        raw["stopReason"] = stop
        raw["usage"] = child.session.usage_total.model_dump()
        if child.session.cost_total_usd:
            raw["costUsd"] = child.session.cost_total_usd
    if background:
        raw["background"] = True
    worktree = child.session.worktree
    if worktree is not None:
        raw["worktree"] = {"path": str(worktree.path), "branch": worktree.branch}
    return raw


def final_text(session: Session, start: int) -> str:
    """The text of the last assistant message since history index `start`."""
    for item in reversed(session.history[start:]):
        if isinstance(item, MessageItem) and item.role == "assistant" and item.text.strip():
            return item.text.strip()
    return ""


def notes_text(notes: list[str]) -> str:
    if not notes:
        return ""
    return "\n\n(Its profile asked for more than you have: " + "; ".join(notes) + ".)"


def stopped_text(titles: list[str]) -> str:
    """What the `task` call's result says of the processes stopped when the child's turn ended."""
    if not titles:
        return ""
    listed = ", ".join(f"`{title}`" for title in titles)
    which = "the process" if len(titles) == 1 else f"the {len(titles)} processes"
    return f"\n\n(Cody stopped {which} it left running when its turn ended: {listed}.)"


def add_child_usage(parent: Session, child: Child, before: tuple[TokenUsage, float]) -> None:
    """Add what the child's turn used (its totals now, less `before`) to its parent."""
    session = child.session
    used = _difference(session.usage_total, before[0])
    cost = max(session.cost_total_usd - before[1], 0.0)
    totals = parent.children
    totals.usage = add_usage(totals.usage, used)
    totals.cost_usd += cost
    parent.usage_total = add_usage(parent.usage_total, used)
    parent.cost_total_usd += cost
    with contextlib.suppress(CodyError):  # a full disk: the totals are kept in memory
        parent.file.append(
            "event",
            {
                "kind": "subagent_usage",
                "sessionId": session.id,
                "usage": used.model_dump(),
                "costUsd": cost,
                "total": parent.usage_total.model_dump(),
                "costTotal": parent.cost_total_usd,
                "children": totals.record(),
            },
        )


def _difference(after: TokenUsage, before: TokenUsage) -> TokenUsage:
    return TokenUsage(
        **{
            name: max(getattr(after, name) - getattr(before, name), 0)
            for name in TokenUsage.model_fields
        }
    )
