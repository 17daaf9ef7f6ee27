"""An agent CLI that misbehaves (exits, prints garbage, stops answering) through the daemon.

The real CLIs do not misbehave on demand, so these tests point `CODEX_CLI_PATH` /
`CLAUDE_CLI_PATH` at small scripts that do what a broken install or a crash does. What is
under test is the daemon: the turn ends with a classified -32010, the CLI's whole process
tree is gone, and the session file keeps the prompt (`session/load` replays it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon, expect_error

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

GARBAGE = "#!/bin/sh\necho 'Welcome to the agent!'\nsleep 30\n"
EXITS_UNAUTHORIZED = (
    "#!/bin/sh\necho 'WARN starting up' >&2\n"
    "echo 'Error: Invalid API key · Please run /login' >&2\nexit 1\n"
)
SILENT = "#!/bin/sh\nsleep 31.777 &\nwait\n"


def _fake(cody_env: CodyEnv, kind: str, script: str) -> Path:
    path = cody_env.root / "fake" / kind
    path.parent.mkdir(exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)
    cody_env.env["CODEX_CLI_PATH" if kind == "codex" else "CLAUDE_CLI_PATH"] = str(path)
    return path


async def _session(cody_env: CodyEnv, kind: str) -> tuple[Daemon, str]:
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    return daemon, await daemon.new_session(backend=kind)


def _running(needle: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text()
        except OSError:
            continue
        if entry.name.isdigit() and needle in cmdline and ") Z" not in state:
            found.append(cmdline)
    return found


def _user_texts_on_disk(cody_env: CodyEnv) -> list[str]:
    path = next(cody_env.cody_home.rglob("rollout-*.jsonl"))
    texts = []
    for line in path.read_text().splitlines():
        payload = json.loads(line)["payload"]
        if payload.get("type") == "message" and payload.get("role") == "user":
            texts.append(payload["content"][0]["text"])
    return texts


@pytest.mark.parametrize("kind", ["codex", "claude"])
async def test_a_cli_printing_garbage_ends_the_turn_with_a_provider_error(
    kind: str, cody_env: CodyEnv
) -> None:
    _fake(cody_env, kind, GARBAGE)
    daemon, sid = await _session(cody_env, kind)
    try:
        started = time.monotonic()
        error = await expect_error(daemon.prompt(sid, "first prompt"), -32010)
        assert time.monotonic() - started < 20
        assert error.data["kind"] == "provider" and error.data["provider"] == kind
        assert "not its protocol" in error.message and "Welcome to the agent" in error.message
        assert _user_texts_on_disk(cody_env) == ["first prompt"]
        await daemon.request("session/close", {"sessionId": sid})
        await daemon.request(
            "session/load", {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []}
        )
        replayed = daemon.session_updates(sid, "user_message_chunk")
        assert [u["content"]["text"] for u in replayed] == ["first prompt"]
    finally:
        await daemon.close()


@pytest.mark.parametrize("kind", ["codex", "claude"])
async def test_a_cli_that_exits_is_classified_from_its_stderr(kind: str, cody_env: CodyEnv) -> None:
    _fake(cody_env, kind, EXITS_UNAUTHORIZED)
    daemon, sid = await _session(cody_env, kind)
    try:
        error = await expect_error(daemon.prompt(sid, "hello"), -32010)
        assert error.data["kind"] == "auth"
        assert "exited with code 1" in error.message
        assert ("codex login" if kind == "codex" else "run `claude` and log in") in error.message
        # the next prompt tries again (a fresh CLI), and fails the same clear way
        again = await expect_error(daemon.prompt(sid, "hello again"), -32010)
        assert again.data["kind"] == "auth"
        assert _user_texts_on_disk(cody_env) == ["hello", "hello again"]
    finally:
        await daemon.close()


async def test_a_silent_cli_is_stopped_by_the_turn_timeout(cody_env: CodyEnv) -> None:
    """A CLI that never answers `initialize`: the 2 s turn timeout ends it and its children."""
    _fake(cody_env, "claude", SILENT)
    cody_env.write_config("backend_timeout_s = 2\n")
    daemon, sid = await _session(cody_env, "claude")
    try:
        error = await expect_error(daemon.prompt(sid, "anyone there?"), -32010)
        assert "backend_timeout_s" in error.message
        assert _running(str(cody_env.root / "fake")) == []
        assert _running("sleep\x0031.777") == [], "the CLI's child is gone too"
    finally:
        await daemon.close()


@pytest.mark.parametrize("kind", ["codex", "claude"])
async def test_an_image_for_a_backend_session_is_refused_not_dropped(
    kind: str, cody_env: CodyEnv
) -> None:
    """Cody passes an agent CLI text only: an image must fail the prompt, never vanish."""
    _fake(cody_env, kind, GARBAGE)
    daemon, sid = await _session(cody_env, kind)
    try:
        pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
        error = await expect_error(
            daemon.request(
                "session/prompt",
                {
                    "sessionId": sid,
                    "prompt": [
                        {"type": "text", "text": "what is in this picture?"},
                        {"type": "image", "mimeType": "image/png", "data": pixel},
                    ],
                },
            ),
            -32602,
        )
        assert f"{kind} backend" in error.message and "without images" in error.message
        assert not _running(str(cody_env.root / "fake" / kind)), "the CLI was never started"
    finally:
        await daemon.close()


IGNORES_THE_SANDBOX = """#!{python}
import json, sys
from pathlib import Path
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "turn/start":
        Path({marker!r}).write_text("a turn was started")
    result = {{}}
    if message["method"] == "thread/start":  # an older CLI: its own profile, not Cody's
        result = {{"thread": {{"id": "t1", "modelProvider": "mock", "model": "m"}},
                  "activePermissionProfile": {{"id": ":workspace"}}}}
    print(json.dumps({{"id": message["id"], "result": result}}), flush=True)
"""


async def test_a_codex_cli_that_ignores_codys_sandbox_runs_no_turn(cody_env: CodyEnv) -> None:
    """Codex takes Cody's sandbox as a permission profile (backends/codex_sandbox.py); a CLI
    that answers with another one would run commands with less protection: refused first."""
    marker = cody_env.root / "turn-started"
    _fake(cody_env, "codex", IGNORES_THE_SANDBOX.format(python=sys.executable, marker=str(marker)))
    cody_env.write_config('sandbox_mode = "workspace-write"\n')
    daemon, sid = await _session(cody_env, "codex")
    try:
        error = await expect_error(daemon.prompt(sid, "hello"), -32010)
        assert "did not take Cody's sandbox" in error.message and "cody-workspace" in error.message
        assert not marker.exists(), "no turn was started"
        assert _user_texts_on_disk(cody_env) == ["hello"]
    finally:
        await daemon.close()
