"""`cody-client exec` as CI uses it (issue 24.9 and 24.10): `--json` always ends with exactly
one `turn.completed` or `error` (also on SIGTERM and when the daemon cannot start), and the
options CI authors reach for: `-o/--output-last-message`, the final text in
`turn.completed`, `-c key=value`, `--max-turns`, `--ephemeral`. Every line is checked
against the checked-in event schema."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from tests.e2e.test_cli_json import VALIDATOR, run_json, types
from tests.support.daemon import CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call

CLIENT = [sys.executable, "-m", "cody_client"]
FINAL = ("turn.completed", "error")


def one_final_event(events: list[dict]) -> dict:
    """The run's events end with exactly one final event, and nothing follows it."""
    finals = [e for e in events if e["type"] in FINAL]
    assert len(finals) == 1 and events[-1] is finals[0], types(events)
    return finals[0]


async def start_exec(env: CodyEnv, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *CLIENT, "exec", "--json", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env.env, cwd=env.workspace,
    )  # fmt: skip


async def read_until(process: asyncio.subprocess.Process, marker: bytes) -> list[bytes]:
    assert process.stdout is not None
    lines = []
    while True:
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line, f"exec ended before {marker!r}: {lines}"
        lines.append(line)
        if marker in line:
            return lines


def parsed(lines: list[bytes]) -> list[dict]:
    events = [json.loads(line) for line in lines if line.strip()]
    for event in events:
        assert not [e.message for e in VALIDATOR.iter_errors(event)], event
    return events


# -- 24.9: one final event, whatever happens ---------------------------------------------------


async def test_sigterm_cancels_the_turn_and_ends_with_turn_completed_cancelled(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """What `timeout 60 cody-client exec --json ...` and CI cancellation do: before, the
    stream stopped after `turn.started` and the command kept running in the daemon."""
    cody_env.use_mock_provider(model.base_url)
    slow = "echo started > started.txt; sleep 30; echo landed > landed.txt"
    model.enqueue(tool_call("exec", {"command": slow}, call_id="slow"))
    process = await start_exec(
        cody_env, "--approval-policy", "untrusted", "--approve", "allow", "run the slow thing"
    )
    head = await read_until(process, b'"approval.requested"')
    for _ in range(1000):  # the command really runs
        if (cody_env.workspace / "started.txt").exists():
            break
        await asyncio.sleep(0.01)

    process.send_signal(signal.SIGTERM)
    rest, _ = await asyncio.wait_for(process.communicate(), 30)

    events = parsed(head + rest.splitlines())
    final = one_final_event(events)
    assert final["type"] == "turn.completed" and final["stopReason"] == "cancelled"
    assert final["exitCode"] == 3 and process.returncode == 3
    [done] = [e for e in events if e["type"] == "tool.completed"]
    assert done["status"] == "failed"
    assert not (cody_env.workspace / "landed.txt").exists()


async def test_sigterm_before_the_turn_ends_with_one_error(cody_env: CodyEnv) -> None:
    """A daemon that never answers `initialize` (wedged): SIGTERM ends the run with an
    `error` event, exit code 3, instead of no line at all."""
    script = cody_env.root / "wedged_daemon.py"
    asked = cody_env.root / "initialize-received"
    script.write_text(
        "import pathlib, sys, time\n"
        "sys.stdin.buffer.readline()\n"
        f"pathlib.Path({str(asked)!r}).touch()\n"
        "time.sleep(60)\n"
    )
    cody_env.env["CODY_DAEMON"] = f"{sys.executable} {script}"
    process = await start_exec(cody_env, "hello")
    for _ in range(3000):  # exec is waiting for the answer to `initialize`
        if asked.exists():
            break
        await asyncio.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(process.communicate(), 30)

    final = one_final_event(parsed(out.splitlines()))
    assert final["type"] == "error" and final["exitCode"] == 3
    assert "SIGTERM" in final["message"] and process.returncode == 3


async def test_a_daemon_that_cannot_start_is_one_error_event(cody_env: CodyEnv) -> None:
    """Before: no line at all on stdout, only a message on stderr."""
    cody_env.env["CODY_DAEMON"] = str(cody_env.root / "no-such-daemon")
    code, events, err = await run_json(cody_env, "hello")
    assert code == 1 and types(events) == ["error"]
    assert "could not start the daemon" in events[0]["message"] and events[0]["exitCode"] == 1
    assert "could not start the daemon" in err and "Traceback" not in err

    crash = cody_env.root / "crashing_daemon.py"
    crash.write_text("import sys\nprint('fatal: broken install', file=sys.stderr)\nsys.exit(3)\n")
    cody_env.env["CODY_DAEMON"] = f"{sys.executable} {crash}"
    code, events, err = await run_json(cody_env, "hello")
    assert code == 1 and types(events) == ["error"]
    assert "exit code 3" in events[0]["message"] and "fatal: broken install" in events[0]["message"]
    assert "Traceback" not in err


# -- 24.10: options for CI ---------------------------------------------------------------------


async def test_the_final_text_is_in_turn_completed_and_written_by_output_last_message(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("Let me look. "), tool_call("exec", {"command": "echo hi"}, call_id="c1"))
    model.enqueue(text("All tests pass.", chunks=3))
    out = cody_env.root / "last.txt"
    code, events, _ = await run_json(
        cody_env, "--approve", "allow", "-o", str(out), "check the tests"
    )
    final = one_final_event(events)
    assert code == 0 and final["finalText"] == "All tests pass."
    assert out.read_text() == "All tests pass."

    model.enqueue(tool_call("exec", {"command": "echo hi"}, call_id="c2"))
    model.enqueue(tool_call("exec", {"command": "echo hi"}, call_id="c3"))
    code, events, _ = await run_json(
        cody_env, "--approve", "allow", "-o", str(out), "--max-turns", "1", "again"
    )
    final = one_final_event(events)
    assert code == 6 and final["stopReason"] == "max_turn_requests"
    assert "finalText" not in final, "no text after the last tool call"
    assert out.read_text() == "", "-o still writes (an empty file) when the turn completed"

    model.enqueue(text("Done."))
    unwritable = cody_env.root / "no-such-dir" / "last.txt"
    code, events, err = await run_json(cody_env, "-o", str(unwritable), "once more")
    final = one_final_event(events)
    assert final["type"] == "turn.completed" and final["finalText"] == "Done."
    assert code == 1 and final["exitCode"] == 1 and "--output-last-message" in err


async def test_max_turns_stops_the_turn_after_that_many_model_calls(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.unused_ok = True  # a third call is scripted to show it is never made
    for index in range(3):
        model.enqueue(tool_call("exec", {"command": f"echo {index}"}, call_id=f"c{index}"))
    code, events, _ = await run_json(cody_env, "--approve", "allow", "--max-turns", "2", "loop")
    assert code == 6 and one_final_event(events)["stopReason"] == "max_turn_requests"
    assert len(model.requests) == 2

    code, events, _ = await run_json(cody_env, "--max-turns", "0", "loop")
    assert code == 2 and types(events) == ["error"] and "at least 1" in events[0]["message"]


async def test_config_overrides_reach_the_session_and_bad_ones_are_refused(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("ok"))
    code, events, _ = await run_json(
        cody_env,
        "-c", "model_reasoning_effort=high",
        "-c", 'model="other-model"',
        "-c", "tools.exec.timeout_s=60",
        "hi",
    )  # fmt: skip
    assert code == 0, events
    body = model.requests[0].body
    assert body["model"] == "other-model" and body["reasoning"]["effort"] == "high"

    code, events, err = await run_json(cody_env, "-c", "approval_polcy=never", "hi")
    assert code == 2 and types(events) == ["error"] and events[0]["code"] == -32602
    assert "approval_polcy" in events[0]["message"]

    code, events, _ = await run_json(cody_env, "-c", "no-equals-sign", "hi")
    assert code == 2 and types(events) == ["error"] and "key=value" in events[0]["message"]
    assert len(model.requests) == 1, "refused overrides ran nothing"


async def test_ephemeral_leaves_no_saved_session(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    """Before: every `exec` left a session file behind, listed by `sessions list`."""
    cody_env.use_mock_provider(model.base_url)
    model.enqueue(text("kept"))
    model.enqueue(text("not kept"))
    code, events, _ = await run_json(cody_env, "a saved one")
    assert code == 0
    code, events, _ = await run_json(cody_env, "--ephemeral", "an ephemeral one")
    assert code == 0 and events[0]["ephemeral"] is True
    ephemeral_id = events[0]["sessionId"]

    files = list((cody_env.cody_home / "sessions").rglob("*.jsonl"))
    assert len(files) == 1 and ephemeral_id not in files[0].name
    code, events, _ = await run_json(cody_env, "--resume", ephemeral_id, "again")
    assert code == 2 and events[-1]["code"] == -32002

    code, events, _ = await run_json(cody_env, "--resume", "x", "--ephemeral", "hi")
    assert code == 2 and "not --resume" in events[0]["message"]


def test_the_event_schema_knows_the_new_fields() -> None:
    defs = VALIDATOR.schema["$defs"]
    assert "finalText" in defs["TurnCompleted"]["properties"]
    assert "ephemeral" in defs["SessionStarted"]["properties"]
