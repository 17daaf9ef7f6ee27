"""Honest tools, through the real daemon: a tool that cannot work in the session is not
offered to the model, and `_cody/tools/list` and `cody-client doctor` say why it is absent.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mcp_servers import SCRIPTS
from tests.support.mock_responses import MockResponsesServer, RecordedRequest, text, tool_call
from tests.support.model_inputs import tool_outputs

pytestmark = pytest.mark.e2e

WEB = ("webSearch", "perplexitySearch")


def offered(request: RecordedRequest) -> set[str]:
    return {tool["name"] for tool in request.body.get("tools", [])}


async def start(env: CodyEnv, model: MockResponsesServer, extra: str = "") -> Daemon:
    env.use_mock_provider(model.base_url, extra)
    daemon = await Daemon.start(env)
    await daemon.initialize()
    return daemon


async def test_web_tools_are_absent_without_a_key_and_present_with_one(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(cody_env, model)
    try:
        sid = await daemon.new_session(approvalPolicy="untrusted")
        listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
        model.enqueue(tool_call("webSearch", {"query": "cody"}, call_id="w1"))
        model.enqueue(text("no search, then"))
        await daemon.prompt(sid, "search the web")
    finally:
        await daemon.close()
    without = model.requests[0]
    assert not set(WEB) & offered(without), "not offered without PERPLEXITY_API_KEY"
    assert {"exec", "readFile", "fetchUrl"} <= offered(without), "the rest still are"
    absent = {tool["name"]: tool["reason"] for tool in listed["absent"]}
    assert set(WEB) <= set(absent)
    assert "PERPLEXITY_API_KEY" in absent["webSearch"]
    assert not set(WEB) & {tool["name"] for tool in listed["tools"]}
    # A model that calls it anyway gets an error saying why, and the user is never asked to
    # approve a call that could only fail.
    error = tool_outputs(model.requests[1])["w1"]
    assert "'webSearch' is not available in this session" in error
    assert "PERPLEXITY_API_KEY" in error
    assert daemon.permission_requests == []

    cody_env.env["PERPLEXITY_API_KEY"] = "pplx-test-not-secret"
    daemon = await start(cody_env, model)
    try:
        sid = await daemon.new_session()
        listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
        model.enqueue(text("ok"))
        await daemon.prompt(sid, "hi")
    finally:
        await daemon.close()
    assert set(WEB) <= offered(model.requests[-1])
    # Only `symbols` is left out: the harness turns the language servers off.
    assert [tool["name"] for tool in listed["absent"]] == ["symbols"]
    assert set(WEB) <= {tool["name"] for tool in listed["tools"]}


async def test_a_key_under_another_variable_and_a_tool_turned_off(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.env["MY_PPLX"] = "pplx-test-not-secret"
    daemon = await start(
        cody_env,
        model,
        '[tools.webSearch]\nenv_key = "MY_PPLX"\n[tools.fetchUrl]\nenabled = false\n',
    )
    try:
        sid = await daemon.new_session()
        listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
        model.enqueue(text("ok"))
        await daemon.prompt(sid, "hi")
    finally:
        await daemon.close()
    tools = offered(model.requests[0])
    assert "webSearch" in tools and "perplexitySearch" not in tools and "fetchUrl" not in tools
    absent = {tool["name"]: tool["reason"] for tool in listed["absent"]}
    assert "enabled = false" in absent["fetchUrl"]
    assert "PERPLEXITY_API_KEY" in absent["perplexitySearch"]


async def test_symbols_is_absent_while_no_language_server_runs_and_says_why(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """The harness turns language servers off (CODY_LSP=off): `symbols` is never offered, and
    a model that calls it anyway is told why instead of getting an unknown tool."""
    daemon = await start(cody_env, model)
    try:
        sid = await daemon.new_session()
        listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
        model.enqueue(
            tool_call("symbols", {"operation": "workspaceSymbols", "query": "x"}, call_id="s1")
        )
        model.enqueue(text("no symbols, then"))
        await daemon.prompt(sid, "find x")
    finally:
        await daemon.close()
    assert "symbols" not in offered(model.requests[0])
    assert "symbols" not in {tool["name"] for tool in listed["tools"]}
    absent = {tool["name"]: tool["reason"] for tool in listed["absent"]}
    assert "language servers are turned off" in absent["symbols"]
    error = tool_outputs(model.requests[1])["s1"]
    assert "'symbols' is not available in this session" in error
    assert "language servers are turned off" in error


async def test_a_failed_mcp_server_brings_no_tools_and_says_why(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    extra = f'[mcp_servers.broken]\ncommand = "{sys.executable}"\nargs = ["{SCRIPTS["crash"]}"]\n'
    daemon = await start(cody_env, model, extra)
    try:
        sid = await daemon.new_session()
        listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
        model.enqueue(text("fine without it"))
        await daemon.prompt(sid, "hi")
    finally:
        await daemon.close()
    tools = offered(model.requests[0])
    assert "readMcpResource" not in tools and not any(t.startswith("mcp__") for t in tools)
    [server] = listed["mcpServers"]
    assert server["state"] == "failed" and "exited with code" in server["reason"]
    absent = {tool["name"]: tool["reason"] for tool in listed["absent"]}
    assert "MCP servers is running" in absent["readMcpResource"]


async def test_doctor_names_the_project_instructions_and_the_absent_tools(
    cody_env: CodyEnv,
) -> None:
    repo = cody_env.workspace
    (repo / ".git").mkdir()
    (repo / "AGENTS.md").write_text("Use tabs.\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_bytes(b"\x00binary")
    (cody_env.root / "codex-home" / "AGENTS.md").write_text("Be brief.\n")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_client",
        "doctor",
        "--no-daemon-socket",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=cody_env.env,
        cwd=repo / "sub",
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    lines = out.decode().splitlines()
    [docs] = [line for line in lines if line.startswith("Project instructions: ")]
    global_file = cody_env.root / "codex-home" / "AGENTS.md"
    # global file first; a file above the cwd by its full path, one in the cwd by its name
    assert docs.startswith(f"Project instructions: {global_file}, {repo / 'AGENTS.md'} (")
    assert docs.endswith("; skipped: AGENTS.md (not text (binary))")
    assert "Tools not offered to the model" in lines
    [web] = [line for line in lines if line.startswith("  --  webSearch")]
    assert "PERPLEXITY_API_KEY" in web
    assert not list(cody_env.cody_home.glob("sessions/**/*.jsonl")), "doctor saved no session"
