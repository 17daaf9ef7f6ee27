"""Where a PreToolUse hook's answer sits in the order of decision (policy/approval.py): after
the allowlist, the credential refusal and what cannot run at all, before the permission
rules. A deny refuses with the hook's reason whatever the rules say; an ask asks even where
a rule or a grant would allow (never under `never`); an allow skips the policy's question,
but a deny rule still denies, an ask rule still asks, a rejection of the user's stands, and
a command without a sandbox still warns first."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from cody_daemon.core.tooling import ToolFacts
from cody_daemon.policy.approval import (
    Allow,
    Ask,
    CallFacts,
    Deny,
    Grants,
    HookDecision,
    decide,
    decided_by,
)
from cody_daemon.policy.command_parts import CommandPart
from cody_daemon.policy.rules import CommandSubject, RuleSet, parse_rule

EXEC = ToolFacts(changes="programs")
"""What `exec` declares (rules for it match by its name)."""

KEY = ("rm", "-rf", "build")
BASE = CallFacts(
    tool_name="exec",
    requires_approval=True,
    allowed_by_allowlist=True,
    sandbox_violation=None,
    unsandboxed=False,
    sandbox_unavailable="ask",
    known_safe=False,
    grant_key=KEY,
    policy="untrusted",
    contained=True,
)
HOOK = "./guard.sh"


def facts(decision: str, **changes: Any) -> CallFacts:
    hook = HookDecision(decision, "no deleting here", HOOK)  # type: ignore[arg-type]
    return dataclasses.replace(BASE, hook=hook, **changes)


def ruled(hook: str, rule_decision: str) -> CallFacts:
    rule = parse_rule(
        "exec(rm:*)", rule_decision, source="/cfg.toml", base=Path("/w"), home=Path("/h")
    )  # type: ignore[arg-type]
    subject = CommandSubject((CommandPart.literal(KEY),), (KEY,), Path("/w"))
    return facts(hook, rule=RuleSet([rule]).evaluate("exec", subject, EXEC))


def test_a_deny_refuses_with_the_hooks_reason_whatever_the_rest_says() -> None:
    for policy in ("untrusted", "on-request", "on-failure", "never"):
        verdict = decide(facts("deny", policy=policy), Grants(allowed={KEY}))
        assert isinstance(verdict, Deny) and verdict.message == "no deleting here"
        assert decided_by(verdict) == ("hook", f"the PreToolUse hook `{HOOK}`")
    assert isinstance(decide(ruled("deny", "allow"), Grants()), Deny)


def test_the_refusals_before_it_still_come_first() -> None:
    assert decide(facts("allow", allowed_by_allowlist=False), Grants()).reason == "allowlist"  # type: ignore[union-attr]
    refusal = decide(facts("allow", credential_refusal="a login file"), Grants())
    assert isinstance(refusal, Deny) and refusal.reason == "credentials"
    blocked = decide(facts("allow", sandbox_violation="outside"), Grants())
    assert isinstance(blocked, Deny) and blocked.reason == "sandbox"


def test_an_allow_skips_the_question_and_is_recorded_as_the_hooks() -> None:
    verdict = decide(facts("allow"), Grants())
    assert isinstance(verdict, Allow)
    assert decided_by(verdict) == ("hook", f"the PreToolUse hook `{HOOK}`: no deleting here")


def test_an_allow_does_not_pass_the_rules_the_users_rejection_or_the_sandbox_warning() -> None:
    assert isinstance(decide(ruled("allow", "deny"), Grants()), Deny)
    asked = decide(ruled("allow", "ask"), Grants())
    assert isinstance(asked, Ask) and asked.rule is not None
    assert decide(facts("allow"), Grants(rejected={KEY})) == Deny(
        "session rejection", "User denied approval", "rejected for this session"
    )
    unsandboxed = facts("allow", unsandboxed=True, sandbox_unavailable="ask")
    assert isinstance(decide(unsandboxed, Grants()), Ask), "running unsandboxed still warns"


def test_an_ask_asks_past_an_allow_rule_and_a_grant_and_cannot_under_never() -> None:
    asked = decide(facts("ask", policy="on-failure"), Grants(allowed={KEY}))
    assert isinstance(asked, Ask) and asked.hook is not None and asked.hook.command == HOOK
    assert isinstance(decide(ruled("ask", "allow"), Grants()), Ask)
    never = decide(facts("ask", policy="never"), Grants())
    assert isinstance(never, Deny) and "nobody can be asked" in never.message
