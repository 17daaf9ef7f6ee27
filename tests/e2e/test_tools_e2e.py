"""Tools, grants, sandbox and allowlists through the real daemon on real temp directories."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.mock_web import MockWeb, chat_answer, search_answer
from tests.support.model_inputs import tool_outputs

DENIED = json.dumps({"error": "User denied approval"})


def tree(root: os.PathLike[str], skip: str = "cody-home") -> dict[str, bytes]:
    """Every file under `root` with its bytes (to prove nothing changed), except the daemon's
    own data dir (`skip`), where session files are expected to grow."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != skip]
        for name in files:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    out[os.path.relpath(path, root)] = handle.read()
    return out


async def test_a_patch_that_does_not_apply_changes_nothing_and_names_the_hunk(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    (ws / "a.py").write_text("def a():\n    return 1\n")
    (ws / "b.py").write_text("def b():\n    return 2\n")
    before = tree(ws)
    patch = (
        "*** Begin Patch\n"
        "*** Update File: a.py\n@@\n def a():\n-    return 1\n+    return 10\n"
        "*** Update File: b.py\n@@\n def b():\n-    return 3\n+    return 30\n"
        "*** End Patch\n"
    )
    model.enqueue(tool_call("applyPatch", {"patch": patch}, call_id="p1"))
    model.enqueue(
        tool_call("applyPatch", {"patch": "*** Begin Patch\n*** Frobnicate: x\n"}, call_id="p2")
    )
    model.enqueue(text("I'll fix the patch"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "patch")

    outputs = tool_outputs(model.requests[-1])
    error = json.loads(outputs["p1"])["error"]
    assert "b.py" in error and "hunk 1" in error and "return 3" in error
    assert "invalid patch" in json.loads(outputs["p2"])["error"]
    assert tree(ws) == before, "nothing was half-applied"


async def test_allow_for_session_on_git_status_never_covers_push(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    # Each asks to run outside the sandbox: where a grant matters under the default policy.
    outside = {"escalate": True, "justification": "it needs the remote"}
    model.enqueue(tool_call("exec", {"command": "git status --short", **outside}, call_id="s1"))
    model.enqueue(
        tool_call("exec", {"command": ["git", "status", "--short"], **outside}, call_id="s2")
    )
    model.enqueue(
        tool_call("exec", {"command": "bash -lc 'git status --short'", **outside}, call_id="s3")
    )
    model.enqueue(tool_call("exec", {"command": "git push", **outside}, call_id="p1"))
    model.enqueue(tool_call("exec", {"command": "sh -c 'git push'", **outside}, call_id="p2"))
    model.enqueue(tool_call("exec", {"command": ["git", "push"], **outside}, call_id="p3"))
    model.enqueue(text("done"))
    sid = await daemon.new_session()
    daemon.answer("allow_always", "reject_once", "reject_once", "reject_once")

    await daemon.prompt(sid, "status then push")

    asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
    assert asked == ["s1", "p1"], (
        "git status asked once; git push asked; its spellings not re-asked"
    )
    outputs = tool_outputs(model.requests[-1])
    assert outputs["p2"] == DENIED and outputs["p3"] == DENIED
    lines = [
        json.loads(line)["payload"]
        for path in (daemon.env.cody_home / "sessions").glob("*/*/*/*.jsonl")
        for line in path.read_text().splitlines()
        if '"kind":"approval"' in line.replace(" ", "")
    ]
    reasons = {line["callId"]: line["reason"] for line in lines}
    assert reasons == {
        "s1": "user",
        "s2": "grant",
        "s3": "grant",
        "p1": "user",
        "p2": "turn rejection",
        "p3": "turn rejection",
    }


async def test_workspace_write_blocks_every_escape_and_read_only_writes_nothing(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    ws = daemon.env.workspace
    outside = daemon.env.root / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("untouched\n")
    (ws / "link").symlink_to(outside)
    watched = daemon.env.root
    before = tree(watched)
    escape_patch = "*** Begin Patch\n*** Add File: ../outside/patched.txt\n+x\n*** End Patch\n"
    model.enqueue(
        tool_call("writeFile", {"filePath": "../outside/w.txt", "content": "x"}, call_id="w1")
    )
    model.enqueue(tool_call("writeFile", {"filePath": "link/w.txt", "content": "x"}, call_id="w2"))
    model.enqueue(
        tool_call("writeFile", {"filePath": str(outside / "abs.txt"), "content": "x"}, call_id="w3")
    )
    model.enqueue(tool_call("applyPatch", {"patch": escape_patch}, call_id="a1"))
    model.enqueue(tool_call("exec", {"command": f"touch {outside}/touched.txt"}, call_id="e1"))
    model.enqueue(tool_call("exec", {"command": "touch /outside-cody-test"}, call_id="e2"))
    model.enqueue(text("all refused"))
    sid = await daemon.new_session(approvalPolicy="never")

    await daemon.prompt(sid, "escape")

    outputs = tool_outputs(model.requests[-1])
    for call_id in ("w1", "w2", "w3", "a1"):
        assert "sandbox" in json.loads(outputs[call_id])["error"], call_id
    for call_id in ("e1", "e2"):
        assert "Exit code: 0" not in outputs[call_id], call_id
    assert tree(watched) == before
    assert not os.path.exists("/outside-cody-test")

    model.enqueue(tool_call("writeFile", {"filePath": "inside.txt", "content": "x"}, call_id="r1"))
    model.enqueue(
        tool_call("exec", {"command": "touch inside2.txt; echo > inside3.txt"}, call_id="r2")
    )
    model.enqueue(text("nothing written"))
    await daemon.request("session/set_mode", {"sessionId": sid, "modeId": "read-only"})
    await daemon.request(
        "session/set_config_option",
        {"sessionId": sid, "configId": "approval_policy", "value": "never"},
    )
    await daemon.prompt(sid, "try writing under read-only")
    assert tree(watched) == before, "read-only: nothing written anywhere"


async def test_allowed_tools_hide_every_other_tool_and_refuse_a_forced_call(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("exec", {"command": "touch forced.txt"}, call_id="x1"))
    model.enqueue(text("ok"))
    sid = await daemon.new_session(allowedTools=["readFile"], approvalPolicy="never")

    await daemon.prompt(sid, "go")

    assert [tool["name"] for tool in model.requests[0].body["tools"]] == ["readFile"]
    error = json.loads(tool_outputs(model.requests[-1])["x1"])["error"]
    assert "not allowed" in error and "exec" in error
    assert not (daemon.env.workspace / "forced.txt").exists()


async def test_phase_research_offers_only_read_and_search_tools(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(text("reading only"))
    sid = await daemon.new_session(phase="research")
    await daemon.prompt(sid, "look")
    names = {tool["name"] for tool in model.requests[0].body["tools"]}
    assert "readFile" in names and "exec" not in names and "writeFile" not in names
    assert "applyPatch" not in names


@pytest.fixture
async def web() -> MockWeb:
    async with MockWeb() as server:
        yield server  # type: ignore[misc]


async def test_web_tools_work_against_local_servers(
    cody_env: CodyEnv, model: MockResponsesServer, web: MockWeb
) -> None:
    cody_env.use_mock_provider(
        model.base_url,
        extra=(
            f'\n[tools.webSearch]\nbase_url = "{web.base_url}"\n'
            f'[tools.perplexitySearch]\nbase_url = "{web.base_url}"\n'
            '[tools.fetchUrl]\nallow_private = ["127.0.0.1"]\n'
        ),
    )
    cody_env.env["PERPLEXITY_API_KEY"] = "pplx-test-not-secret"
    web.json(
        "POST",
        "/search",
        search_answer(
            [
                {
                    "title": "Cody docs",
                    "url": "https://example.org/cody",
                    "snippet": "Cody is a coding agent.",
                }
            ]
        ),
    )
    web.json(
        "POST",
        "/chat/completions",
        chat_answer(
            "<think>checking</think>Cody runs as a daemon [1].",
            citations=["https://example.org/cody"],
        ),
    )
    web.page(
        "/article",
        "<html><head><title>Article</title></head><body><nav>menu</nav>"
        "<article><h1>The headline</h1><p>" + "Real article text. " * 30 + "</p></article>"
        "<footer>footer</footer></body></html>",
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(tool_call("webSearch", {"query": "what is cody"}, call_id="w1"))
        model.enqueue(tool_call("perplexitySearch", {"query": "how does cody run"}, call_id="w2"))
        model.enqueue(tool_call("fetchUrl", {"url": web.url("/article")}, call_id="w3"))
        model.enqueue(text("summarised"))
        sid = await daemon.new_session(approvalPolicy="untrusted")
        daemon.answer("allow_always", "allow_always", "allow_always")
        await daemon.prompt(sid, "research")
        fetch_request = next(
            r for r in daemon.permission_requests if r["toolCall"]["toolCallId"] == "w3"
        )
        origin = f"http://127.0.0.1:{web.port}"
        assert fetch_request["_meta"]["cody"]["grantKey"] == f"every page of {origin}"
        outputs = tool_outputs(model.requests[-1])
        assert "Cody docs" in outputs["w1"] and "https://example.org/cody" in outputs["w1"]
        assert "daemon [1]" in outputs["w2"] and "<think>" not in outputs["w2"]
        assert "Sources:" in outputs["w2"]
        assert "The headline" in outputs["w3"] and "Real article text." in outputs["w3"]
        assert "menu" not in outputs["w3"]
        assert (
            web.requests_to("/search")[0].headers["authorization"] == "Bearer pplx-test-not-secret"
        )
    finally:
        await daemon.close()


async def test_a_web_tool_without_a_key_is_a_clear_error(
    daemon: Daemon, model: MockResponsesServer
) -> None:
    model.enqueue(tool_call("webSearch", {"query": "x"}, call_id="w1"))
    model.enqueue(text("no key"))
    sid = await daemon.new_session(approvalPolicy="never")
    await daemon.prompt(sid, "search")
    error = json.loads(tool_outputs(model.requests[-1])["w1"])["error"]
    assert "PERPLEXITY_API_KEY" in error


async def test_fetch_url_cannot_reach_the_users_own_machine_even_when_a_project_allows_it(
    cody_env: CodyEnv, model: MockResponsesServer, web: MockWeb
) -> None:
    """Regression: fetchUrl followed the model to loopback and private addresses."""
    cody_env.use_mock_provider(model.base_url)
    project = cody_env.workspace / ".cody"
    project.mkdir()
    (project / "config.toml").write_text('[tools.fetchUrl]\nallow_private = ["127.0.0.0/8"]\n')
    web.page("/admin", "<html><title>router admin</title><body>secret</body></html>")
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        model.enqueue(tool_call("fetchUrl", {"url": web.url("/admin")}, call_id="f1"))
        model.enqueue(text("could not"))
        result = await daemon.request(
            "session/new",
            {
                "cwd": str(cody_env.workspace),
                "mcpServers": [],
                "_meta": {"cody": {"approvalPolicy": "never"}},
            },
        )
        warnings = result["_meta"]["cody"]["warnings"]
        assert any("tools.fetchUrl.allow_private" in w for w in warnings), warnings
        await daemon.prompt(result["sessionId"], "read the admin page")
        error = json.loads(tool_outputs(model.requests[-1])["f1"])["error"]
        assert "loopback address" in error and "allow_private" in error
        assert web.requests == [], "nothing may be sent to a local service"
    finally:
        await daemon.close()
