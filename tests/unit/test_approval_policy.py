"""`decide`: docs/protocol.md "Approvals", order of decision, as a table.

allowlist -> what cannot run at all -> permission rules (deny > ask > allow) -> session
rejections -> turn rejections -> session grants -> policy (does the sandbox contain it?).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.core.tooling import ToolFacts
from cody_daemon.policy.approval import (
    Ask,
    CallFacts,
    Deny,
    Grants,
    Verdict,
    decide,
    outside_key,
)
from cody_daemon.policy.rules import RuleSet, parse_rule

EXEC = ToolFacts(changes="programs")
"""What `exec` declares (rules for it match by its name)."""

KEY = ("exec", "git", "push")
OTHER = ("exec", "git", "status")

SANDBOXED = CallFacts(
    tool_name="exec",
    requires_approval=True,
    allowed_by_allowlist=True,
    sandbox_violation=None,
    unsandboxed=False,
    sandbox_unavailable="ask",
    known_safe=False,
    grant_key=KEY,
    policy="on-request",
    contained=True,
)
"""A command that runs inside the sandbox."""

DENIED = "User denied approval"


def facts(**changes: Any) -> CallFacts:
    return dataclasses.replace(SANDBOXED, **changes)


def needs(escalation: str, **changes: Any) -> CallFacts:
    """A call that needs more than the sandbox allows."""
    return facts(contained=False, escalation=escalation, outside_reason="why", **changes)


def cli(**changes: Any) -> CallFacts:
    """An agent CLI's request: nobody can tell whether a sandbox contains it."""
    return facts(contained=False, escalation=None, **changes)


def ruled(decision: str, text: str = "exec(git push:*)", **changes: Any) -> CallFacts:
    rule = parse_rule(text, decision, source="/cfg.toml", base=Path("/w"), home=Path("/h"))  # type: ignore[arg-type]
    from cody_daemon.policy.command_parts import CommandPart
    from cody_daemon.policy.rules import CommandSubject

    subject = CommandSubject((CommandPart.literal(KEY[1:]),), (KEY[1:],), Path("/w"))
    return facts(rule=RuleSet([rule]).evaluate("exec", subject, EXEC), **changes)


def grants(
    allowed: tuple[tuple[str, ...], ...] = (),
    rejected: tuple[tuple[str, ...], ...] = (),
    turn_rejected: tuple[tuple[str, ...], ...] = (),
) -> Grants:
    return Grants(allowed=set(allowed), rejected=set(rejected), turn_rejected=set(turn_rejected))


def allow(reason: str) -> tuple[str, str]:
    return ("allow", reason)


def ask(unsandboxed: bool = False) -> tuple[str, bool]:
    return ("ask", unsandboxed)


def deny(reason: str, *fragments: str) -> tuple[str, str, tuple[str, ...]]:
    return ("deny", reason, fragments)


ALL_GRANTS = grants(allowed=(KEY, outside_key(KEY)), rejected=(KEY,), turn_rejected=(KEY,))
OUTSIDE = grants(allowed=(outside_key(KEY),))

CASES: list[tuple[str, CallFacts, Grants, tuple[Any, ...]]] = [
    # --- order of decision ---
    (
        "allowlist beats everything",
        facts(tool_name="writeFile", allowed_by_allowlist=False, policy="never"),
        ALL_GRANTS,
        deny("allowlist", "'writeFile'", "not allowed"),
    ),
    (
        "allowlist refuses read-only tools too",
        facts(tool_name="readFile", requires_approval=False, allowed_by_allowlist=False),
        grants(),
        deny("allowlist", "'readFile'"),
    ),
    (
        "a call that cannot run beats rejections and grants",
        facts(sandbox_violation="no bubblewrap", policy="never"),
        ALL_GRANTS,
        deny("sandbox", "blocked by the sandbox", "no bubblewrap"),
    ),
    (
        "a call that cannot run beats an allow rule",
        ruled("allow", sandbox_violation="no bubblewrap"),
        grants(),
        deny("sandbox", "no bubblewrap"),
    ),
    (
        "a login file is refused whatever the rules say",
        ruled("allow", credential_refusal="it reads a login file"),
        grants(),
        deny("credentials", "login file"),
    ),
    (
        "session rejection beats turn rejection and grant",
        needs("escalate"),
        ALL_GRANTS,
        deny("session rejection", DENIED),
    ),
    (
        "turn rejection beats grant",
        needs("escalate"),
        grants(allowed=(outside_key(KEY),), turn_rejected=(KEY,)),
        deny("turn rejection", DENIED),
    ),
    (
        "a rejection holds for a sandboxed call too",
        facts(),
        grants(rejected=(KEY,)),
        deny("session rejection", DENIED),
    ),
    (
        "session rejection holds under policy never",
        facts(policy="never"),
        grants(rejected=(KEY,)),
        deny("session rejection", DENIED),
    ),
    (
        "session rejection holds for a known-safe command under untrusted",
        facts(policy="untrusted", known_safe=True),
        grants(rejected=(KEY,)),
        deny("session rejection", DENIED),
    ),
    (
        "rejecting the run outside leaves the sandboxed run alone",
        facts(policy="untrusted"),
        grants(allowed=(KEY,), rejected=(outside_key(KEY),)),
        allow("grant"),
    ),
    (
        "rejecting the sandboxed run also refuses running it outside",
        needs("escalate"),
        grants(allowed=(outside_key(KEY),), turn_rejected=(KEY,)),
        deny("turn rejection", DENIED),
    ),
    ("a grant to run outside beats the policy", needs("escalate"), OUTSIDE, allow("grant")),
    (
        "a grant to run outside covers the sandboxed run",
        facts(policy="untrusted"),
        OUTSIDE,
        allow("grant"),
    ),
    (
        "a sandboxed grant never covers running outside",
        needs("escalate"),
        grants(allowed=(KEY,)),
        ask(),
    ),
    (
        "a grant for another key does not apply",
        facts(policy="untrusted"),
        grants(allowed=(OTHER,), rejected=(OTHER,)),
        ask(),
    ),
    # --- rules ---
    (
        "a deny rule beats grants and every policy",
        ruled("deny", policy="never"),
        ALL_GRANTS,
        deny("rule", "denied by the permission rule", "exec(git push:*)", "/cfg.toml"),
    ),
    (
        "a deny rule refuses even what the sandbox contains",
        ruled("deny"),
        grants(),
        deny("rule", "exec(git push:*)"),
    ),
    ("an ask rule asks although a grant would allow", ruled("ask"), OUTSIDE, ask()),
    (
        "an ask rule keeps a rejection",
        ruled("ask"),
        grants(turn_rejected=(KEY,)),
        deny("turn rejection", DENIED),
    ),
    (
        "an ask rule under never refuses (nobody to ask)",
        ruled("ask", policy="never"),
        grants(),
        deny("rule", "`never`", "exec(git push:*)"),
    ),
    (
        "an allow rule lets an escalation run without asking",
        ruled("allow", contained=False, escalation="escalate"),
        grants(),
        allow("rule"),
    ),
    (
        "an allow rule vouches for no repository that makes git run programs",
        ruled(
            "allow",
            contained=False,
            escalation="escalate",
            allow_rule_void="this repository's git configuration could make git run a program",
        ),
        grants(),
        ask(),
    ),
    (
        "a void allow rule leaves a sandboxed call to the sandbox",
        ruled("allow", allow_rule_void="git could run a program"),
        grants(),
        allow("sandbox"),
    ),
    (
        "an allow rule does not skip the no-sandbox question of sandbox_unavailable = ask",
        ruled("allow", unsandboxed=True),
        grants(),
        ask(unsandboxed=True),
    ),
    (
        "an allow rule runs an unsandboxed command under sandbox_unavailable = allow",
        ruled("allow", unsandboxed=True, sandbox_unavailable="allow"),
        grants(),
        allow("rule"),
    ),
    (
        "an allow rule beats untrusted",
        ruled("allow", policy="untrusted"),
        grants(),
        allow("rule"),
    ),
    (
        "an allow rule for another command does not apply",
        ruled("allow", "exec(git status:*)", policy="untrusted"),
        grants(),
        ask(),
    ),
    # --- untrusted ---
    ("untrusted asks", facts(policy="untrusted"), grants(), ask()),
    (
        "untrusted runs a known-safe command",
        facts(policy="untrusted", known_safe=True),
        grants(),
        allow("known-safe command"),
    ),
    (
        "untrusted runs a known-safe command an agent CLI asks about (containment unknown)",
        facts(policy="untrusted", known_safe=True, contained=False),
        grants(),
        allow("known-safe command"),
    ),
    (
        "untrusted asks for a known-safe command run outside",
        needs("escalate", policy="untrusted", known_safe=True),
        grants(),
        ask(),
    ),
    (
        "untrusted runs read-only tools",
        facts(policy="untrusted", tool_name="readFile", requires_approval=False),
        grants(),
        allow("read-only tool"),
    ),
    # --- on-request ---
    ("on-request runs what the sandbox contains", facts(), grants(), allow("sandbox")),
    ("on-request asks to run outside the sandbox", needs("escalate"), grants(), ask()),
    ("on-request asks to write outside the roots", needs("write"), grants(), ask()),
    ("on-request asks for the network tools", needs("network"), grants(), ask()),
    ("on-request asks for an MCP tool", needs("mcp"), grants(), ask()),
    ("on-request asks for an agent CLI's request", cli(), grants(), ask()),
    (
        "on-request runs read-only tools",
        facts(tool_name="listDir", requires_approval=False),
        grants(),
        allow("read-only tool"),
    ),
    # --- on-failure ---
    (
        "on-failure runs what the sandbox contains",
        facts(policy="on-failure"),
        grants(),
        allow("sandbox"),
    ),
    (
        "on-failure runs it after a failure too",
        facts(policy="on-failure", failure_seen=True),
        grants(),
        allow("sandbox"),
    ),
    ("on-failure asks to re-run outside", needs("rerun", policy="on-failure"), grants(), ask()),
    (
        "on-failure: a grant to run outside re-runs without asking",
        needs("rerun", policy="on-failure"),
        OUTSIDE,
        allow("grant"),
    ),
    (
        "on-failure lets an agent CLI's request run before a failure",
        cli(policy="on-failure"),
        grants(),
        allow("policy"),
    ),
    (
        "on-failure asks for an agent CLI's request after a failure",
        cli(policy="on-failure", failure_seen=True),
        grants(),
        ask(),
    ),
    # --- never ---
    ("never runs what the sandbox contains", facts(policy="never"), grants(), allow("policy")),
    (
        "never refuses to run outside the sandbox",
        needs("escalate", policy="never"),
        grants(),
        deny("policy", "`never`", "inside the sandbox"),
    ),
    (
        "never refuses a re-run outside",
        needs("rerun", policy="never"),
        grants(),
        deny("policy", "`never`"),
    ),
    (
        "never refuses a write outside the roots, saying why",
        needs("write", policy="never"),
        grants(),
        deny("sandbox", "blocked by the sandbox", "why"),
    ),
    ("never runs the network tools", needs("network", policy="never"), grants(), allow("policy")),
    ("never runs MCP tools", needs("mcp", policy="never"), grants(), allow("policy")),
    ("never runs an agent CLI's request", cli(policy="never"), grants(), allow("policy")),
    (
        "never runs read-only tools",
        facts(policy="never", requires_approval=False),
        grants(),
        allow("policy"),
    ),
    # --- no sandbox available: refuse ---
    *[
        (
            f"unsandboxed + refuse under {policy} is refused",
            facts(unsandboxed=True, sandbox_unavailable="refuse", policy=policy, known_safe=True),
            grants(allowed=(KEY,)),
            deny("sandbox", "no sandbox is available", "bubblewrap", '"refuse"'),
        )
        for policy in ("untrusted", "on-request", "on-failure", "never")
    ],
    (
        "a sandboxed call is not refused by sandbox_unavailable=refuse",
        facts(sandbox_unavailable="refuse", policy="never"),
        grants(),
        allow("policy"),
    ),
    # --- no sandbox available: ask ---
    (
        "unsandboxed + ask under on-request asks, saying so",
        facts(unsandboxed=True),
        grants(),
        ask(True),
    ),
    (
        "unsandboxed + ask under on-failure asks",
        facts(unsandboxed=True, policy="on-failure"),
        grants(),
        ask(True),
    ),
    (
        "unsandboxed + ask under untrusted asks even for a known-safe command",
        facts(unsandboxed=True, policy="untrusted", known_safe=True),
        grants(),
        ask(True),
    ),
    (
        "unsandboxed + ask under never is refused (nobody to ask)",
        facts(unsandboxed=True, policy="never"),
        grants(),
        deny("policy", "no sandbox is available", "`never`", "refused"),
    ),
    (
        "unsandboxed + ask: a session rejection still wins",
        facts(unsandboxed=True, policy="never"),
        grants(rejected=(KEY,)),
        deny("session rejection", DENIED),
    ),
    (
        "unsandboxed + ask: a session grant (given after the warning) runs it",
        facts(unsandboxed=True),
        grants(allowed=(KEY,)),
        allow("grant"),
    ),
    # --- no sandbox available: allow (as if sandboxed; a request still says so) ---
    (
        "unsandboxed + allow under on-request runs it",
        facts(unsandboxed=True, sandbox_unavailable="allow"),
        grants(),
        allow("sandbox"),
    ),
    (
        "unsandboxed + allow under untrusted asks, saying so",
        facts(unsandboxed=True, sandbox_unavailable="allow", policy="untrusted"),
        grants(),
        ask(True),
    ),
    (
        "unsandboxed + allow under untrusted runs a known-safe command",
        facts(unsandboxed=True, sandbox_unavailable="allow", policy="untrusted", known_safe=True),
        grants(),
        allow("known-safe command"),
    ),
]


def _shape(verdict: Verdict) -> tuple[Any, ...]:
    if isinstance(verdict, Ask):
        return ("ask", verdict.unsandboxed)
    if isinstance(verdict, Deny):
        return ("deny", verdict.reason)
    return ("allow", verdict.reason)


@pytest.mark.parametrize(("case", "call", "state", "expected"), CASES, ids=[c[0] for c in CASES])
def test_decide(case: str, call: CallFacts, state: Grants, expected: tuple[Any, ...]) -> None:
    verdict = decide(call, state)
    if expected[0] == "deny":
        _, reason, fragments = expected
        assert isinstance(verdict, Deny), f"{case}: {verdict}"
        assert verdict.reason == reason
        for fragment in fragments:
            assert fragment in verdict.message, f"{fragment!r} not in {verdict.message!r}"
    else:
        assert _shape(verdict) == expected, f"{case}: {verdict}"


@pytest.mark.parametrize("policy", ["untrusted", "on-request", "on-failure", "never"])
@pytest.mark.parametrize("escalation", [None, "escalate", "write", "network"])
@pytest.mark.parametrize("known_safe", [False, True])
def test_allow_mode_decides_like_a_sandboxed_call(
    policy: str, escalation: str | None, known_safe: bool
) -> None:
    """`sandbox_unavailable = "allow"`: same verdict as with a sandbox (asks still warn)."""
    call = facts(policy=policy, known_safe=known_safe)
    if escalation is not None:
        call = needs(escalation, policy=policy, known_safe=known_safe)
    sandboxed = decide(call, grants())
    unsandboxed = decide(
        dataclasses.replace(call, unsandboxed=True, sandbox_unavailable="allow"), grants()
    )
    if isinstance(sandboxed, Ask):
        assert unsandboxed == Ask(unsandboxed=True)
    else:
        assert _shape(unsandboxed) == _shape(sandboxed)


@pytest.mark.parametrize("policy", ["untrusted", "on-request", "on-failure", "never"])
@pytest.mark.parametrize("failure_seen", [False, True])
@pytest.mark.parametrize("known_safe", [False, True])
def test_ask_mode_never_runs_an_unsandboxed_command_silently(
    policy: str, failure_seen: bool, known_safe: bool
) -> None:
    """`sandbox_unavailable = "ask"`: an unsandboxed exec is asked about or refused."""
    verdict = decide(
        facts(policy=policy, failure_seen=failure_seen, known_safe=known_safe, unsandboxed=True),
        grants(),
    )
    assert verdict == Ask(unsandboxed=True) or (isinstance(verdict, Deny) and policy == "never"), (
        verdict
    )


def test_turn_rejections_are_separate_from_session_rejections() -> None:
    state = grants(turn_rejected=(KEY,))
    assert _shape(decide(needs("escalate"), state)) == ("deny", "turn rejection")
    state.turn_rejected.clear()  # the next turn
    assert decide(needs("escalate"), state) == Ask(unsandboxed=False)
