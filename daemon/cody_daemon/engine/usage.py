"""Token usage arithmetic (per model call, per turn, per session) and its bookkeeping."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cody_protocol.prompt import TokenUsage

from ..providers.base import UsageReport
from ..providers.pricing import Price, cost_usd

if TYPE_CHECKING:
    from .session import Session

__all__ = ["add_usage", "record_call", "usage_from_report"]


def usage_from_report(report: UsageReport) -> TokenUsage:
    return TokenUsage(
        input_tokens=report.input_tokens,
        output_tokens=report.output_tokens,
        total_tokens=report.input_tokens + report.output_tokens,
        thought_tokens=report.reasoning_tokens,
        cached_read_tokens=report.cached_input_tokens,
        cached_write_tokens=report.cache_write_tokens,
    )


def add_usage(left: TokenUsage, right: TokenUsage) -> TokenUsage:
    return TokenUsage(
        input_tokens=left.input_tokens + right.input_tokens,
        output_tokens=left.output_tokens + right.output_tokens,
        total_tokens=left.total_tokens + right.total_tokens,
        thought_tokens=left.thought_tokens + right.thought_tokens,
        cached_read_tokens=left.cached_read_tokens + right.cached_read_tokens,
        cached_write_tokens=left.cached_write_tokens + right.cached_write_tokens,
    )


def record_call(
    session: Session, report: UsageReport, price: Price | None, turn_id: str | None
) -> tuple[TokenUsage, float | None]:
    """Add one model call's usage (and cost, when priced) to the session's totals and write the
    `usage` event; returns the call's usage and cost."""
    last = usage_from_report(report)
    session.usage_total = add_usage(session.usage_total, last)
    event: dict[str, Any] = {
        "kind": "usage",
        "turnId": turn_id,
        "last": last.model_dump(),
        "total": session.usage_total.model_dump(),
    }
    cost: float | None = None
    if price is not None:
        cost = cost_usd(price, last)
        session.cost_total_usd += cost
        event["costUsd"] = {"last": cost, "total": session.cost_total_usd}
    session.file.append("event", event)
    return last, cost
