"""MCP servers through the real daemon: tools called through approvals, resources, failures."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from tests.support.daemon import CodyEnv, Daemon, expect_error
from tests.support.mcp_servers import SCRIPTS
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs


def mcp_config(extra: str = "") -> str:
    return (
        f'[mcp_servers.demo]\ncommand = "{sys.executable}"\nargs = ["{SCRIPTS["demo"]}"]\n'
        "startup_timeout_s = 20\n"
        f"{extra}"
    )


def statuses(daemon: Daemon, server: str) -> list[dict]:
    return daemon.mcp_statuses(server)


async def test_mcp_tools_are_called_through_an_approval_and_resources_read(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="")
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text() + "\n" + mcp_config()
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("demo")
        model.enqueue(tool_call("mcp__demo__add", {"a": 2, "b": 40}, call_id="m1"))
        model.enqueue(
            tool_call("readMcpResource", {"server": "demo", "uri": "demo://greeting"}, call_id="r1")
        )
        model.enqueue(text("42, and the greeting"))
        daemon.answer("allow_once")

        result = await daemon.prompt(sid, "use the demo server")

        assert result["stopReason"] == "end_turn"
        advertised = {tool["name"]: tool for tool in model.requests[0].body["tools"]}
        assert "mcp__demo__add" in advertised and "readMcpResource" in advertised
        assert set(advertised["mcp__demo__add"]["parameters"]["properties"]) == {"a", "b"}
        [request] = daemon.permission_requests
        assert request["toolCall"]["toolCallId"] == "m1", "MCP tools need approval; resources don't"
        outputs = tool_outputs(model.requests[-1])
        assert "42" in outputs["m1"]
        assert "Hello from the demo resource." in outputs["r1"]
        ready = statuses(daemon, "demo")
        assert ready[-1]["state"] == "ready" and ready[-1]["tools"] >= 2
        listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
        assert any(tool["name"] == "mcp__demo__shout" for tool in listed["tools"])
        assert listed["mcpServers"][0]["state"] == "ready"
    finally:
        await daemon.close()


async def test_a_server_given_by_the_client_and_a_per_server_approval_override(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="")
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + '\n[mcp_servers.trusted]\ncommand = "true"\nrequires_approval = false\nenabled = false\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        result = await daemon.request(
            "session/new",
            {
                "cwd": str(cody_env.workspace),
                "mcpServers": [
                    {
                        "name": "trusted",
                        "command": sys.executable,
                        "args": [str(SCRIPTS["demo"])],
                        "env": [],
                    }
                ],
            },
        )
        sid = result["sessionId"]
        await daemon.wait_mcp_ready("trusted")
        model.enqueue(tool_call("mcp__trusted__shout", {"text": "quiet"}, call_id="s1"))
        model.enqueue(text("done"))
        await daemon.prompt(sid, "shout")
        assert daemon.permission_requests == [], "requires_approval = false for this server"
        assert "QUIET" in tool_outputs(model.requests[-1])["s1"]
    finally:
        await daemon.close()


async def test_a_hanging_server_is_reported_and_does_not_block_the_session(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + f'\n[mcp_servers.stuck]\ncommand = "{sys.executable}"\nargs = ["{SCRIPTS["hang"]}"]\n'
        "startup_timeout_s = 1\n" + mcp_config()
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        started = time.monotonic()
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("demo")
        model.enqueue(tool_call("mcp__demo__shout", {"text": "still works"}, call_id="s1"))
        model.enqueue(text("ok"))
        daemon.answer("allow_once")
        result = await daemon.prompt(sid, "go")
        assert result["stopReason"] == "end_turn"
        assert time.monotonic() - started < 15, "liveness: the hang costs its 1 s timeout, not more"
        failed = [s for s in statuses(daemon, "stuck") if s["state"] == "failed"]
        assert failed and "timed out after 1" in failed[0]["reason"]
        assert "startup_timeout_s" in failed[0]["reason"]
        tools = [tool["name"] for tool in model.requests[0].body["tools"]]
        assert "mcp__demo__shout" in tools and not any(t.startswith("mcp__stuck") for t in tools)
        assert "STILL WORKS" in tool_outputs(model.requests[-1])["s1"]
    finally:
        await daemon.close()


async def test_a_crashing_server_reports_why(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url)
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + f'\n[mcp_servers.broken]\ncommand = "{sys.executable}"\nargs = ["{SCRIPTS["crash"]}"]\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        await daemon.wait_for(
            lambda: any(s["state"] == "failed" for s in statuses(daemon, "broken")), 20
        )
        [failed] = [s for s in statuses(daemon, "broken") if s["state"] == "failed"]
        assert "exited with code" in failed["reason"]
        model.enqueue(text("fine without it"))
        assert (await daemon.prompt(sid, "hi"))["stopReason"] == "end_turn"
    finally:
        await daemon.close()


async def test_an_sse_server_from_the_client_is_a_clear_error(offline_daemon: Daemon) -> None:
    from tests.support.daemon import expect_error

    error = await expect_error(
        offline_daemon.request(
            "session/new",
            {
                "cwd": str(offline_daemon.env.workspace),
                "mcpServers": [
                    {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []}
                ],
            },
        ),
        -32602,
    )
    assert "sse" in json.dumps(error.data).lower() or "sse" in error.message.lower()


async def test_two_prompts_during_mcp_start_up_run_one_turn_not_two(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Regression: the session was claimed only after MCP start-up, so both prompts ran."""
    cody_env.use_mock_provider(model.base_url, extra="")
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + f'\n[mcp_servers.slow]\ncommand = "{sys.executable}"\n'
        f'args = ["{SCRIPTS["slow"]}", "2"]\nstartup_timeout_s = 30\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(text("first answer"))
        model.enqueue(text("a second turn must not have run"))
        model.unused_ok = True  # scripted to be left: a second turn would take it
        first = asyncio.ensure_future(daemon.prompt(sid, "one"))
        await asyncio.sleep(0.1)
        await expect_error(daemon.prompt(sid, "two"), -32011)

        assert (await first)["stopReason"] == "end_turn"
        assert len(model.requests) == 1
        loaded = await daemon.request("_cody/tools/list", {"sessionId": sid})
        assert any(t["name"] == "mcp__slow__add" for t in loaded["tools"])
    finally:
        await daemon.close()
    session_file = next(cody_env.cody_home.rglob("*.jsonl"))
    lines = [json.loads(line) for line in session_file.read_text().splitlines()]
    users = [
        line
        for line in lines
        if line.get("type") == "response_item" and line["payload"].get("role") == "user"
    ]
    assert len(users) == 1, "only the first prompt reached the history"


async def test_a_cancel_during_mcp_start_up_answers_cancelled(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="")
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + f'\n[mcp_servers.slow]\ncommand = "{sys.executable}"\n'
        f'args = ["{SCRIPTS["slow"]}", "5"]\nstartup_timeout_s = 30\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        pending = asyncio.ensure_future(daemon.prompt(sid, "one"))
        await asyncio.sleep(0.2)
        daemon.conn.notify("session/cancel", {"sessionId": sid})
        assert (await asyncio.wait_for(pending, 10))["stopReason"] == "cancelled"
        assert model.requests == []
    finally:
        await daemon.close()


async def test_a_slow_server_does_not_hold_the_turn_and_joins_when_ready(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="")
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + f'\n[mcp_servers.slow]\ncommand = "{sys.executable}"\n'
        f'args = ["{SCRIPTS["slow"]}", "8"]\nstartup_timeout_s = 40\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(text("answered without the slow server"))
        assert (await daemon.prompt(sid, "one"))["stopReason"] == "end_turn"
        first = [tool["name"] for tool in model.requests[0].body["tools"]]
        assert not any(name.startswith("mcp__slow") for name in first)
        told = [s for s in statuses(daemon, "slow") if s["state"] == "starting" and s.get("reason")]
        assert told and "still starting" in told[0]["reason"], "the client is told"

        await daemon.wait_for(lambda: statuses(daemon, "slow")[-1]["state"] == "ready", 40)
        model.enqueue(text("now with it"))
        await daemon.prompt(sid, "two")
        assert "mcp__slow__add" in [tool["name"] for tool in model.requests[1].body["tools"]]
    finally:
        await daemon.close()


async def test_tools_list_changed_reaches_the_next_model_call(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="")
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text() + "\n" + mcp_config()
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("demo")
        model.enqueue(tool_call("mcp__demo__unlock", {}, call_id="u"))
        model.enqueue(tool_call("mcp__demo__secret", {}, call_id="s"))
        model.enqueue(text("found it"))
        daemon.answer("allow_once", "allow_once")
        await daemon.prompt(sid, "unlock")
        before = [tool["name"] for tool in model.requests[0].body["tools"]]
        after = [tool["name"] for tool in model.requests[1].body["tools"]]
        assert "mcp__demo__secret" not in before and "mcp__demo__secret" in after
        assert "the unlocked secret" in tool_outputs(model.requests[-1])["s"]
    finally:
        await daemon.close()


async def test_env_vars_pass_named_variables_of_the_daemon_only(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, extra="")
    cody_env.env["PASSED_IN"] = "value-from-the-daemon"
    cody_env.env["KEPT_BACK"] = "not-for-the-server"
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + f'\n[mcp_servers.envecho]\ncommand = "{sys.executable}"\n'
        f'args = ["{SCRIPTS["envecho"]}"]\nstartup_timeout_s = 20\nrequires_approval = false\n'
        'env_vars = ["PASSED_IN", "NOT_SET_ANYWHERE"]\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("envecho")
        model.enqueue(tool_call("mcp__envecho__environment", {}, call_id="env"))
        model.enqueue(text("seen"))
        await daemon.prompt(sid, "show your environment")
        output = tool_outputs(model.requests[-1])["env"]
        assert "PASSED_IN=value-from-the-daemon" in output
        assert "KEPT_BACK" not in output and "NOT_SET_ANYWHERE" not in output
    finally:
        await daemon.close()


async def test_a_missing_command_says_so_plainly(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Regression: the reason read `command not found: '/x' (not)`."""
    cody_env.use_mock_provider(model.base_url, extra="")
    (cody_env.cody_home / "config.toml").write_text(
        (cody_env.cody_home / "config.toml").read_text()
        + '\n[mcp_servers.gone]\ncommand = "/no/such/server"\n'
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        await daemon.new_session()
        await daemon.wait_for(lambda: statuses(daemon, "gone")[-1]["state"] == "failed", 20)
        reason = statuses(daemon, "gone")[-1]["reason"]
        assert reason == "command not found: /no/such/server does not exist"
    finally:
        await daemon.close()
