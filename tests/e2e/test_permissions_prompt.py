"""The environment-and-permissions item the model receives, generated from the session's
real settings, through the real daemon: every sandbox mode x approval policy, a machine
without a sandbox, and a `session/set_config_option` that changes it on the next turn only
(appended: the earlier items are sent unchanged, so the cached prefix holds).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, RecordedRequest, text
from tests.support.model_inputs import input_items

pytestmark = pytest.mark.e2e

MODES = ("read-only", "workspace-write", "danger-full-access")
POLICIES = ("untrusted", "on-request", "on-failure", "never")


def context_texts(request: RecordedRequest) -> list[str]:
    """The developer items of a request (Cody's environment and permissions), in order."""
    return [
        item["content"][0]["text"]
        for item in input_items(request)
        if item.get("type") == "message" and item.get("role") == "developer"
    ]


def check(item: str, mode: str, policy: str, *, workspace: Path, tmp: Path, bwrap: bool) -> None:
    """`item` says what the settings `mode` x `policy` allow, and nothing it does not."""
    assert item.startswith("<environment>\nWorking directory: ")
    assert f"Working directory: {workspace}\n" in item
    assert f"Approvals: `{policy}`." in item
    assert item.count("Approvals: ") == 1
    for other in POLICIES:
        if other != policy:
            assert f"Approvals: `{other}`" not in item
    if mode == "danger-full-access":
        assert "Sandbox: none (`danger-full-access`)" in item
        assert "no network access" not in item and "cannot isolate" not in item
    else:
        assert f"Sandbox: `{mode}`." in item
        assert "Commands have no network access" in item and "ENOTFOUND" in item
        assert ("cannot isolate commands" in item) is not bwrap
    if mode == "workspace-write":
        assert f"write inside `{workspace}` and `{tmp}`" in item
        assert "every `.git`" in item and "`.cody` stays read-only" in item
        assert "`git commit`" in item
    else:
        assert "write inside" not in item
    if mode == "read-only":
        assert "nothing can be written" in item
    if policy == "never":
        assert "Nobody will be asked" in item
    if policy == "on-failure":
        assert "asked once whether to re-run it outside the sandbox" in item
    if policy == "untrusted":
        assert "every command except known read-only ones" in item
    assert "User denied approval" in item, "what a denial means is always said"


async def start(env: CodyEnv, model: MockResponsesServer, extra: str = "") -> Daemon:
    env.use_mock_provider(model.base_url, extra)
    daemon = await Daemon.start(env)
    await daemon.initialize()
    return daemon


def bwrap_usable(initialized: dict[str, Any]) -> bool:
    binaries = initialized["_meta"]["cody"]["binaries"]
    return any(b["name"] == "bwrap" and b["usable"] for b in binaries)


async def test_every_sandbox_mode_and_policy_is_described_as_set(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    daemon = await Daemon.start(cody_env)
    combos = list(itertools.product(MODES, POLICIES))
    try:
        initialized = await daemon.initialize()
        for mode, policy in combos:
            sid = await daemon.new_session(sandboxMode=mode, approvalPolicy=policy)
            model.enqueue(text("ok"))
            await daemon.prompt(sid, f"{mode} {policy}")
    finally:
        await daemon.close()
    bwrap = bwrap_usable(initialized)
    texts = set()
    for (mode, policy), request in zip(combos, model.requests, strict=True):
        [item] = context_texts(request)
        check(
            item,
            mode,
            policy,
            workspace=cody_env.workspace,
            tmp=cody_env.tmpdir,
            bwrap=bwrap,
        )
        texts.add(item.split("<permissions>", 1)[1])
    assert len(texts) == len(combos), "each combination is described differently"


@pytest.mark.parametrize("fallback", ["ask", "refuse", "allow"])
async def test_a_machine_without_a_sandbox_says_what_happens_to_commands(
    cody_env: CodyEnv, model: MockResponsesServer, fallback: str
) -> None:
    cody_env.env["CODY_BWRAP"] = "none"
    daemon = await start(cody_env, model, f'sandbox_unavailable = "{fallback}"')
    try:
        sid = await daemon.new_session()
        model.enqueue(text("ok"))
        await daemon.prompt(sid, "hi")
    finally:
        await daemon.close()
    [item] = context_texts(model.requests[0])
    assert "This machine cannot isolate commands" in item
    expected = {
        "ask": "every command asks the user first",
        "refuse": "`exec` fails",
        "allow": "commands run with the user's full rights",
    }
    assert expected[fallback] in item
    assert all(text not in item for key, text in expected.items() if key != fallback)


async def test_set_config_option_changes_the_item_on_the_next_turn_only(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(cody_env, model)
    try:
        sid = await daemon.new_session()
        model.enqueue(text("first"))
        await daemon.prompt(sid, "one")
        await daemon.set_config_option(sid, "sandbox_mode", "read-only")
        await daemon.set_config_option(sid, "approval_policy", "never")
        assert len(model.requests) == 1, "a setting alone calls no model"
        model.enqueue(text("second"))
        await daemon.prompt(sid, "two")
        model.enqueue(text("third"))
        await daemon.prompt(sid, "three")
    finally:
        await daemon.close()
    first, second, third = model.requests
    before = input_items(first)
    assert input_items(second)[: len(before)] == before, "earlier items are sent unchanged"
    [old] = context_texts(first)
    assert "Sandbox: `workspace-write`" in old and "Approvals: `on-request`" in old
    old_again, new = context_texts(second)
    assert old_again == old
    assert "Sandbox: `read-only`" in new and "Approvals: `never`" in new
    roles = [(i.get("role"), i["content"][0]["text"][:5]) for i in input_items(second)]
    assert roles[-2:] == [("developer", "<envi"), ("user", "two")], "appended before the turn"
    assert context_texts(third) == [old, new], "unchanged settings add nothing"
    assert input_items(third)[: len(input_items(second))] == input_items(second)
    assert first.body["instructions"] == second.body["instructions"]
