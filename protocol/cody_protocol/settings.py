"""Value sets shared by the wire contract and the daemon's configuration.

These literals are the single definition of each setting's valid values; config
validation and `_meta.cody` validation both name them in their errors.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "APPROVAL_POLICIES",
    "BACKENDS",
    "REASONING_EFFORTS",
    "REASONING_SUMMARIES",
    "SANDBOX_MODES",
    "ApprovalPolicy",
    "Backend",
    "Phase",
    "ReasoningEffort",
    "ReasoningSummary",
    "SandboxMode",
    "SandboxUnavailable",
    "WireApi",
    "ProviderWireApi",
    "WIRE_APIS",
]

ApprovalPolicy = Literal["untrusted", "on-request", "on-failure", "never"]
SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SandboxUnavailable = Literal["ask", "refuse", "allow"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
ReasoningSummary = Literal["auto", "concise", "detailed", "none"]
WireApi = Literal["responses", "chat", "anthropic"]
"""The model APIs Cody speaks (`wire_api` of a provider); each has one provider module, chosen
in the daemon's providers/pool.py. The one place the names are written out."""
ProviderWireApi = Literal[WireApi, "offline"]
"""A provider's API: a `WireApi`, or `offline` (the built-in provider that needs no network)."""
Phase = Literal["research", "plan", "implement"]
Backend = Literal["native", "codex", "claude"]

APPROVAL_POLICIES: tuple[str, ...] = get_args(ApprovalPolicy)
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
REASONING_EFFORTS: tuple[str, ...] = get_args(ReasoningEffort)
REASONING_SUMMARIES: tuple[str, ...] = get_args(ReasoningSummary)
BACKENDS: tuple[str, ...] = get_args(Backend)
WIRE_APIS: tuple[WireApi, ...] = get_args(WireApi)
