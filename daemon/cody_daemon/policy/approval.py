"""The approval decision for one tool call (docs/protocol.md "Approvals", order of decision).

    allowlist -> credentials -> sandbox -> hooks -> session rejections -> session grants
    -> policy

(`credentials`: a call that would read a login file is refused in every policy and mode.)

`hooks`: what the PreToolUse hooks answered (`CallFacts.hook`, engine/turn_hooks.py): `deny`
refuses the call with the hook's reason; `ask` asks the user (a rejection of the user's
stands; under `never` nobody can be asked, so the call is refused); `allow` runs it without
asking, except that a rejection of the user's still stands and a command that would run
without the sandbox still warns first (`sandbox_unavailable = "ask"`).

`decide` is pure: the engine gathers the facts (`CallFacts`) and acts on the `Verdict`.
Turn-level rejections (`reject_once` answers) are checked with the session rejections, so
a denial is never re-asked within a turn through an equivalent spelling of the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from cody_protocol.settings import ApprovalPolicy, SandboxUnavailable

from ..core.tooling import GrantKey

__all__ = [
    "Allow",
    "Ask",
    "CallFacts",
    "Deny",
    "Grants",
    "HookDecision",
    "Verdict",
    "decide",
]

AllowReason = Literal["policy", "grant", "read-only tool", "known-safe command", "hook"]
DenyReason = Literal[
    "allowlist", "credentials", "sandbox", "session rejection", "turn rejection", "policy", "hook"
]


@dataclass(frozen=True, slots=True)
class HookDecision:
    """What the PreToolUse hooks decided (the strongest of their answers)."""

    decision: Literal["allow", "deny", "ask"]
    reason: str
    """Why (a deny's reason is what the model is told)."""
    command: str
    """The deciding hook's command (the decision's audit names it)."""


@dataclass(frozen=True, slots=True)
class Allow:
    reason: AllowReason


@dataclass(frozen=True, slots=True)
class Deny:
    reason: DenyReason
    message: str
    """What the model is told (as `{"error": message}`)."""


@dataclass(frozen=True, slots=True)
class Ask:
    unsandboxed: bool
    """The call would run outside the sandbox; the request must say so plainly."""


Verdict = Allow | Deny | Ask


@dataclass(slots=True)
class Grants:
    """Session-scoped grants and rejections, plus the current turn's rejections."""

    allowed: set[GrantKey] = field(default_factory=set)
    rejected: set[GrantKey] = field(default_factory=set)
    turn_rejected: set[GrantKey] = field(default_factory=set)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallFacts:
    tool_name: str
    requires_approval: bool
    allowed_by_allowlist: bool
    sandbox_violation: str | None
    """Why the sandbox forbids the call, or None."""
    credential_refusal: str | None = None
    """Why the call may not run whatever the policy (it would read a login file), or None."""
    unsandboxed: bool
    """The call would run a process without the isolation the sandbox mode asks for."""
    sandbox_unavailable: SandboxUnavailable
    no_sandbox_because: str = "bubblewrap missing"
    """Why an `unsandboxed` call has no sandbox (said in refusals; a backend CLI names itself)."""
    known_safe: bool
    """An `exec` of a known-safe read-only command."""
    grant_key: GrantKey
    policy: ApprovalPolicy
    failure_seen: bool
    """A tool result in this turn has failed (for `on-failure`)."""
    hook: HookDecision | None = None
    """What the PreToolUse hooks decided (None: no hook decided)."""


def decide(facts: CallFacts, grants: Grants) -> Verdict:
    if not facts.allowed_by_allowlist:
        return Deny(
            "allowlist",
            f"tool '{facts.tool_name}' is not allowed in this session (allowedTools/phase)",
        )
    if facts.credential_refusal is not None:
        return Deny("credentials", f"refused: {facts.credential_refusal}")
    if facts.sandbox_violation is not None:
        return Deny("sandbox", f"blocked by the sandbox: {facts.sandbox_violation}")
    if facts.unsandboxed and facts.sandbox_unavailable == "refuse":
        return Deny(
            "sandbox",
            f"cannot run: no sandbox is available ({facts.no_sandbox_because}) and "
            'sandbox_unavailable = "refuse"',
        )
    if facts.hook is not None and facts.hook.decision == "deny":
        hook = facts.hook
        return Deny("hook", hook.reason or f"blocked by the PreToolUse hook `{hook.command}`")
    if facts.grant_key in grants.rejected:
        return Deny("session rejection", "User denied approval")
    if facts.grant_key in grants.turn_rejected:
        return Deny("turn rejection", "User denied approval")
    must_warn = facts.unsandboxed and facts.sandbox_unavailable == "ask"
    if facts.hook is not None:
        if facts.hook.decision == "allow" and not must_warn:
            return Allow("hook")
        if facts.policy == "never":
            return Deny(
                "hook",
                f"the PreToolUse hook `{facts.hook.command}` asks for approval, but the "
                "approval policy is `never`, so nobody can be asked",
            )
        return Ask(unsandboxed=facts.unsandboxed)
    if facts.grant_key in grants.allowed:
        return Allow("grant")
    if facts.policy == "never":
        if must_warn:
            return Deny(
                "policy",
                f"cannot run: no sandbox is available ({facts.no_sandbox_because}), approval "
                'policy is `never` and sandbox_unavailable = "ask", so the command was refused',
            )
        return Allow("policy")
    if not facts.requires_approval:
        return Allow("read-only tool")
    if facts.policy == "untrusted":
        if facts.known_safe and not must_warn:
            return Allow("known-safe command")
        return Ask(unsandboxed=facts.unsandboxed)
    if facts.policy == "on-failure" and not facts.failure_seen and not must_warn:
        return Allow("policy")
    return Ask(unsandboxed=facts.unsandboxed)
