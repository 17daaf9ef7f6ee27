"""Where a PreToolUse hook's answer sits in the order of decision (policy/approval.py): after
the allowlist, the credential refusal and the sandbox's refusals; a deny refuses with the
hook's reason; an ask asks (never under `never`); an allow skips the question but not the
user's own rejections, nor the warning before a command runs without a sandbox."""

from __future__ import annotations

import dataclasses
from typing import Any

from cody_daemon.policy.approval import (
    Allow,
    Ask,
    CallFacts,
    Deny,
    Grants,
    HookDecision,
    decide,
)

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
    failure_seen=False,
)


def facts(decision: str, **changes: Any) -> CallFacts:
    hook = HookDecision(decision, "no deleting here", "./guard.sh")  # type: ignore[arg-type]
    return dataclasses.replace(BASE, hook=hook, **changes)


def test_a_deny_refuses_with_the_hooks_reason_whatever_grants_and_policy_say() -> None:
    for policy in ("untrusted", "on-request", "on-failure", "never"):
        verdict = decide(facts("deny", policy=policy), Grants(allowed={KEY}))
        assert verdict == Deny("hook", "no deleting here")


def test_the_refusals_before_it_still_come_first() -> None:
    assert decide(facts("allow", allowed_by_allowlist=False), Grants()).reason == "allowlist"
    assert decide(facts("allow", credential_refusal="a login file"), Grants()).reason == (
        "credentials"
    )
    assert decide(facts("allow", sandbox_violation="outside"), Grants()).reason == "sandbox"


def test_an_allow_skips_the_question_but_not_the_users_rejection() -> None:
    assert decide(facts("allow"), Grants()) == Allow("hook")
    assert decide(facts("allow"), Grants(rejected={KEY})) == Deny(
        "session rejection", "User denied approval"
    )
    unsandboxed = facts("allow", unsandboxed=True, sandbox_unavailable="ask")
    assert isinstance(decide(unsandboxed, Grants()), Ask), "running unsandboxed still warns"


def test_an_ask_asks_even_after_a_grant_and_cannot_under_never() -> None:
    assert decide(facts("ask", policy="on-failure"), Grants(allowed={KEY})) == Ask(
        unsandboxed=False
    )
    never = decide(facts("ask", policy="never"), Grants())
    assert isinstance(never, Deny) and "nobody can be asked" in never.message
