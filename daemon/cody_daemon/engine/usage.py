"""Token usage arithmetic (per model call, per turn, per session)."""

from __future__ import annotations

from cody_protocol.prompt import TokenUsage

from ..providers.base import UsageReport

__all__ = ["add_usage", "usage_from_report"]


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
