"""Runs the ACP conformance script (tests/acp/ts) that drives the real daemon with the official
TypeScript SDK, `@agentclientprotocol/sdk` (pinned in its package.json / package-lock.json).

`npm ci` runs first when node_modules is missing (or lacks the pinned SDK). Without node/npm
the test is skipped on a developer's machine but fails under CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import mock_responses
from tests.support.backend_agents import offline_backends_env

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
TS_DIR = REPO / "tests" / "acp" / "ts"
SCRIPT = TS_DIR / "conformance.mjs"
NODE_MAJOR_MIN = 20


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}: install Node.js >= {NODE_MAJOR_MIN} and npm")
    pytest.skip(reason)


def _pinned_sdk_version() -> str:
    package = json.loads((TS_DIR / "package.json").read_text(encoding="utf-8"))
    version: str = package["dependencies"]["@agentclientprotocol/sdk"]
    return version


def _installed_sdk_version() -> str | None:
    manifest = TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
    if not manifest.is_file():
        return None
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def _output(proc: subprocess.CompletedProcess[str]) -> str:
    return f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def _approved_command_turn(kind: str, mock: mock_responses.MockResponsesServer) -> None:
    """The model runs `touch acp-<kind>.txt` (asking the client first), then answers."""
    name, args = ("exec_command", {"cmd": f"touch acp-{kind}.txt"})
    if kind == "claude":
        name, args = "Bash", {"command": f"touch acp-{kind}.txt", "description": "touch"}
    mock.enqueue(mock_responses.tool_call(name, args, call_id=f"call_acp_{kind}"))
    mock.enqueue(mock_responses.text(f"done on {kind}"))


@pytest.mark.timeout(900)
def test_official_typescript_sdk_client_conforms(tmp_path: Path) -> None:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        _unavailable("node and npm are not on PATH")
        return
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if major < NODE_MAJOR_MIN:
        _unavailable(f"node {version or '?'} is older than {NODE_MAJOR_MIN}")

    if not (TS_DIR / "node_modules").is_dir() or _installed_sdk_version() != _pinned_sdk_version():
        install = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=TS_DIR,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert install.returncode == 0, f"npm ci failed in {TS_DIR}\n{_output(install)}"

    env = dict(os.environ)
    env["CODY_DAEMON_PYTHON"] = sys.executable
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        env.pop(key, None)
    with offline_backends_env(tmp_path, _approved_command_turn) as daemon_env:
        env["CODY_TEST_BACKEND_ENV"] = json.dumps(daemon_env)
        proc = subprocess.run(
            [node, str(SCRIPT)],
            cwd=TS_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 0, (
        f"the ACP TypeScript SDK conformance script failed (exit {proc.returncode})\n"
        f"{_output(proc)}"
    )
    assert "conformance: " in proc.stdout and " 0 failed" in proc.stdout, _output(proc)
    for kind in ("codex", "claude"):
        assert f"a turn on the {kind} backend" in proc.stdout, _output(proc)
