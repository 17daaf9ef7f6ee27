"""Issue 27's extensions and issue 28's MCP servers in one session, through the real daemon
and the real `server-everything` (npm): the servers' prompts, the custom commands and the
skills advertised in one `available_commands_update` and each run by its own name; hooks
on MCP tool calls (a `PreToolUse` matcher on `mcp__<server>__<tool>` blocks one with its
stderr to the model, or allows one that would ask; `PostToolUse` text reaches the next
request; the hook is told the MCP tool's name and arguments).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_mcp_real_servers import child_pids, server_toml, start
from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, RecordedRequest, text, tool_call
from tests.support.model_inputs import input_items, tool_outputs, user_texts
from tests.support.real_mcp_servers import everything

pytestmark = pytest.mark.e2e


def project(env: CodyEnv) -> Path:
    root = env.workspace / "proj"
    (root / ".git").mkdir(parents=True)
    commands = root / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "hello.md").write_text(
        "---\ndescription: Greets\n---\nHELLO-COMMAND: say hello to $ARGUMENTS\n"
    )
    skill = root / ".agents" / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: Builds the demo\n---\nDEMO-SKILL-BODY with $ARGUMENTS\n"
    )
    return root


def advertised(daemon: Daemon, sid: str) -> list[dict[str, Any]]:
    updates = daemon.session_updates(sid, "available_commands_update")
    return list(updates[-1]["availableCommands"]) if updates else []


async def test_mcp_prompts_custom_commands_and_skills_are_one_list_and_each_runs(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = project(cody_env)
    # A repository's command file that takes an MCP prompt's name: never advertised or run
    # in its place (a `/mcp:` prompt is always the server's).
    shadow = root / ".claude" / "commands" / "mcp" / "every" / "args-prompt.md"
    shadow.parent.mkdir(parents=True)
    shadow.write_text("---\ndescription: The weather, officially\n---\nREPO-SHADOW\n")
    daemon = await start(cody_env, model, server_toml("every", everything()))
    try:
        created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
        sid = created["sessionId"]
        warnings = "\n".join(created["_meta"]["cody"]["warnings"])
        assert f"/mcp:every:args-prompt in {shadow} is not used" in warnings
        listed = {c["name"] for c in created["_meta"]["cody"]["commands"]}
        assert "hello" in listed and "mcp:every:args-prompt" not in listed

        await daemon.wait_for(
            lambda: "mcp:every:simple-prompt" in {c["name"] for c in advertised(daemon, sid)}, 40
        )
        commands = advertised(daemon, sid)
        names = [c["name"] for c in commands]
        assert len(names) == len(set(names)), f"a name advertised twice: {names}"
        assert {"compact", "hello", "demo", "mcp:every:args-prompt"} <= set(names)
        by_name = {c["name"]: c for c in commands}
        assert "officially" not in by_name["mcp:every:args-prompt"]["description"]
        assert by_name["hello"]["description"].startswith("Greets")

        for _ in range(3):
            model.enqueue(text("ok"))
        await daemon.prompt(sid, "/mcp:every:simple-prompt")
        await daemon.prompt(sid, "/hello world")
        await daemon.prompt(sid, "/demo fast")
    finally:
        await daemon.close()
    assert "This is a simple prompt without arguments." in user_texts(model.requests[0])[-1]
    assert "HELLO-COMMAND: say hello to world" in user_texts(model.requests[1])[-1]
    assert "DEMO-SKILL-BODY with fast" in user_texts(model.requests[2])[-1]
    assert "REPO-SHADOW" not in json.dumps([r.body for r in model.requests])


def hook_script(env: CodyEnv, name: str, body: str) -> str:
    path = env.root / "hooks" / f"{name}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text("import json, sys\n" + body)
    return f"{sys.executable} {path}"


def developer_texts(request: RecordedRequest, start: str) -> list[str]:
    return [
        str(item["content"][0].get("text", ""))
        for item in input_items(request)
        if item.get("type") == "message"
        and item.get("role") == "developer"
        and str(item["content"][0].get("text", "")).startswith(start)
    ]


async def test_hooks_match_mcp_tools_by_their_mcp_names(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    seen = cody_env.root / "seen.jsonl"
    record = (
        f"data = json.load(sys.stdin)\nopen({str(seen)!r}, 'a').write(json.dumps(data) + '\\n')\n"
    )
    no_secrets = hook_script(
        cody_env,
        "no_secrets",
        record + "if 'secret' in json.dumps(data['tool_input']):\n"
        "    print('no secrets through MCP servers', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    allow = hook_script(
        cody_env,
        "allow",
        record + "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'permissionDecision': 'allow', 'permissionDecisionReason': 'logging is harmless'}}))\n",
    )
    note = hook_script(
        cody_env,
        "note",
        record + "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse', "
        "'additionalContext': 'AUDITED: ' + data['tool_name']}}))\n",
    )
    (cody_env.root / "codex-home" / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "mcp__every__echo",
                            "hooks": [{"type": "command", "command": no_secrets}],
                        },
                        {
                            "matcher": "mcp__every__toggle-.*",
                            "hooks": [{"type": "command", "command": allow}],
                        },
                    ],
                    "PostToolUse": [
                        {"matcher": "mcp__.*", "hooks": [{"type": "command", "command": note}]}
                    ],
                }
            }
        )
    )
    # `untrusted`: the server's tool that is not read-only would ask.
    daemon = await start(
        cody_env, model, server_toml("every", everything()), extra='approval_policy = "untrusted"'
    )
    try:
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("every")
        model.enqueue(tool_call("mcp__every__echo", {"message": "the secret is 42"}, call_id="e1"))
        model.enqueue(tool_call("mcp__every__toggle-simulated-logging", {}, call_id="t1"))
        model.enqueue(text("done"))
        await daemon.prompt(sid, "go")
    finally:
        await daemon.close()

    assert daemon.permission_requests == [], "the hook allowed the call that would ask"
    outputs = tool_outputs(model.requests[1])
    assert "no secrets through MCP servers" in outputs["e1"]
    assert "Echo:" not in outputs["e1"], "the blocked call never reached the server"
    assert "logging" in tool_outputs(model.requests[2])["t1"].lower()
    (audited,) = developer_texts(model.requests[2], '<hook event="PostToolUse')
    assert "AUDITED: mcp__every__toggle-simulated-logging" in audited
    calls = [json.loads(line) for line in seen.read_text().splitlines()]
    told = [(c["hook_event_name"], c["tool_name"], c["tool_input"]) for c in calls]
    assert told == [
        ("PreToolUse", "mcp__every__echo", {"message": "the secret is 42"}),
        ("PreToolUse", "mcp__every__toggle-simulated-logging", {}),
        ("PostToolUse", "mcp__every__toggle-simulated-logging", {}),
    ]


async def test_doctor_lists_the_commands_skills_hooks_and_mcp_servers_with_their_prompts(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = project(cody_env)
    (cody_env.root / "codex-home" / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "mcp__every__.*",
                            "hooks": [{"type": "command", "command": "true"}],
                        }
                    ]
                }
            }
        )
    )
    cody_env.use_mock_provider(model.base_url)
    config = cody_env.cody_home / "config.toml"
    config.write_text(
        config.read_text()
        + "\n"
        + server_toml("every", everything())
        + '\n[mcp_servers.gone]\ncommand = "/no/such/server"\n'
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_client",
        "doctor",
        "--no-daemon-socket",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=cody_env.env,
        cwd=root,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    shown = out.decode()
    assert "Commands      1 custom command" in shown and "  /hello" in shown
    assert "Skills        1 skill" in shown and ".agents/skills/demo/SKILL.md" in shown
    assert "Hooks         1 hook" in shown and "PreToolUse [mcp__every__.*]: true" in shown
    assert "MCP servers   2 servers" in shown
    (every,) = [line for line in shown.splitlines() if line.startswith("  ok  every")]
    assert "tools, 4 prompts: /mcp:every:simple-prompt, /mcp:every:args-prompt" in every
    assert "  !!  gone             command not found: /no/such/server does not exist" in shown


async def test_a_notification_hook_hears_of_an_mcp_servers_question(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Regression: only approvals and a turn's end were notified (Claude Code's
    `elicitation_dialog` never came), so a question could wait unseen until its timeout."""
    notes = cody_env.root / "notes.jsonl"
    note = hook_script(
        cody_env,
        "note",
        f"open({str(notes)!r}, 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n",
    )
    (cody_env.cody_home / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "Notification": [
                        {
                            "matcher": "elicitation_dialog",
                            "hooks": [{"type": "command", "command": note}],
                        }
                    ]
                }
            }
        )
    )
    daemon = await start(
        cody_env, model, server_toml("every", everything()), extra='approval_policy = "never"'
    )
    asked: list[Any] = []

    async def answer(params: Any) -> Any:
        await daemon.wait_for(lambda: notes.exists() and bool(notes.read_text()))
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada Lovelace"}}

    daemon.conn.on_request("_cody/mcp/elicit", answer)
    try:
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("every")
        model.enqueue(tool_call("mcp__every__trigger-elicitation-request", {}, call_id="el"))
        model.enqueue(text("Thanks."))
        await daemon.prompt(sid, "ask me")
    finally:
        await daemon.close()
    [told] = [json.loads(line) for line in notes.read_text().splitlines()]
    assert told["notification_type"] == "elicitation_dialog" and told["session_id"] == sid
    assert told["message"].startswith("MCP server every asks for your input: Please provide")
    assert asked, "the client was asked (after the hook heard of it)"
    assert "Name: Ada Lovelace" in tool_outputs(model.requests[-1])["el"]


async def test_a_killed_servers_prompt_restarts_it_as_its_tools_do(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Regression: after a crash the server's prompts were dropped from the session (but not
    from the editor's list) and `/mcp:every:...` answered "no such MCP prompt", though the
    server is restarted at its next use."""
    daemon = await start(cody_env, model, server_toml("every", everything()))
    try:
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("every")
        daemon_pid = daemon.process.process.pid  # type: ignore[attr-defined]
        [server_pid] = child_pids(daemon_pid)
        os.kill(server_pid, signal.SIGKILL)
        await daemon.wait_for(lambda: daemon.mcp_statuses("every")[-1]["state"] == "failed", 20)
        assert "mcp:every:simple-prompt" in {c["name"] for c in advertised(daemon, sid)}

        model.enqueue(text("ok"))
        await daemon.prompt(sid, "/mcp:every:simple-prompt", timeout=40)
    finally:
        await daemon.close()
    assert "no such MCP prompt" not in daemon.agent_text(sid)
    assert "This is a simple prompt without arguments." in user_texts(model.requests[0])[-1]
    assert [s["state"] for s in daemon.mcp_statuses("every")][-2:] == ["starting", "ready"]


async def test_rules_still_apply_to_read_only_mcp_tools(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """`readOnlyHint` spares the question, never a user's rule: an `ask` rule asks for the
    read-only echo, a `deny` rule refuses the read-only sum."""
    daemon = await start(
        cody_env,
        model,
        server_toml("every", everything()),
        extra='approval_policy = "on-request"\n'
        '[permissions]\nask = ["mcp__every__echo"]\ndeny = ["mcp__every__get-sum"]\n',
    )
    try:
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("every")
        model.enqueue(tool_call("mcp__every__echo", {"message": "hi"}, call_id="e"))
        model.enqueue(tool_call("mcp__every__get-sum", {"a": 1, "b": 2}, call_id="s"))
        model.enqueue(tool_call("mcp__every__get-tiny-image", {}, call_id="t"))
        model.enqueue(text("done"))
        daemon.answer("allow_once")
        await daemon.prompt(sid, "go")
    finally:
        await daemon.close()
    asked = [r["toolCall"]["toolCallId"] for r in daemon.permission_requests]
    assert asked == ["e"], "the ask rule asked; the read-only image tool did not"
    assert "Echo: hi" in tool_outputs(model.requests[1])["e"]
    summed = json.loads(tool_outputs(model.requests[2])["s"])
    assert "mcp__every__get-sum" in summed["error"] and "config.toml" in summed["error"]
    assert "The sum of" not in json.dumps(summed), "the server was never called"
