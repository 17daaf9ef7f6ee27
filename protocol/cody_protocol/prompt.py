"""`session/prompt` and `session/cancel` (docs/protocol.md "A turn")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import WireModel
from .content import ContentBlock

__all__ = [
    "CancelParams",
    "CodyPromptMeta",
    "CodyPromptParamsMeta",
    "DryRunReport",
    "PromptMeta",
    "PromptParams",
    "PromptParamsMeta",
    "PromptResult",
    "SteerParams",
    "SteerResult",
    "StopReason",
    "SubagentTotals",
    "StructuredOutput",
    "TokenUsage",
    "TurnCost",
    "TurnUsage",
]

StopReason = Literal["end_turn", "cancelled", "max_turn_requests", "max_tokens", "refusal"]


class CodyPromptParamsMeta(WireModel):
    dry_run: bool = False
    """Answer with what the turn would run (`_meta.cody.dryRun` of the result); run nothing."""
    queue: bool = False
    """While a turn runs in the session, wait for it (and the prompts queued before this one)
    and then run, instead of answering -32011. `session/cancel` answers every queued prompt
    `{stopReason: "cancelled"}`."""
    output_schema: dict[str, Any] | None = None
    """A JSON Schema the turn's final answer must validate against (`cody-client exec
    --output-schema`): the model is asked for it through the API's structured output, or a
    final `respond` tool; the result's `_meta.cody.output` says whether it did."""


class PromptParamsMeta(WireModel):
    cody: CodyPromptParamsMeta | None = None


class PromptParams(WireModel):
    session_id: str
    prompt: list[ContentBlock] = Field(min_length=1)
    meta: PromptParamsMeta | None = Field(default=None, alias="_meta")


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


class DryRunReport(WireModel):
    """What a turn would run, without running it (`session/prompt` with `_meta.cody.dryRun`)."""

    backend: str
    """`native`, `codex` or `claude`."""
    command: list[str] | None = None
    """The exact argv of the agent CLI (None for the native loop, or when the CLI is missing)."""
    cwd: str
    env: list[str] = Field(default_factory=list)
    """Names (never values) of the environment variables the CLI gets that affect it."""
    flags: dict[str, Any] = Field(default_factory=dict)
    """The mapped settings: approval policy, sandbox, permission mode, model, ..."""
    allowed_tools: list[str] | None = None
    """The effective Cody tool allowlist (None: every tool)."""
    backend_tools: list[str] | None = None
    """The same allowlist in the agent's own tool names (None: every tool)."""
    requests: list[dict[str, Any]] = Field(default_factory=list)
    """The protocol messages the daemon would send to the CLI for this turn, in order."""
    found: bool = True
    """False when the CLI is not installed (`notes` then says how to install it)."""
    notes: list[str] = Field(default_factory=list)
    """What the backend cannot enforce, or how to install/log in."""


class SubagentTotals(WireModel):
    """What the session's child sessions (subagents) used so far: part of `usage.total` and
    `cost.total`, shown apart."""

    usage: TokenUsage
    cost: float | None = None
    """USD, when their models have a known price."""
    sessions: int = 0


class StructuredOutput(WireModel):
    """The final answer of a turn run with `_meta.cody.outputSchema`."""

    valid: bool
    """It parsed as JSON and validated against the schema (after at most one retry)."""
    value: Any = None
    """The parsed answer when `valid` (any JSON value, `null` included)."""
    text: str | None = None
    """The model's final answer as it wrote it (the `respond` tool's arguments when the tool
    was used); None when it gave none."""
    errors: list[str] = Field(default_factory=list)
    """Why the last answer did not validate (JSON errors, schema violations with their path)."""
    via: Literal["response_format", "tool"] = "response_format"
    """How the schema reached the model: the API's structured output, or the `respond` tool."""


class CodyPromptMeta(WireModel):
    turn_id: str
    usage: TurnUsage
    cost: TurnCost | None = None
    dry_run: DryRunReport | None = None
    subagents: SubagentTotals | None = None
    """Present once the session's `task` calls started child sessions."""
    output: StructuredOutput | None = None
    """With `_meta.cody.outputSchema`: the validated answer (or why it is not one)."""


class PromptMeta(WireModel):
    cody: CodyPromptMeta


class PromptResult(WireModel):
    stop_reason: StopReason
    usage: TokenUsage | None = None
    """ACP's `usage` (unstable in SDK 2.4.0, shape `Usage`): this turn's tokens."""
    meta: PromptMeta | None = Field(default=None, alias="_meta")


class CancelParams(WireModel):
    session_id: str


class SteerParams(WireModel):
    """`_cody/session/steer`: add a user message to the running turn (docs/protocol.md)."""

    session_id: str
    prompt: list[ContentBlock] = Field(min_length=1)


class SteerResult(WireModel):
    turn_id: str
    """The running turn the message joined."""
