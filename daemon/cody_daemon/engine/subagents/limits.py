"""What a child session may do: its parent's permissions, narrowed by its agent profile.

Invariants (docs/subagents.md "Permissions"):
- a child's approval policy and sandbox mode are its profile's only when no looser than its
  parent's (`POLICY_LOOSENESS`, `SANDBOX_LOOSENESS`), else the parent's;
- its tools are the parent's allowed tools, narrowed by the profile's `tools` and `phase`
  (a profile cannot add a tool the parent may not use);
- its model is the profile's when the parent's provider has it, else the parent's; its
  provider is always the parent's (a profile never sends the conversation elsewhere);
- at most the parent's `max_tool_iterations` model calls per turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from cody_protocol.session import CodySessionMeta
from cody_protocol.settings import ApprovalPolicy, SandboxMode

from ...core.tooling import ToolFacts
from ...policy.allowlist import allowed_tools, phase_tools
from ..settings import SessionSettings
from .profiles import AgentProfile

__all__ = ["POLICY_LOOSENESS", "SANDBOX_LOOSENESS", "ChildPlan", "child_plan"]

POLICY_LOOSENESS: Final[dict[str, int]] = {
    "untrusted": 0,
    "on-request": 1,
    "on-failure": 2,
    "never": 3,
}
"""How little each approval policy asks (higher: fewer questions)."""
SANDBOX_LOOSENESS: Final[dict[str, int]] = {
    "read-only": 0,
    "workspace-write": 1,
    "danger-full-access": 2,
}


@dataclass(slots=True)
class ChildPlan:
    meta: CodySessionMeta
    """What `session/new` would have been asked for the child."""
    notes: list[str] = field(default_factory=list)
    """What the profile asked for and did not get (told to the parent's model)."""


def child_plan(
    parent: SessionSettings,
    profile: AgentProfile,
    *,
    has_model: Callable[[str], bool],
    tool_facts: Mapping[str, ToolFacts],
) -> ChildPlan:
    """`tool_facts`: what Cody's tools can do (`ToolRegistry.facts()`), for the phases."""
    notes: list[str] = []
    policy: ApprovalPolicy = parent.approval_policy
    if profile.approval_policy is not None:
        if POLICY_LOOSENESS[profile.approval_policy] <= POLICY_LOOSENESS[policy]:
            policy = profile.approval_policy
        else:
            notes.append(
                f"approval policy {profile.approval_policy} is looser than yours ({policy}): "
                "yours applies"
            )
    sandbox: SandboxMode = parent.sandbox_mode
    if profile.sandbox_mode is not None:
        if SANDBOX_LOOSENESS[profile.sandbox_mode] <= SANDBOX_LOOSENESS[sandbox]:
            sandbox = profile.sandbox_mode
        else:
            notes.append(
                f"sandbox {profile.sandbox_mode} is looser than yours ({sandbox}): yours applies"
            )
    model = parent.model
    if profile.model is not None and profile.model != parent.model:
        if has_model(profile.model):
            model = profile.model
        else:
            notes.append(
                f"model {profile.model!r} is not a model of {parent.provider}: "
                f"{parent.model} runs it"
            )
    allowed = allowed_tools(parent.allowed_tools, parent.phase, tool_facts)
    narrowed = [profile.tools]
    if profile.phase is not None:
        narrowed.append(phase_tools(profile.phase, tool_facts))
    for tools in narrowed:
        if tools is not None:
            allowed = tools if allowed is None else allowed & tools
    iterations = parent.max_tool_iterations
    if profile.max_turns is not None:
        iterations = min(iterations, profile.max_turns)
    meta = CodySessionMeta(
        provider=parent.provider,
        model=model,
        approval_policy=policy,
        sandbox_mode=sandbox,
        reasoning_effort=parent.reasoning_effort,
        reasoning_summary=parent.reasoning_summary,
        allowed_tools=sorted(allowed) if allowed is not None else None,
        backend="native",
        config={"max_tool_iterations": iterations},
    )
    return ChildPlan(meta=meta, notes=notes)
