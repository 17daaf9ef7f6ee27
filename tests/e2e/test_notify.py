"""The `notify` program through the real daemon (issue 30): run with Codex's JSON payload as
its last argument when a turn ends and when an approval waits, never from an untrusted
repository, without the provider's key, and never holding a turn up."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call

RECORDER = """\
import json, os, sys, time
out = sys.argv[1]
payload = json.loads(sys.argv[-1])
payload["_env_key"] = os.environ.get("MOCK_API_KEY")
gate = sys.argv[2] if len(sys.argv) > 3 else None
name = f"{payload['type']}-{time.monotonic_ns()}.json"
with open(os.path.join(out, name + ".tmp"), "w") as f:
    json.dump(payload, f)
os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
while gate and not os.path.exists(gate):
    time.sleep(0.02)
"""


def _recorder(env: CodyEnv, *extra: str) -> tuple[Path, str]:
    out = env.root / "notified"
    out.mkdir()
    script = env.root / "record.py"
    script.write_text(RECORDER)
    argv = [sys.executable, str(script), str(out), *extra]
    return out, "notify = " + json.dumps(argv)


def _payloads(out: Path, kind: str) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(out.glob(f"{kind}-*.json"))]


async def _started(env: CodyEnv, config_line: str, model: MockResponsesServer) -> Daemon:
    env.use_mock_provider(model.base_url, extra=config_line)
    daemon = await Daemon.start(env)
    await daemon.initialize()
    return daemon


async def test_notify_records_the_payload_on_an_approval_request_and_at_turn_end(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    out, line = _recorder(cody_env)
    model.enqueue(tool_call("exec", {"command": "touch made.txt"}, call_id="c1"))
    model.enqueue(text("Made the file."))
    daemon = await _started(cody_env, line, model)
    try:
        sid = await daemon.new_session(approvalPolicy="untrusted")
        result = await daemon.prompt(sid, "make a file")
        await daemon.wait_for(lambda: bool(_payloads(out, "agent-turn-complete")), timeout=15)
    finally:
        await daemon.close()

    assert daemon.permission_requests, "the call asked"
    [asked] = _payloads(out, "approval-requested")
    assert asked["thread-id"] == sid and asked["call-id"] == "c1"
    assert asked["turn-id"] == result["_meta"]["cody"]["turnId"]
    assert "touch made.txt" in asked["title"] and asked["kind"] == "execute"
    [done] = _payloads(out, "agent-turn-complete")
    assert done["thread-id"] == sid
    assert done["turn-id"] == result["_meta"]["cody"]["turnId"]
    assert done["cwd"] == str(cody_env.workspace)
    assert done["input-messages"] == ["make a file"]
    assert done["last-assistant-message"] == "Made the file."
    assert done["stop-reason"] == "end_turn"
    assert done["_env_key"] is None and asked["_env_key"] is None, "no provider key for it"


async def test_a_notify_program_that_keeps_running_does_not_hold_up_the_next_turn(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    gate = cody_env.root / "let-it-end"
    out, line = _recorder(cody_env, str(gate), "wait")
    model.enqueue(text("one"))
    model.enqueue(text("two"))
    daemon = await _started(cody_env, line, model)
    try:
        sid = await daemon.new_session()
        await daemon.prompt(sid, "first")
        await daemon.wait_for(lambda: bool(_payloads(out, "agent-turn-complete")), timeout=15)
        # The first program still waits for its gate: the second turn runs anyway.
        assert (await daemon.prompt(sid, "second"))["stopReason"] == "end_turn"
        await daemon.wait_for(lambda: len(_payloads(out, "agent-turn-complete")) == 2, timeout=15)
        gate.touch()
    finally:
        await daemon.close()
    messages = [p["last-assistant-message"] for p in _payloads(out, "agent-turn-complete")]
    assert messages == ["one", "two"]


async def test_an_untrusted_project_cannot_make_the_daemon_run_a_program(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    out, line = _recorder(cody_env)
    project = cody_env.workspace / ".cody"
    project.mkdir()
    (project / "config.toml").write_text(line + "\n")
    model.enqueue(text("done"))
    daemon = await _started(cody_env, "", model)
    try:
        result = await daemon.request(
            "session/new", {"cwd": str(cody_env.workspace), "mcpServers": []}
        )
        sid = result["sessionId"]
        warnings = result["_meta"]["cody"]["warnings"]
        await daemon.prompt(sid, "hello")
        await asyncio.sleep(0.5)
    finally:
        await daemon.close()
    assert any("notify" in warning and "not trusted" in warning for warning in warnings)
    assert not list(out.iterdir()), "the repository's notify program never ran"


async def test_a_trusted_project_may_set_notify(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    out, line = _recorder(cody_env)
    project = cody_env.workspace / ".cody"
    project.mkdir()
    (project / "config.toml").write_text(line + "\n")
    model.enqueue(text("done"))
    trusted = f"trusted_projects = [{json.dumps(str(cody_env.workspace))}]"
    daemon = await _started(cody_env, trusted, model)
    try:
        sid = await daemon.new_session()
        await daemon.prompt(sid, "hello")
        await daemon.wait_for(lambda: bool(_payloads(out, "agent-turn-complete")), timeout=15)
    finally:
        await daemon.close()
