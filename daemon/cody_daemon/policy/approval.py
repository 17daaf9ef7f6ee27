"""The approval decision for one tool call (docs/protocol.md "Approvals", order of decision).

    allowlist -> credentials -> what cannot run at all -> [hooks] -> permission rules
    (deny > ask > allow) -> session and turn rejections -> session grants -> policy

(An allow rule does not apply to a git command in a repository whose own configuration can
make git run a program, nor to a command without a sandbox while `sandbox_unavailable =
"ask"`: such a call goes on as if no allow rule matched.)

(`credentials`: a call that would read a login file is refused in every policy and mode;
what cannot run at all: `sandbox_unavailable = "refuse"` without bubblewrap. Hooks, issue
27, will decide between the refusals and the rules.)

The policy weighs whether the sandbox contains the call (`CallFacts.contained`): under
`on-request` and `on-failure` a contained call runs unasked and a call that needs more
(`escalation`: run outside the sandbox, write outside the writable roots, reach the network,
an MCP tool) asks; `untrusted` asks for everything but known-safe read-only commands;
`never` asks nothing, so what needs more is refused unless it is only the network or an MCP
tool. A caller that cannot tell (an agent CLI's request) leaves `contained` False and
`escalation` None: it asks, except under `on-failure` before a failure (`failure_seen`) and,
under `untrusted`, a known-safe command (checked where it runs) that has a sandbox or needs
none (`unsandboxed` False, or `sandbox_unavailable = "allow"`).

Grants remember how far they go: a call allowed to run outside the sandbox is remembered
under `outside_key(grant_key)`, which also covers the sandboxed call; a sandboxed grant
never covers running outside. A rejection of the sandboxed call also refuses running it
outside; a rejection of running outside leaves the sandboxed call alone.

`decide` is pure: the engine gathers the facts (`CallFacts`) and acts on the `Verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from cody_protocol.settings import ApprovalPolicy, SandboxUnavailable

from ..core.tooling import GrantKey
from .rules import RuleVerdict

__all__ = [
    "Allow",
    "Ask",
    "CallFacts",
    "Deny",
    "Escalation",
    "Grants",
    "Verdict",
    "decide",
    "decided_by",
    "outside_key",
    "remembered_key",
]

AllowReason = Literal["policy", "grant", "read-only tool", "known-safe command", "rule", "sandbox"]
DenyReason = Literal[
    "allowlist",
    "credentials",
    "sandbox",
    "session rejection",
    "turn rejection",
    "policy",
    "rule",
]
Escalation = Literal["escalate", "rerun", "write", "network", "mcp", "other"]
"""Why a call needs more than the sandbox: the model asked to run a command outside it
(`escalate`), a sandboxed command failed and is to run again outside (`rerun`, on-failure),
a file tool writes outside the writable roots (`write`), a network tool, an MCP tool, any
other tool the sandbox does not contain."""
_OUTSIDE: frozenset[str] = frozenset({"escalate", "rerun"})


@dataclass(frozen=True, slots=True)
class Allow:
    reason: AllowReason
    detail: str = ""
    """For the audit (`_meta.cody.decision`): the rule and its file, the grant, the mode."""


@dataclass(frozen=True, slots=True)
class Deny:
    reason: DenyReason
    message: str
    """What the model is told (as `{"error": message}`)."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Ask:
    unsandboxed: bool
    """The call would run outside the sandbox; the request must say so plainly."""
    rule: RuleVerdict | None = None
    """An ask rule that made the call ask (else the policy did)."""


Verdict = Allow | Deny | Ask


@dataclass(slots=True)
class Grants:
    """Session-scoped grants and rejections, plus the current turn's rejections."""

    allowed: set[GrantKey] = field(default_factory=set)
    rejected: set[GrantKey] = field(default_factory=set)
    turn_rejected: set[GrantKey] = field(default_factory=set)


def outside_key(key: GrantKey) -> GrantKey:
    """The key a grant to run `key` outside the sandbox is remembered under."""
    return ("outside", *key)


def remembered_key(key: GrantKey, escalation: Escalation | None) -> GrantKey:
    """The key an answer about this call is remembered under."""
    return outside_key(key) if escalation in _OUTSIDE else key


@dataclass(frozen=True, slots=True, kw_only=True)
class CallFacts:
    tool_name: str
    requires_approval: bool
    allowed_by_allowlist: bool
    sandbox_violation: str | None
    """Why the call cannot run at all (it then fails without a prompt), or None."""
    credential_refusal: str | None = None
    """Why the call may not run whatever the policy (it would read a login file), or None."""
    unsandboxed: bool
    """The call would run a process without the isolation the sandbox mode asks for
    (bubblewrap is unusable)."""
    sandbox_unavailable: SandboxUnavailable
    no_sandbox_because: str = "bubblewrap missing"
    """Why an `unsandboxed` call has no sandbox (said in refusals; a backend CLI names itself)."""
    known_safe: bool
    """An `exec` of a known-safe read-only command."""
    grant_key: GrantKey
    policy: ApprovalPolicy
    failure_seen: bool = False
    """A tool result in this turn has failed (`on-failure`, for callers that cannot tell
    whether the sandbox contains a call)."""
    contained: bool = False
    """The sandbox contains the call (`on-request` runs it unasked)."""
    escalation: Escalation | None = None
    outside_reason: str | None = None
    """Why the call needs more than the sandbox, in words (shown; the `never` refusal)."""
    rule: RuleVerdict | None = None
    """What the permission rules say about the call (None: no rule matches)."""
    allow_rule_void: str | None = None
    """Why an allow rule cannot allow this call (a git command where the repository's own
    configuration can make git run a program): it is decided as if no allow rule matched."""


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
    # Hooks (issue 27) come here: a PreToolUse hook may deny, ask or allow.
    rule = facts.rule
    if rule is not None and rule.decision == "allow" and _allow_rule_void(facts):
        rule = None  # decided as if no allow rule matched: the question stays
    if rule is not None:
        detail = rule.describe()
        if rule.decision == "deny":
            return Deny("rule", f"denied by the permission rule {detail}", detail)
        if rule.decision == "ask":
            refused = _rejected(facts, grants)  # a rejection stands; a grant does not skip it
            if refused is not None:
                return refused
            if facts.policy == "never":
                return Deny(
                    "rule",
                    f"the permission rule {detail} asks for approval, but the approval policy "
                    "is `never`, so nobody can be asked",
                    detail,
                )
            return Ask(unsandboxed=facts.unsandboxed, rule=rule)
        return Allow("rule", detail)
    refused = _rejected(facts, grants)
    if refused is not None:
        return refused
    outside = facts.escalation in _OUTSIDE
    if outside_key(facts.grant_key) in grants.allowed or (
        not outside and facts.grant_key in grants.allowed
    ):
        return Allow("grant", "allowed for this session")
    return _policy(facts)


def _allow_rule_void(facts: CallFacts) -> bool:
    """An allow rule does not skip what it cannot vouch for: a repository that makes git run
    its programs, or a command without a sandbox while `sandbox_unavailable = "ask"` (that
    setting's question is about the missing sandbox, which no rule knew about)."""
    must_warn = facts.unsandboxed and facts.sandbox_unavailable == "ask"
    return facts.allow_rule_void is not None or must_warn


def _rejected(facts: CallFacts, grants: Grants) -> Deny | None:
    outside = facts.escalation in _OUTSIDE
    key, wider = facts.grant_key, outside_key(facts.grant_key)
    if key in grants.rejected or (outside and wider in grants.rejected):
        return Deny("session rejection", "User denied approval", "rejected for this session")
    if key in grants.turn_rejected or (outside and wider in grants.turn_rejected):
        return Deny("turn rejection", "User denied approval", "rejected earlier in this turn")
    return None


def _policy(facts: CallFacts) -> Verdict:
    must_warn = facts.unsandboxed and facts.sandbox_unavailable == "ask"
    if facts.policy == "never":
        if must_warn:
            return Deny(
                "policy",
                f"cannot run: no sandbox is available ({facts.no_sandbox_because}), approval "
                'policy is `never` and sandbox_unavailable = "ask", so the command was refused',
            )
        if facts.escalation in _OUTSIDE:
            return Deny(
                "policy",
                "cannot run outside the sandbox: the approval policy is `never`, so nobody "
                "can be asked; run the command inside the sandbox",
            )
        if facts.escalation == "write":
            return Deny("sandbox", f"blocked by the sandbox: {facts.outside_reason}")
        return Allow("policy", "approval policy never")
    if not facts.requires_approval:
        return Allow("read-only tool", "a read-only tool")
    if facts.policy == "untrusted":
        if facts.known_safe and facts.escalation is None and not must_warn:
            return Allow("known-safe command", "a known-safe read-only command")
        return Ask(unsandboxed=facts.unsandboxed)
    if facts.contained and not must_warn:
        return Allow("sandbox", "the sandbox contains it")
    if (
        facts.policy == "on-failure"
        and facts.escalation is None
        and not facts.failure_seen
        and not must_warn
    ):
        return Allow("policy", "approval policy on-failure, no failure yet")
    return Ask(unsandboxed=facts.unsandboxed)


_BY_ALLOW = {"grant": "grant", "rule": "rule", "sandbox": "sandbox"}
_BY_DENY = {
    "allowlist": "allowlist",
    "sandbox": "sandbox",
    "rule": "rule",
    "session rejection": "grant",
    "turn rejection": "grant",
}


def decided_by(verdict: Allow | Deny) -> tuple[str, str]:
    """`(by, detail)` of `_meta.cody.decision` for a verdict reached without asking."""
    if isinstance(verdict, Allow):
        return _BY_ALLOW.get(verdict.reason, "policy"), verdict.detail or verdict.reason
    return _BY_DENY.get(verdict.reason, "policy"), verdict.detail or verdict.message
