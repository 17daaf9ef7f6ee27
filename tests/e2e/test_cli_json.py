"""`cody-client exec --json`: every line validates against the checked-in schema; exit codes."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from cody_protocol.schema import EXEC_EVENTS_SCHEMA_PATH
from jsonschema import Draft202012Validator

from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call

CLIENT = [sys.executable, "-m", "cody_client"]
VALIDATOR = Draft202012Validator(json.loads(EXEC_EVENTS_SCHEMA_PATH.read_text()))


async def run_json(env: CodyEnv, *args: str, stdin: bytes = b"") -> tuple[int, list[dict], str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        "exec",
        "--json",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env.env,
        cwd=env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    events = [json.loads(line) for line in out.decode().splitlines()]
    for event in events:
        problems = [e.message for e in VALIDATOR.iter_errors(event)]
        assert not problems, (event, problems)
    assert process.returncode is not None
    return process.returncode, events, err.decode()


def types(events: list[dict]) -> list[str]:
    return [event["type"] for event in events]


async def test_a_turn_as_json_events(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(
        text("Let me check. ", chunks=3),
        tool_call(
            "exec", {"command": "echo hi", "escalate": True, "justification": "asks"}, call_id="c1"
        ),
    )
    model.enqueue(text("It printed hi.", chunks=2))
    code, events, _ = await run_json(cody_env, "--approve", "allow", "check it")
    assert code == 0
    assert types(events)[:2] == ["session.started", "turn.started"]
    assert types(events)[-1] == "turn.completed"
    messages = [e for e in events if e["type"] == "message.completed" and e["kind"] == "text"]
    assert [m["text"] for m in messages] == ["Let me check. ", "It printed hi."]
    order = types(events)
    first_delta = order.index("message.delta")
    assert order.index("message.completed") < order.index("tool.started"), "a run closes first"
    assert first_delta < order.index("tool.started")
    [approval] = [e for e in events if e["type"] == "approval.requested"]
    assert (approval["toolCallId"], approval["decision"], approval["reason"]) == (
        "c1",
        "allow_once",
        "--approve allow",
    )
    [done] = [e for e in events if e["type"] == "tool.completed"]
    assert done["status"] == "completed" and "hi" in done["output"]
    end = events[-1]
    assert end["stopReason"] == "end_turn" and end["exitCode"] == 0
    assert end["usage"]["total"]["totalTokens"] >= 0
    assert events[0]["sessionId"] and events[0]["model"] == "mock-model"


async def test_json_exit_codes(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(
        tool_call(
            "exec", {"command": "touch x", "escalate": True, "justification": "asks"}, call_id="c1"
        )
    )
    model.enqueue(text("denied"))
    code, events, err = await run_json(cody_env, "touch x")
    assert code == 4 and events[-1]["exitCode"] == 4 and events[-1]["denied"] is True
    assert "no terminal to ask" in err

    model.enqueue_error(429, headers={"Retry-After": "0"})
    code, events, _ = await run_json(cody_env, "hello")
    assert code == 5
    assert events[-1]["type"] == "error" and events[-1]["code"] == -32010
    assert events[-1]["data"]["kind"] == "rate_limit"

    code, events, _ = await run_json(cody_env, "-", stdin=b"")
    assert code == 2 and events[-1] == {
        "type": "error",
        "message": events[-1]["message"],
        "exitCode": 2,
    }

    code, events, _ = await run_json(cody_env, "--provider", "nope", "hi")
    assert code == 2 and events[-1]["code"] == -32602

    code, events, _ = await run_json(
        cody_env, "--resume", "01a20000-0000-7000-8000-000000000000", "hi"
    )
    assert code == 2 and events[-1]["code"] == -32002


async def test_interrupting_exec_cancels_the_turn_with_exit_3(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("slow " * 100, chunks=100), delay_s=0.05)
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        "exec",
        "--json",
        "talk slowly",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cody_env.env,
        cwd=cody_env.workspace,
    )
    assert process.stdout is not None
    while True:
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        if b"message.delta" in line:
            break
    process.send_signal(signal.SIGINT)
    rest, _ = await asyncio.wait_for(process.communicate(), 30)
    events = [json.loads(line) for line in rest.decode().splitlines()]
    assert process.returncode == 3
    assert events[-1]["type"] == "turn.completed" and events[-1]["stopReason"] == "cancelled"


async def test_allowed_tools_hide_the_others(cody_env: CodyEnv, model: MockResponsesServer) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(tool_call("exec", {"command": "touch forced"}, call_id="c1"))
    model.enqueue(text("refused"))
    code, events, _ = await run_json(
        cody_env, "--allowed-tools", "readFile,listDir", "--approve", "allow", "x"
    )
    advertised = [tool["name"] for tool in model.requests[0].body["tools"]]
    assert advertised == ["readFile", "listDir"]
    [done] = [e for e in events if e["type"] == "tool.completed"]
    assert done["status"] == "failed" and "not allowed" in done["output"]
    assert not (cody_env.workspace / "forced").exists()
    assert code == 4, "a refused call exits 4, like a rejected one"


async def test_chat_slash_commands_without_a_terminal(cody_env: CodyEnv) -> None:
    script = b"\n".join(
        [
            b"/help",
            b"/approvals never",
            b"/approvals",
            b"/model",
            b"run echo via-chat",
            b"/sessions",
            b"/fork 0",
            b"/history",
            b"/teleport",
            b"/quit",
        ]
    )
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        "--provider",
        "offline",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cody_env.env,
        cwd=cody_env.workspace,
    )
    out_bytes, err = await asyncio.wait_for(process.communicate(script + b"\n"), 60)
    out = out_bytes.decode()
    assert process.returncode == 0, err.decode()
    assert "/resume [ID]" in out, "/help lists the commands"
    assert "Approval policy: never" in out
    assert "offline ✓" in out and "← current" in out
    assert "via-chat" in out and "Approval needed" not in out, "policy never: no approval asked"
    assert "← this session" in out
    assert "Forked into session" in out
    assert out.count("› run echo via-chat") >= 1, "/history replays the user message"
    assert "Unknown command /teleport" in out


async def test_a_turn_cut_at_the_output_limit_exits_1(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    from tests.support.mock_responses import incomplete

    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("a very long answer that"), end=incomplete())
    code, events, _ = await run_json(cody_env, "write a novel")
    assert code == 1
    assert events[-1]["type"] == "turn.completed" and events[-1]["stopReason"] == "max_tokens"
    assert events[-1]["exitCode"] == 1


async def test_an_empty_chat_is_not_saved_and_a_prompted_one_is(cody_env: CodyEnv) -> None:
    """Issue 10.9: quitting a chat where nothing was asked leaves no session behind (and says
    so); a chat with a prompt says how to resume it, and its file exists."""

    async def chat(script: bytes) -> str:
        process = await asyncio.create_subprocess_exec(
            *CLIENT,
            "--provider",
            "offline",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=cody_env.env,
            cwd=cody_env.workspace,
        )
        out, err = await asyncio.wait_for(process.communicate(script), 60)
        assert process.returncode == 0, err.decode()
        return out.decode()

    def files() -> list[str]:
        return [p.name for p in (cody_env.cody_home / "sessions").rglob("*.jsonl")]

    out = await chat(b"/help\n/quit\n")
    assert "not saved" in out and "Resume with" not in out
    assert files() == []

    out = await chat(b"list files\n/quit\n")
    assert "Session saved. Resume with: cody-client --resume" in out
    [saved] = files()
    assert out.split("--resume ")[1].split()[0] in saved
