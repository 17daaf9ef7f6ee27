"""`session/prompt` and `session/cancel` (PROTOCOL.md "A turn")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import WireModel
from .content import ContentBlock

__all__ = [
    "CancelParams",
    "CodyPromptMeta",
    "PromptMeta",
    "PromptParams",
    "PromptResult",
    "StopReason",
    "TokenUsage",
    "TurnCost",
    "TurnUsage",
]

StopReason = Literal["end_turn", "cancelled", "max_turn_requests", "max_tokens", "refusal"]


class PromptParams(WireModel):
    session_id: str
    prompt: list[ContentBlock] = Field(min_length=1)


class TokenUsage(WireModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    thought_tokens: int = 0
    cached_read_tokens: int = 0
    cached_write_tokens: int = 0


class TurnUsage(WireModel):
    last: TokenUsage
    """The last model call of the turn (its input is the context in use)."""
    turn: TokenUsage
    """All model calls of this turn."""
    total: TokenUsage
    """All model calls of the session, across restarts."""


class TurnCost(WireModel):
    """Cost in USD from the shipped price table; absent when the model has no known price
    or the calls are not billed per token (a ChatGPT or Claude subscription login)."""

    last: float
    turn: float
    total: float
    currency: str = "USD"


class CodyPromptMeta(WireModel):
    turn_id: str
    usage: TurnUsage
    cost: TurnCost | None = None


class PromptMeta(WireModel):
    cody: CodyPromptMeta


class PromptResult(WireModel):
    stop_reason: StopReason
    usage: TokenUsage | None = None
    """ACP's `usage` (unstable in SDK 2.4.0, shape `Usage`): this turn's tokens."""
    meta: PromptMeta | None = Field(default=None, alias="_meta")


class CancelParams(WireModel):
    session_id: str
