"""`decide`: docs/protocol.md "Approvals", order of decision, as a table.

allowlist -> sandbox -> session rejections -> turn rejections -> session grants -> policy.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from cody_daemon.policy.approval import Allow, Ask, CallFacts, Deny, Grants, Verdict, decide

KEY = ("git", "push")
OTHER = ("git", "status")

BASE = CallFacts(
    tool_name="exec",
    requires_approval=True,
    allowed_by_allowlist=True,
    sandbox_violation=None,
    unsandboxed=False,
    sandbox_unavailable="ask",
    known_safe=False,
    grant_key=KEY,
    policy="on-request",
    failure_seen=False,
)

DENIED = "User denied approval"


def facts(**changes: Any) -> CallFacts:
    return dataclasses.replace(BASE, **changes)


def grants(
    allowed: tuple[tuple[str, ...], ...] = (),
    rejected: tuple[tuple[str, ...], ...] = (),
    turn_rejected: tuple[tuple[str, ...], ...] = (),
) -> Grants:
    return Grants(allowed=set(allowed), rejected=set(rejected), turn_rejected=set(turn_rejected))


def deny(reason: str, *fragments: str) -> tuple[str, str, tuple[str, ...]]:
    return ("deny", reason, fragments)


ALL_GRANTS = grants(allowed=(KEY,), rejected=(KEY,), turn_rejected=(KEY,))

CASES: list[tuple[str, CallFacts, Grants, Verdict | tuple[str, str, tuple[str, ...]]]] = [
    # --- order of decision ---
    (
        "allowlist beats everything",
        facts(
            tool_name="writeFile",
            allowed_by_allowlist=False,
            sandbox_violation="outside the workspace",
            policy="never",
        ),
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
        "sandbox violation beats rejections and grants",
        facts(sandbox_violation="/etc/passwd is outside the workspace", policy="never"),
        ALL_GRANTS,
        deny("sandbox", "blocked by the sandbox", "/etc/passwd is outside the workspace"),
    ),
    (
        "sandbox violation beats a session grant",
        facts(sandbox_violation="read-only mode"),
        grants(allowed=(KEY,)),
        deny("sandbox", "read-only mode"),
    ),
    (
        "session rejection beats turn rejection and grant",
        facts(),
        ALL_GRANTS,
        deny("session rejection", DENIED),
    ),
    (
        "turn rejection beats grant",
        facts(),
        grants(allowed=(KEY,), turn_rejected=(KEY,)),
        deny("turn rejection", DENIED),
    ),
    (
        "session rejection holds under policy never",
        facts(policy="never"),
        grants(rejected=(KEY,)),
        deny("session rejection", DENIED),
    ),
    (
        "turn rejection holds under on-failure before any failure",
        facts(policy="on-failure"),
        grants(turn_rejected=(KEY,)),
        deny("turn rejection", DENIED),
    ),
    (
        "session rejection holds for a known-safe command under untrusted",
        facts(policy="untrusted", known_safe=True),
        grants(rejected=(KEY,)),
        deny("session rejection", DENIED),
    ),
    ("grant beats policy", facts(), grants(allowed=(KEY,)), Allow("grant")),
    (
        "a grant for another key does not apply",
        facts(),
        grants(allowed=(OTHER,), rejected=(OTHER,)),
        Ask(unsandboxed=False),
    ),
    # --- untrusted ---
    ("untrusted asks", facts(policy="untrusted"), grants(), Ask(unsandboxed=False)),
    (
        "untrusted runs a known-safe command",
        facts(policy="untrusted", known_safe=True),
        grants(),
        Allow("known-safe command"),
    ),
    (
        "untrusted runs read-only tools",
        facts(policy="untrusted", tool_name="readFile", requires_approval=False),
        grants(),
        Allow("read-only tool"),
    ),
    # --- on-request ---
    ("on-request asks", facts(), grants(), Ask(unsandboxed=False)),
    (
        "on-request asks even for a known-safe command",
        facts(known_safe=True),
        grants(),
        Ask(unsandboxed=False),
    ),
    (
        "on-request runs read-only tools",
        facts(tool_name="listDir", requires_approval=False),
        grants(),
        Allow("read-only tool"),
    ),
    # --- on-failure ---
    ("on-failure runs before a failure", facts(policy="on-failure"), grants(), Allow("policy")),
    (
        "on-failure asks after a failure",
        facts(policy="on-failure", failure_seen=True),
        grants(),
        Ask(unsandboxed=False),
    ),
    (
        "on-failure still runs read-only tools after a failure",
        facts(policy="on-failure", failure_seen=True, requires_approval=False),
        grants(),
        Allow("read-only tool"),
    ),
    (
        "on-failure: a grant still applies after a failure",
        facts(policy="on-failure", failure_seen=True),
        grants(allowed=(KEY,)),
        Allow("grant"),
    ),
    # --- never ---
    ("never runs everything", facts(policy="never"), grants(), Allow("policy")),
    (
        "never runs after a failure",
        facts(policy="never", failure_seen=True),
        grants(),
        Allow("policy"),
    ),
    (
        "never runs read-only tools",
        facts(policy="never", requires_approval=False),
        grants(),
        Allow("policy"),
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
        Allow("policy"),
    ),
    # --- no sandbox available: ask ---
    (
        "unsandboxed + ask under on-request asks, saying so",
        facts(unsandboxed=True),
        grants(),
        Ask(unsandboxed=True),
    ),
    (
        "unsandboxed + ask under on-failure asks before any failure",
        facts(unsandboxed=True, policy="on-failure"),
        grants(),
        Ask(unsandboxed=True),
    ),
    (
        "unsandboxed + ask under untrusted asks even for a known-safe command",
        facts(unsandboxed=True, policy="untrusted", known_safe=True),
        grants(),
        Ask(unsandboxed=True),
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
        Allow("grant"),
    ),
    # --- no sandbox available: allow (as if sandboxed; a request still says so) ---
    (
        "unsandboxed + allow under on-request asks",
        facts(unsandboxed=True, sandbox_unavailable="allow"),
        grants(),
        Ask(unsandboxed=True),
    ),
    (
        "unsandboxed + allow under on-failure runs before a failure",
        facts(unsandboxed=True, sandbox_unavailable="allow", policy="on-failure"),
        grants(),
        Allow("policy"),
    ),
    (
        "unsandboxed + allow under on-failure asks after a failure",
        facts(
            unsandboxed=True, sandbox_unavailable="allow", policy="on-failure", failure_seen=True
        ),
        grants(),
        Ask(unsandboxed=True),
    ),
    (
        "unsandboxed + allow under untrusted runs a known-safe command",
        facts(unsandboxed=True, sandbox_unavailable="allow", policy="untrusted", known_safe=True),
        grants(),
        Allow("known-safe command"),
    ),
    (
        "unsandboxed + allow under never runs",
        facts(unsandboxed=True, sandbox_unavailable="allow", policy="never"),
        grants(),
        Allow("policy"),
    ),
]


@pytest.mark.parametrize(("case", "call", "state", "expected"), CASES, ids=[c[0] for c in CASES])
def test_decide(
    case: str,
    call: CallFacts,
    state: Grants,
    expected: Verdict | tuple[str, str, tuple[str, ...]],
) -> None:
    verdict = decide(call, state)
    if isinstance(expected, tuple):
        _, reason, fragments = expected
        assert isinstance(verdict, Deny), f"{case}: {verdict}"
        assert verdict.reason == reason
        for fragment in fragments:
            assert fragment in verdict.message, f"{fragment!r} not in {verdict.message!r}"
    else:
        assert verdict == expected


@pytest.mark.parametrize("policy", ["untrusted", "on-request", "on-failure", "never"])
@pytest.mark.parametrize("failure_seen", [False, True])
@pytest.mark.parametrize("known_safe", [False, True])
def test_allow_mode_decides_like_a_sandboxed_call(
    policy: str, failure_seen: bool, known_safe: bool
) -> None:
    """`sandbox_unavailable = "allow"`: same verdict as with a sandbox (asks still warn)."""
    sandboxed = decide(
        facts(policy=policy, failure_seen=failure_seen, known_safe=known_safe), grants()
    )
    unsandboxed = decide(
        facts(
            policy=policy,
            failure_seen=failure_seen,
            known_safe=known_safe,
            unsandboxed=True,
            sandbox_unavailable="allow",
        ),
        grants(),
    )
    if isinstance(sandboxed, Ask):
        assert unsandboxed == Ask(unsandboxed=True)
    else:
        assert unsandboxed == sandboxed


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
    assert decide(facts(), state) == Deny("turn rejection", DENIED)
    state.turn_rejected.clear()  # the next turn
    assert decide(facts(), state) == Ask(unsandboxed=False)
