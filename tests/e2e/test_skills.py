"""Skills through the real daemon: `SKILL.md` folders listed for the model (name,
description, path; never the body) within 2% of the context window, the rest named as
omitted; `$skill` in a prompt attaches one; `/<skill> args` runs it; `_meta.cody.skills`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, RecordedRequest, text
from tests.support.model_inputs import input_items, user_texts

pytestmark = pytest.mark.e2e

DEMO = """---
name: demo
description: Builds the demo site from docs/ and checks its links
---
# Demo
SKILL-BODY-MARKER: run scripts/build.sh with $ARGUMENTS, then check the links.
"""


def skills_items(request: RecordedRequest) -> list[str]:
    found = []
    for item in input_items(request):
        if item.get("type") == "message" and item.get("role") == "developer":
            body = item["content"][0].get("text", "")
            if body.startswith("<skills>"):
                found.append(str(body))
    return found


def write_skill(folder: Path, name: str, description: str, body: str = "body") -> Path:
    folder.mkdir(parents=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


def project(env: CodyEnv) -> Path:
    root = env.workspace / "proj"
    (root / ".git").mkdir(parents=True)
    demo = root / ".agents" / "skills" / "demo"
    demo.mkdir(parents=True)
    (demo / "SKILL.md").write_text(DEMO)
    return root


async def test_a_project_skill_is_listed_without_its_body_and_sent_once(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    root = project(cody_env)
    path = root / ".agents" / "skills" / "demo" / "SKILL.md"
    created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
    sid = created["sessionId"]
    assert created["_meta"]["cody"]["skills"] == [
        {
            "name": "demo",
            "description": "Builds the demo site from docs/ and checks its links",
            "path": str(path),
            "scope": "project",
            "origin": "agents",
            "modelInvocable": True,
            "userInvocable": True,
        }
    ]
    model.enqueue(text("ok"))
    model.enqueue(text("ok"))
    await daemon.prompt(sid, "hello")
    await daemon.prompt(sid, "again")
    first = skills_items(model.requests[0])
    assert len(first) == 1
    assert (
        f"- demo: Builds the demo site from docs/ and checks its links (file: {path})" in first[0]
    )
    assert "SKILL-BODY-MARKER" not in str(model.requests[0].body)
    assert skills_items(model.requests[1]) == first, "the same item, not sent again"


async def test_two_hundred_skills_keep_the_budget_and_the_rest_are_named(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    window = 128_000
    cody_env.use_mock_provider(model.base_url, f"model_context_window = {window}")
    skills = cody_env.root / "home" / ".agents" / "skills"
    for index in range(200):
        write_skill(
            skills / f"skill-{index:03d}",
            f"skill-{index:03d}",
            f"Does task number {index} of the release checklist, carefully and in order",
        )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        created = await daemon.request(
            "session/new", {"cwd": str(cody_env.workspace), "mcpServers": []}
        )
        assert len(created["_meta"]["cody"]["skills"]) == 200
        model.enqueue(text("ok"))
        await daemon.prompt(created["sessionId"], "hello")
    finally:
        await daemon.close()
    (item,) = skills_items(model.requests[0])
    budget_tokens = window * 2 // 100
    assert len(item) / 4 <= budget_tokens, (len(item), budget_tokens)
    assert "- skill-000: Does task number 0" in item
    assert "Not listed, for lack of room (" in item
    listed = item.count("\n- skill-")
    omitted = 200 - listed
    assert f"Not listed, for lack of room ({omitted})" in item
    assert "skill-199" in item and "- skill-199:" not in item, "the last one is named as omitted"


async def test_dollar_skill_attaches_it_and_slash_skill_runs_it(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    root = project(cody_env)
    path = root / ".agents" / "skills" / "demo" / "SKILL.md"
    created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
    sid = created["sessionId"]
    model.enqueue(text("ok"))
    model.enqueue(text("ok"))
    await daemon.prompt(sid, "please use $demo for the release")
    await daemon.prompt(sid, "/demo --fast")
    mentioned = "\n".join(user_texts(model.requests[0]))
    assert "The user named the skill `demo`" in mentioned
    assert f'<file uri="{path.as_uri()}">' in mentioned and "SKILL-BODY-MARKER" in mentioned
    ran = user_texts(model.requests[1])[-1]
    assert ran.startswith("Use the skill `demo` for this request.")
    assert "SKILL-BODY-MARKER: run scripts/build.sh with --fast, then check the links." in ran
