"""The VS Code extension's own checks and tests (editor-plugins/vscode): `npm run check`
(tsc + eslint) and `npm test` (node:test against the real daemon from this environment).

`npm ci` runs first when node_modules is missing. Skipped when node or npm is not installed,
except on CI (CI=true), where a missing Node fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.talk_model import serve_talk_model

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editor-plugins" / "vscode"
API_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")


def _tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        message = "node and npm are needed for the VS Code extension tests"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must run them")
        pytest.skip(message)
    return node, npm


def _run(npm: str, args: list[str], env: dict[str, str], timeout: float) -> str:
    try:
        result = subprocess.run(
            [npm, *args],
            cwd=EXTENSION,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"npm {' '.join(args)} timed out after {timeout:.0f} s\n{exc.output!r}")
    output = f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    assert result.returncode == 0, f"npm {' '.join(args)} exited {result.returncode}\n{output}"
    return output


@pytest.mark.timeout(900)
def test_vscode_extension_checks_and_tests_pass() -> None:
    _node, npm = _tools()
    env = {name: value for name, value in os.environ.items() if name not in API_KEYS}
    env["CODY_DAEMON_CMD"] = json.dumps([sys.executable, "-m", "cody_daemon"])
    env.setdefault("npm_config_fund", "false")
    env.setdefault("npm_config_audit", "false")
    env.setdefault("npm_config_update_notifier", "false")

    if not (EXTENSION / "node_modules").is_dir():
        _run(npm, ["ci", "--no-audit", "--no-fund"], env, timeout=420)
    _run(npm, ["run", "check"], env, timeout=240)
    with serve_talk_model() as (_, talk_config):
        env["CODY_TEST_TALK_CONFIG"] = talk_config  # talk.test.ts: steering, queueing, files
        output = _run(npm, ["test"], env, timeout=420)
    assert "# fail 0" in output, output
    assert "# pass 0\n" not in output, f"no test ran\n{output}"
    assert "# skipped 0" in output, f"a test was skipped\n{output}"
    assert "ok 1 - a message sent while a turn runs steers it" in output, output
