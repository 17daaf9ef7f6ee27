"""`[skills]` in the user's config.toml through the real daemon: a skill disabled by
`[[skills.config]]` is gone from `_meta.cody.skills`, the model's skills item, the slash
commands and `$name`; `include_instructions = false` sends no skills item while the skills
still run as `/name`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_doctor_config import run_client
from tests.e2e.test_skills import skills_items, write_skill
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text
from tests.support.model_inputs import user_texts

pytestmark = pytest.mark.e2e


def two_skills(env: CodyEnv) -> Path:
    """A project with the skills `secret-tools` and `release-notes`; the project root."""
    root = env.workspace / "proj"
    (root / ".git").mkdir(parents=True)
    skills = root / ".agents" / "skills"
    write_skill(skills / "secret-tools", "secret-tools", "Handles secrets", "SECRET-BODY")
    write_skill(skills / "release-notes", "release-notes", "Writes the release notes", "NOTES")
    return root


async def started(env: CodyEnv, model: MockResponsesServer, extra: str) -> Daemon:
    env.use_mock_provider(model.base_url, extra)
    daemon = await Daemon.start(env)
    await daemon.initialize()
    return daemon


async def test_a_skill_disabled_in_the_user_config_is_gone_everywhere(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = two_skills(cody_env)
    daemon = await started(
        cody_env, model, '[[skills.config]]\nname = "secret-tools"\nenabled = false\n'
    )
    try:
        created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
        sid = created["sessionId"]
        assert [s["name"] for s in created["_meta"]["cody"]["skills"]] == ["release-notes"]
        assert [s["name"] for s in created["_meta"]["cody"]["disabledSkills"]] == ["secret-tools"]
        await daemon.wait_for(
            lambda: bool(daemon.session_updates(sid, "available_commands_update"))
        )
        (update,) = daemon.session_updates(sid, "available_commands_update")[-1:]
        names = {c["name"] for c in update["availableCommands"]}
        assert "release-notes" in names and "secret-tools" not in names
        model.enqueue(text("ok"))
        model.enqueue(text("ok"))
        await daemon.prompt(sid, "use $secret-tools and $release-notes")
        await daemon.prompt(sid, "/secret-tools now")
    finally:
        await daemon.close()
    (item,) = skills_items(model.requests[0])
    assert "- release-notes: Writes the release notes" in item
    assert "secret-tools" not in item
    first = "\n".join(user_texts(model.requests[0]))
    assert "The user named the skill `release-notes`" in first and "NOTES" in first
    assert "The user named the skill `secret-tools`" not in first
    assert "SECRET-BODY" not in str(model.requests[0].body)
    ran = "\n".join(user_texts(model.requests[1]))
    assert "/secret-tools now" in ran, "not a command: sent as the user typed it"
    assert "Use the skill `secret-tools`" not in ran and "SECRET-BODY" not in ran


async def test_a_skill_disabled_by_path_is_not_listed(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = two_skills(cody_env)
    folder = root / ".agents" / "skills" / "release-notes"
    daemon = await started(
        cody_env, model, f'[[skills.config]]\npath = "{folder}"\nenabled = false\n'
    )
    try:
        created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
    finally:
        await daemon.close()
    assert [s["name"] for s in created["_meta"]["cody"]["skills"]] == ["secret-tools"]


async def test_include_instructions_false_sends_no_skills_item_but_skills_still_run(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = two_skills(cody_env)
    daemon = await started(cody_env, model, "[skills]\ninclude_instructions = false\n")
    try:
        created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
        sid = created["sessionId"]
        assert len(created["_meta"]["cody"]["skills"]) == 2
        model.enqueue(text("ok"))
        model.enqueue(text("ok"))
        await daemon.prompt(sid, "hello")
        await daemon.prompt(sid, "/release-notes v2")
    finally:
        await daemon.close()
    assert skills_items(model.requests[0]) == []
    assert skills_items(model.requests[1]) == []
    ran = user_texts(model.requests[1])[-1]
    assert ran.startswith("Use the skill `release-notes` for this request.") and "NOTES" in ran


async def test_an_untrusted_projects_skills_table_is_ignored_with_a_warning(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = two_skills(cody_env)
    (root / ".cody").mkdir()
    (root / ".cody" / "config.toml").write_text(
        '[skills]\ninclude_instructions = false\n[[skills.config]]\nname = "release-notes"\n'
        "enabled = false\n"
    )
    daemon = await started(cody_env, model, "")
    try:
        created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
        model.enqueue(text("ok"))
        await daemon.prompt(created["sessionId"], "hello")
    finally:
        await daemon.close()
    meta = created["_meta"]["cody"]
    assert {s["name"] for s in meta["skills"]} == {"secret-tools", "release-notes"}
    assert any("ignored skills from" in w and "not trusted" in w for w in meta["warnings"])
    (item,) = skills_items(model.requests[0])
    assert "- release-notes:" in item


async def test_doctor_shows_a_disabled_skill_as_disabled(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = two_skills(cody_env)
    cody_env.use_mock_provider(
        model.base_url, '[[skills.config]]\nname = "secret-tools"\nenabled = false\n'
    )
    code, out, err = await run_client(cody_env, "doctor", cwd=root)
    assert code == 0, out + err
    lines = out.splitlines()
    start = lines.index("Skills        1 skill")
    section = lines[start : start + 4]
    assert section[1].lstrip().startswith("release-notes")
    assert section[2] == "  1 skill off by [[skills.config]] in the config:"
    assert section[3].lstrip().startswith("secret-tools") and section[3].endswith("(disabled)")
    code, out, err = await run_client(cody_env, "doctor", "--json", cwd=root)
    report = json.loads(out)
    assert [s["name"] for s in report["session"]["skills"]] == ["release-notes"]
    assert [s["name"] for s in report["session"]["disabledSkills"]] == ["secret-tools"]
