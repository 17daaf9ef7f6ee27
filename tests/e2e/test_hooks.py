"""Hooks through the real daemon, in the shape Claude Code and Codex share: where they come
from (an untrusted project's never run: a marker file proves it), what they are told (stdin
fields, the scrubbed environment, the project directory), what their answers do
(SessionStart and UserPromptSubmit context, a blocked prompt, PreToolUse exit 2 and
`permissionDecision`, PostToolUse text, a Stop hook that makes the turn go on once), and what
a failing or hanging hook costs (reported, killed, the turn goes on).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, RecordedRequest, text, tool_call
from tests.support.model_inputs import input_items, tool_outputs

pytestmark = pytest.mark.e2e


def script(env: CodyEnv, name: str, body: str) -> str:
    """A Python hook script; returns the command that runs it."""
    path = env.root / "hooks" / f"{name}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text("import json, os, sys, time\n" + body)
    return f"{sys.executable} {path}"


def hooks_file(path: Path, hooks: dict[str, Any], key: str = "hooks") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: hooks}))


def group(command: str, matcher: str | None = None, **extra: Any) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return [entry]


def hook_texts(request: RecordedRequest, event: str) -> list[str]:
    found = []
    for item in input_items(request):
        if item.get("type") == "message" and item.get("role") == "developer":
            body = str(item["content"][0].get("text", ""))
            if body.startswith(f'<hook event="{event}'):
                found.append(body)
    return found


def roles(request: RecordedRequest) -> list[str]:
    out = []
    for item in input_items(request):
        if item.get("type") == "message":
            first = str(item["content"][0].get("text", ""))
            out.append(f"{item['role']}:{first[:24]}")
    return out


def hook_reports(daemon: Daemon) -> list[dict[str, Any]]:
    return [
        message["params"]
        for message in daemon.received
        if message.get("method") == "_cody/hook/status"
    ]


def decision_of(daemon: Daemon, sid: str, call_id: str) -> dict[str, Any]:
    """The `_meta.cody.decision` a call's updates carried."""
    for update in daemon.tool_updates(sid, call_id):
        decision = (update.get("_meta") or {}).get("cody", {}).get("decision")
        if decision is not None:
            return dict(decision)
    raise AssertionError(f"no decision for {call_id}")


def trusted_project(env: CodyEnv, model: MockResponsesServer, *, trust: bool) -> Path:
    root = env.workspace / "proj"
    (root / ".git").mkdir(parents=True)
    extra = f'trusted_projects = ["{root}"]' if trust else ""
    env.use_mock_provider(model.base_url, extra)
    return root


@pytest.mark.parametrize("trust", [False, True])
async def test_an_untrusted_projects_hooks_never_run_and_the_warning_names_them(
    cody_env: CodyEnv, model: MockResponsesServer, trust: bool
) -> None:
    root = trusted_project(cody_env, model, trust=trust)
    marker = cody_env.root / "MARKER"
    touch = f"touch {marker}"
    hooks_file(
        root / ".claude" / "settings.json",
        {
            "SessionStart": group(touch),
            "UserPromptSubmit": group(touch),
            "PreToolUse": group(touch, "Bash"),
            "PostToolUse": group(touch),
            "Stop": group(touch),
        },
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
        model.enqueue(tool_call("exec", {"command": ["true"]}, call_id="c1"))
        model.enqueue(text("done"))
        await daemon.prompt(created["sessionId"], "run true")
    finally:
        await daemon.close()
    warnings = "\n".join(created["_meta"]["cody"]["warnings"])
    listed = created["_meta"]["cody"]["hooks"]
    if trust:
        assert marker.exists(), "a trusted project's hooks run (the marker proves the check)"
        assert {hook["event"] for hook in listed} >= {"SessionStart", "PreToolUse", "Stop"}
        assert "not trusted" not in warnings
    else:
        assert not marker.exists(), "an untrusted project's hook ran"
        assert listed == []
        assert str(root / ".claude" / "settings.json") in warnings
        assert f"PreToolUse `{touch}`" in warnings and "not trusted" in warnings
        assert f'add "{root}" to trusted_projects' in warnings


async def test_what_a_hook_is_told_and_what_its_context_does(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    root = trusted_project(cody_env, model, trust=False)
    seen = cody_env.root / "seen.jsonl"
    record = (
        f"data = json.load(sys.stdin)\n"
        f"data['env'] = {{k: os.environ.get(k) for k in ('MOCK_API_KEY', 'CLAUDE_PROJECT_DIR', 'CODY_SESSION_ID')}}\n"
        f"data['pwd'] = os.getcwd()\n"
        f"open({str(seen)!r}, 'a').write(json.dumps(data) + '\\n')\n"
    )
    start = script(cody_env, "start", record + "print('START-CONTEXT: the build uses make')\n")
    prompt = script(
        cody_env,
        "prompt",
        record + "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit', "
        "'additionalContext': 'PROMPT-CONTEXT: today is release day'}}))\n",
    )
    hooks_file(
        cody_env.root / "codex-home" / "hooks.json",
        {"SessionStart": group(start, "startup"), "UserPromptSubmit": group(prompt)},
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        created = await daemon.request("session/new", {"cwd": str(root), "mcpServers": []})
        sid = created["sessionId"]
        assert {h["event"] for h in created["_meta"]["cody"]["hooks"]} == {
            "SessionStart",
            "UserPromptSubmit",
        }
        model.enqueue(text("ok"))
        model.enqueue(text("ok"))
        await daemon.prompt(sid, "ship it")
        await daemon.prompt(sid, "again")
    finally:
        await daemon.close()
    first = model.requests[0]
    order = roles(first)
    start_at = next(i for i, r in enumerate(order) if r.startswith('developer:<hook event="Sess'))
    user_at = next(i for i, r in enumerate(order) if r.startswith("user:ship it"))
    prompt_at = next(i for i, r in enumerate(order) if r.startswith('developer:<hook event="User'))
    assert start_at < user_at < prompt_at, order
    assert "START-CONTEXT: the build uses make" in hook_texts(first, "SessionStart")[0]
    assert "PROMPT-CONTEXT" in hook_texts(first, "UserPromptSubmit")[0]
    assert len(hook_texts(model.requests[1], "SessionStart")) == 1, "SessionStart ran once"
    calls = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [c["hook_event_name"] for c in calls] == [
        "SessionStart",
        "UserPromptSubmit",
        "UserPromptSubmit",
    ]
    first_call = calls[0]
    assert first_call["session_id"] == sid and first_call["source"] == "startup"
    assert first_call["cwd"] == str(root) and first_call["pwd"] == str(root)
    assert first_call["transcript_path"] == created["_meta"]["cody"]["sessionFile"]
    assert first_call["permission_mode"] == "acceptEdits"  # Cody's `auto` mode
    assert calls[1]["prompt"] == "ship it"
    assert first_call["env"] == {
        "MOCK_API_KEY": None,  # the provider key never reaches a hook
        "CLAUDE_PROJECT_DIR": str(root),
        "CODY_SESSION_ID": sid,
    }


async def test_a_prompt_blocked_by_a_hook_never_reaches_the_model(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    block = script(
        cody_env,
        "block",
        "data = json.load(sys.stdin)\n"
        "if 'password' in data['prompt']:\n"
        "    print('prompts must not hold passwords', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    hooks_file(
        cody_env.root / "claude-config" / "settings.json", {"UserPromptSubmit": group(block)}
    )
    sid = await daemon.new_session()
    result = await daemon.prompt(sid, "my password is hunter2")
    assert result["stopReason"] == "refusal"
    assert not model.requests
    assert "prompts must not hold passwords" in daemon.agent_text(sid)
    model.enqueue(text("fine"))
    result = await daemon.prompt(sid, "hello")
    assert result["stopReason"] == "end_turn"
    assert "hunter2" not in json.dumps(model.requests[0].body), "the blocked prompt is gone"


async def test_post_tool_use_text_reaches_the_next_request(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    note = script(
        cody_env,
        "note",
        "data = json.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse', "
        "'additionalContext': 'LINT: ' + data['tool_name'] + ' exit ' + "
        "str(data['tool_response'].get('exit_code'))}}))\n",
    )
    hooks_file(cody_env.cody_home / "hooks.json", {"PostToolUse": group(note, "Bash")})
    sid = await daemon.new_session()
    model.enqueue(tool_call("exec", {"command": ["true"]}, call_id="c1"))
    model.enqueue(text("done"))
    await daemon.prompt(sid, "run true")
    after = model.requests[1]
    (found,) = hook_texts(after, "PostToolUse (exec)")
    assert "LINT: exec exit 0" in found
    order = [item.get("type") for item in input_items(after)]
    assert order.index("function_call_output") < len(order) - 1
    assert input_items(after)[-1]["role"] == "developer", "after the tool output"


async def test_a_stop_hook_makes_the_turn_go_on_once(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    stop = script(
        cody_env,
        "stop",
        "data = json.load(sys.stdin)\n"
        "if not data['stop_hook_active'] and 'TESTS PASS' not in data['last_assistant_message']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'Run the tests first.'}))\n",
    )
    hooks_file(cody_env.root / "codex-home" / "hooks.json", {"Stop": group(stop)})
    sid = await daemon.new_session()
    model.enqueue(text("I changed the code."))
    model.enqueue(text("Ran them: TESTS PASS"))
    result = await daemon.prompt(sid, "fix it")
    assert result["stopReason"] == "end_turn"
    assert len(model.requests) == 2
    (reason,) = hook_texts(model.requests[1], "Stop")
    assert "Run the tests first." in reason


async def test_a_hanging_hook_times_out_is_killed_and_reported(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    pid_file = cody_env.root / "hang.pid"
    hang = script(
        cody_env, "hang", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    hooks_file(cody_env.cody_home / "hooks.json", {"UserPromptSubmit": group(hang, timeout=1)})
    sid = await daemon.new_session()
    model.enqueue(text("answered anyway"))
    result = await daemon.prompt(sid, "hello")
    assert result["stopReason"] == "end_turn"
    assert "answered anyway" in daemon.agent_text(sid)
    (report,) = hook_reports(daemon)
    assert report["status"] == "timed_out" and report["event"] == "UserPromptSubmit"
    assert report["command"] == hang and "timed out after 1 s" in report["message"]
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_failing_hook_is_reported_and_blocks_nothing_unless_fail_closed(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    broken = script(cody_env, "broken", "raise SystemExit('cannot reach the policy server')\n")
    hooks_file(cody_env.cody_home / "hooks.json", {"UserPromptSubmit": group(broken)})
    sid = await daemon.new_session()
    model.enqueue(text("ok"))
    result = await daemon.prompt(sid, "hello")
    assert result["stopReason"] == "end_turn"
    (report,) = hook_reports(daemon)
    assert report["status"] == "failed"
    assert "exited with code 1: cannot reach the policy server" in report["message"]
    assert len(model.requests) == 1

    # The same hook marked failClosed (Cody's key) blocks the prompt when it fails.
    hooks_file(
        cody_env.cody_home / "hooks.json", {"UserPromptSubmit": group(broken, failClosed=True)}
    )
    closed = await daemon.new_session()
    result = await daemon.prompt(closed, "hello")
    assert result["stopReason"] == "refusal"
    assert len(model.requests) == 1
    assert "cannot reach the policy server" in daemon.agent_text(closed)


async def test_cancelling_the_turn_kills_its_running_hook(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    pid_file = cody_env.root / "slow.pid"
    slow = script(
        cody_env, "slow", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    hooks_file(cody_env.cody_home / "hooks.json", {"UserPromptSubmit": group(slow)})
    sid = await daemon.new_session()
    turn = asyncio.create_task(daemon.prompt(sid, "hello"))
    await daemon.wait_for(lambda: pid_file.exists() and bool(pid_file.read_text()))
    daemon.conn.notify("session/cancel", {"sessionId": sid})
    result = await turn
    assert result["stopReason"] == "cancelled"
    assert not model.requests
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


NO_RM = (
    "data = json.load(sys.stdin)\n"
    "if data['tool_input']['command'].split()[0] == 'rm':\n"
    "    print('rm is not allowed here; move files to trash/ instead', file=sys.stderr)\n"
    "    sys.exit(2)\n"
)
ALLOW_GIT = (
    "data = json.load(sys.stdin)\n"
    "if data['tool_input']['command'].startswith('git '):\n"
    "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
    "'permissionDecision': 'allow', 'permissionDecisionReason': 'read-only git'}}))\n"
)


async def test_pre_tool_use_exit_2_blocks_rm_and_the_model_sees_why(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "never"')
    victim = cody_env.workspace / "keep.txt"
    victim.write_text("precious")
    no_rm = script(cody_env, "no_rm", NO_RM)
    hooks_file(cody_env.root / "codex-home" / "hooks.json", {"PreToolUse": group(no_rm, "Bash")})
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(tool_call("exec", {"command": ["rm", "keep.txt"]}, call_id="c1"))
        model.enqueue(tool_call("exec", {"command": "echo fine"}, call_id="c2"))
        model.enqueue(text("done"))
        await daemon.prompt(sid, "clean up")
        assert decision_of(daemon, sid, "c1") == {
            "by": "hook",
            "detail": f"the PreToolUse hook `{no_rm}`",
            "outcome": "deny",
        }
        session_file = Path(
            (
                await daemon.request(
                    "session/resume", {"sessionId": sid, "cwd": str(cody_env.workspace)}
                )
            )["_meta"]["cody"]["sessionFile"]
        )
    finally:
        await daemon.close()
    recorded = [
        json.loads(line)["payload"]
        for line in session_file.read_text().splitlines()
        if '"approval"' in line
    ]
    assert {"callId": "c1", "by": "hook", "decision": "deny"}.items() <= recorded[0].items()
    assert victim.exists(), "the hook's exit 2 blocked rm"
    outputs = tool_outputs(model.requests[1])
    assert "rm is not allowed here; move files to trash/ instead" in outputs["c1"]
    assert "fine" in tool_outputs(model.requests[2])["c2"], "only rm was blocked"
    assert not daemon.permission_requests


async def test_a_hooks_allow_skips_the_prompt_and_its_ask_asks(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "untrusted"')
    ask = script(
        cody_env,
        "ask",
        "data = json.load(sys.stdin)\n"
        "if 'make' in data['tool_input']['command']:\n"
        "    print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'ask'}}))\n",
    )
    hooks_file(
        cody_env.root / "claude-config" / "settings.json",
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": script(cody_env, "git", ALLOW_GIT)}],
                },
                {"matcher": "exec", "hooks": [{"type": "command", "command": ask}]},
            ]
        },
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        # untrusted would ask for `git --version` (not a known-safe form): the hook allows it.
        model.enqueue(tool_call("exec", {"command": "git --version"}, call_id="c1"))
        model.enqueue(tool_call("exec", {"command": "echo make"}, call_id="c2"))
        model.enqueue(text("done"))
        daemon.answer("allow_once")
        await daemon.prompt(sid, "go")
        allowed = decision_of(daemon, sid, "c1")
        asked_why = decision_of(daemon, sid, "c2")
    finally:
        await daemon.close()
    asked = [r["toolCall"]["rawInput"]["command"] for r in daemon.permission_requests]
    assert asked == ["echo make"], "git ran unasked (the hook allowed it); make asked"
    assert allowed["by"] == "hook" and allowed["detail"].endswith(": read-only git")
    assert (
        asked_why["by"] == "user" and "asked because of the PreToolUse hook" in asked_why["detail"]
    )
    assert "git version" in tool_outputs(model.requests[1])["c1"]


async def test_a_permission_request_hook_answers_instead_of_the_user(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "untrusted"')
    decide = script(
        cody_env,
        "decide",
        "data = json.load(sys.stdin)\n"
        "behavior = 'allow' if 'hello' in data['tool_input']['command'] else 'deny'\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest', "
        "'decision': {'behavior': behavior, 'message': 'only greetings'}}}))\n",
    )
    notes = cody_env.root / "notes.jsonl"
    note = script(
        cody_env, "note", f"open({str(notes)!r}, 'a').write(sys.stdin.read().strip() + '\\n')\n"
    )
    hooks_file(
        cody_env.cody_home / "hooks.json",
        {"PermissionRequest": group(decide, "Bash"), "Notification": group(note)},
    )
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(tool_call("exec", {"command": "echo hello > greeting.txt"}, call_id="c1"))
        model.enqueue(tool_call("exec", {"command": "python3 -c 'print(2)'"}, call_id="c2"))
        model.enqueue(text("done"))
        await daemon.prompt(sid, "go")
        await daemon.wait_for(lambda: notes.exists() and "idle_prompt" in notes.read_text())
        denied = decision_of(daemon, sid, "c2")
    finally:
        await daemon.close()
    assert not daemon.permission_requests, "the hook answered both"
    assert denied == {
        "by": "hook",
        "detail": f"the PermissionRequest hook `{decide}`: only greetings",
        "outcome": "deny",
    }
    outputs = tool_outputs(model.requests[2])
    assert (cody_env.workspace / "greeting.txt").read_text() == "hello\n"
    assert "only greetings" in outputs["c2"] and "User denied" not in outputs["c2"]
    kinds = [json.loads(line)["notification_type"] for line in notes.read_text().splitlines()]
    assert kinds == ["idle_prompt"], "no approval was left waiting for the user"


async def test_notification_hooks_hear_of_a_waiting_approval_and_the_end_of_a_turn(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url, 'approval_policy = "untrusted"')
    notes = cody_env.root / "notes.jsonl"
    note = script(
        cody_env, "note", f"open({str(notes)!r}, 'a').write(sys.stdin.read().strip() + '\\n')\n"
    )
    hooks_file(cody_env.cody_home / "hooks.json", {"Notification": group(note)})
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize()
        sid = await daemon.new_session()
        model.enqueue(tool_call("exec", {"command": "python3 -c 'print(3)'"}, call_id="c1"))
        model.enqueue(text("done"))
        daemon.answer("allow_once")
        await daemon.prompt(sid, "go")
        await daemon.wait_for(lambda: notes.exists() and "idle_prompt" in notes.read_text())
    finally:
        await daemon.close()
    seen = [json.loads(line) for line in notes.read_text().splitlines()]
    assert [n["notification_type"] for n in seen] == ["permission_prompt", "idle_prompt"]
    assert seen[0]["message"] == "Cody needs your permission to use exec"


async def test_a_notification_hook_that_fails_after_the_turn_is_still_reported(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    broken = script(cody_env, "late", "raise SystemExit('no desktop to notify')\n")
    hooks_file(cody_env.cody_home / "hooks.json", {"Notification": group(broken, "idle_prompt")})
    sid = await daemon.new_session()
    model.enqueue(text("ok"))
    await daemon.prompt(sid, "hello")
    await daemon.wait_for(lambda: bool(hook_reports(daemon)))
    (report,) = hook_reports(daemon)
    assert report["event"] == "Notification" and report["sessionId"] == sid
    assert "no desktop to notify" in report["message"]


async def test_closing_the_session_kills_a_hook_still_running(
    cody_env: CodyEnv, daemon: Daemon, model: MockResponsesServer
) -> None:
    pid_file = cody_env.root / "idle.pid"
    slow = script(
        cody_env, "idle", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    hooks_file(cody_env.cody_home / "hooks.json", {"Notification": group(slow, "idle_prompt")})
    sid = await daemon.new_session()
    model.enqueue(text("ok"))
    await daemon.prompt(sid, "hello")  # answered while the Notification hook still runs
    await daemon.wait_for(lambda: pid_file.exists() and bool(pid_file.read_text()))
    pid = int(pid_file.read_text())
    os.kill(pid, 0)  # alive
    await daemon.request("session/close", {"sessionId": sid})
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
