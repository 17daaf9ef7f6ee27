"""The rest of the MCP client protocol, against the real `server-everything` (npm), through
the real daemon: elicitation forwarded to the client (`_cody/mcp/elicit`) and answered, or
declined without a hang when the client cannot answer; progress as tool-call progress; the
server's log in the daemon's log at the daemon's level; task-only tools hidden.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cody_protocol.mcp import McpElicitParams

from tests.e2e.test_mcp_real_servers import server_toml, start, wait_ready
from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs
from tests.support.real_mcp_servers import everything

ELICIT = "_cody/mcp/elicit"


async def test_an_elicitation_reaches_the_client_and_its_answer_the_server(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(cody_env, model, server_toml("every", everything()))
    asked: list[dict[str, Any]] = []

    async def answer(params: Any) -> Any:
        asked.append(params)
        if params["mode"] == "url":
            return {"action": "accept"}  # the user opened the URL and finished there
        return {"action": "accept", "content": {"name": "Ada Lovelace", "check": True}}

    daemon.conn.on_request(ELICIT, answer)
    try:
        sid = await daemon.new_session()
        await wait_ready(daemon, "every")
        model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="el"))
        login = {"url": "https://example.com/login", "message": "Sign in there"}
        model.enqueue(tool_call("mcp__every__trigger-url-elicitation", login, call_id="url"))
        model.enqueue(text("Thanks, Ada."))
        daemon.answer("allow_once", "allow_once")  # neither tool is annotated read-only

        assert (await daemon.prompt(sid, "ask me"))["stopReason"] == "end_turn"

        params, url = asked
        parsed = McpElicitParams.model_validate(params)
        assert (parsed.session_id, parsed.server, parsed.mode) == (sid, "every", "form")
        assert parsed.tool_call_id == "el" and parsed.meta is not None
        assert parsed.requested_schema is not None
        assert "name" in parsed.requested_schema["properties"]
        assert "Please provide inputs" in parsed.message
        output = tool_outputs(model.requests[-1])["el"]
        assert "User provided the requested information" in output
        assert "Name: Ada Lovelace" in output
        shown = McpElicitParams.model_validate(url)
        assert (shown.mode, shown.url, shown.message) == ("url", login["url"], "Sign in there")
        assert shown.elicitation_id and shown.tool_call_id == "url"
        assert "User completed the URL elicitation flow" in tool_outputs(model.requests[-1])["url"]
        assert not any("Roots updated" in line for line in daemon.stderr), (
            "the daemon logs at warning: the server was asked for no info messages"
        )
    finally:
        await daemon.close()


async def test_a_client_that_cannot_answer_gets_a_decline_and_no_hang(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    # This client has no handler: its connection answers -32601, as any ACP client would.
    daemon = await start(cody_env, model, server_toml("every", everything()))
    try:
        sid = await daemon.new_session()
        await wait_ready(daemon, "every")
        model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="el"))
        model.enqueue(text("Declined."))
        daemon.answer("allow_once")
        result = await daemon.prompt(sid, "ask me", timeout=40)
        assert result["stopReason"] == "end_turn"
        assert "User declined" in tool_outputs(model.requests[-1])["el"]
    finally:
        await daemon.close()


async def test_a_client_that_never_answers_is_cancelled_after_the_approval_timeout(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(
        cody_env, model, server_toml("every", everything()), extra="approval_timeout_s = 2"
    )

    async def never(params: Any) -> Any:
        await asyncio.Event().wait()

    daemon.conn.on_request(ELICIT, never)
    try:
        sid = await daemon.new_session()
        await wait_ready(daemon, "every")
        model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="el"))
        model.enqueue(text("It timed out."))
        daemon.answer("allow_once")
        result = await daemon.prompt(sid, "ask me", timeout=40)
        assert result["stopReason"] == "end_turn"
        assert "User cancelled" in tool_outputs(model.requests[-1])["el"]
        [request] = [m for m in daemon.received if m.get("method") == ELICIT]
        cancels = [m for m in daemon.received if m.get("method") == "$/cancelRequest"]
        assert [c["params"]["id"] for c in cancels] == [request["id"]], "withdrawn on the wire"
    finally:
        await daemon.close()


async def test_a_cancelled_turn_withdraws_the_open_elicitation(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(cody_env, model, server_toml("every", everything()))
    opened = asyncio.Event()

    async def never(params: Any) -> Any:
        opened.set()
        await asyncio.Event().wait()

    daemon.conn.on_request(ELICIT, never)
    try:
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("every")
        model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="el"))
        daemon.answer("allow_once")
        prompt = asyncio.ensure_future(daemon.prompt(sid, "ask me", timeout=40))
        await asyncio.wait_for(opened.wait(), 30)
        daemon.conn.notify("session/cancel", {"sessionId": sid})
        assert (await prompt)["stopReason"] == "cancelled"
        [request] = [m for m in daemon.received if m.get("method") == ELICIT]
        await daemon.wait_for(
            lambda: any(
                m.get("method") == "$/cancelRequest" and m["params"]["id"] == request["id"]
                for m in daemon.received
            )
        )
        updates = daemon.tool_updates(sid, "el")
        assert updates[-1]["status"] == "failed", "the call is closed"
    finally:
        await daemon.close()


async def test_progress_is_shown_as_tool_call_progress_and_the_log_reaches_the_daemon_log(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    daemon = await start(cody_env, model, server_toml("every", everything()), args=("-v",))
    try:
        sid = await daemon.new_session()
        await wait_ready(daemon, "every")
        model.enqueue(
            tool_call(
                "mcp__every__trigger-long-running-operation",
                {"duration": 1.5, "steps": 3},
                call_id="long",
            )
        )
        model.enqueue(text("Done."))
        await daemon.prompt(sid, "run it")

        updates = daemon.tool_updates(sid, "long")
        reported = [u for u in updates if "progress" in u.get("_meta", {}).get("cody", {})]
        progress = [u["_meta"]["cody"]["progress"] for u in reported]
        assert {"progress": 1, "total": 3} in progress and {"progress": 3, "total": 3} in progress
        shown = [u["content"][0]["content"]["text"] for u in reported]
        assert "Progress: 1/3" in shown
        assert updates[-1]["status"] == "completed", "the result comes after the progress"
        assert "Long running operation completed" in tool_outputs(model.requests[-1])["long"]

        # The server's log, at the daemon's level (-v: info), in the daemon's log.
        await daemon.wait_for(
            lambda: any(
                "MCP server every (everything-server): Roots updated" in line
                for line in daemon.stderr
            ),
            10,
        )
        # A tool that runs only as an MCP task is not offered, and says why.
        offered = [tool["name"] for tool in model.requests[0].body["tools"]]
        assert "mcp__every__echo" in offered
        assert "mcp__every__simulate-research-query" not in offered
        listed = await daemon.request("_cody/tools/list", {"sessionId": sid})
        absent = {a["name"]: a["reason"] for a in listed["absent"]}
        assert "MCP task" in absent["mcp__every__simulate-research-query"]
    finally:
        await daemon.close()


async def test_the_client_library_answers_elicitations_with_its_callback(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    from cody_client.client import CodyClient
    from cody_client.decisions import Allow
    from cody_protocol.mcp import McpElicitResult

    cody_env.use_mock_provider(model.base_url)
    config = cody_env.cody_home / "config.toml"
    config.write_text(config.read_text() + "\n" + server_toml("every", everything()))
    asked: list[McpElicitParams] = []

    async def answer(request: McpElicitParams) -> McpElicitResult:
        asked.append(request)
        return McpElicitResult(action="accept", content={"name": "Grace Hopper"})

    async def allow(request: Any) -> Any:
        return Allow()

    model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="el"))
    model.enqueue(text("Thanks."))
    ready = asyncio.Event()

    def status(params: Any) -> None:
        if params["state"] == "ready":
            ready.set()

    async with CodyClient.spawn(env=cody_env.env) as client:
        client.on_elicitation = answer
        client.on_permission = allow
        client.connection.on_notification("_cody/mcp/status", status)
        session = await client.new_session(str(cody_env.workspace))
        await asyncio.wait_for(ready.wait(), 40)
        result = await session.prompt("ask me", timeout=60)
        assert result.stop_reason == "end_turn"
    [request] = asked
    assert request.server == "every" and request.tool_call_id == "el"
    assert "Name: Grace Hopper" in tool_outputs(model.requests[-1])["el"]
