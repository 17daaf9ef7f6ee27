"""docs/acp-editors.md: every editor snippet parses, and the client it configures can talk to
the daemon it starts.

JSON snippets (Zed, JetBrains) are parsed with `json`; Lua snippets (CodeCompanion, avante)
are run by Neovim with the editor's `setup()` stubbed, which hands back the configuration
they build. Then the handshake each editor makes (from its source, cited in the doc) is
replayed against the command the snippet gives, `/path/to/cody` replaced by this checkout:
CodeCompanion authenticates with the first auth method when no `auth_method` is set;
avante passes only `PATH` and its `env` table and answers permissions by option id.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cody_client.process import DaemonProcess

from tests.support.daemon import CodyEnv

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "acp-editors.md"
VENV_BIN = Path(sys.executable).parent
PLACEHOLDER = "/path/to/cody"

_HARNESS = r"""
local snippet, which = _G.arg[1], _G.arg[2]
local captured = {}
package.loaded["codecompanion"] = { setup = function(config) captured.setup = config end }
package.loaded["codecompanion.adapters"] = {
  extend = function(base, overrides) return { base = base, overrides = overrides } end,
}
package.loaded["avante"] = { setup = function(config) captured.setup = config end }
assert(loadfile(snippet))()
local function plain(value)
  if type(value) == "function" then
    return "<function>"
  elseif type(value) == "table" then
    local out = {}
    for k, v in pairs(value) do
      out[k] = plain(v)
    end
    return out
  end
  return value
end
local result = { setup = plain(captured.setup) }
if which == "codecompanion" then
  result.adapter = plain(captured.setup.adapters.acp.cody())
end
io.stdout:write(vim.json.encode(result))
"""


def sections() -> dict[str, list[tuple[str, str]]]:
    """`## heading` -> its fenced code blocks as (language, code)."""
    found: dict[str, list[tuple[str, str]]] = {}
    heading = ""
    for block in re.split(r"^(## .+)$", DOC.read_text(encoding="utf-8"), flags=re.M):
        if block.startswith("## "):
            heading = block[3:].strip()
            continue
        found[heading] = [
            (lang, code) for lang, code in re.findall(r"^```(\w*)\n(.*?)^```$", block, re.M | re.S)
        ]
    return found


def blocks(heading: str, language: str) -> list[str]:
    matching = [code for lang, code in sections()[heading] if lang == language]
    assert matching, f"no {language} snippet under '## {heading}'"
    return matching


def find_nvim() -> str:
    venv_nvim = VENV_BIN / "nvim"
    found = str(venv_nvim) if os.access(venv_nvim, os.X_OK) else shutil.which("nvim")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but Neovim (nvim) is missing: the Lua snippets are not checked")
        pytest.skip("Neovim (nvim) not found")
    return found


def run_lua(snippet: str, which: str, tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run a Lua snippet in headless Neovim with the editor stubbed; its configuration."""
    snippet_file = tmp_path / f"{which}.lua"
    snippet_file.write_text(snippet, encoding="utf-8")
    harness = tmp_path / "harness.lua"
    harness.write_text(_HARNESS, encoding="utf-8")
    done = subprocess.run(
        [find_nvim(), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(harness)]
        + [str(snippet_file), which],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"the {which} snippet failed in Neovim:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def local_command(command: list[str]) -> list[str]:
    """The snippet's command with the checkout's path in place of the placeholder."""
    return [word.replace(f"{PLACEHOLDER}/.venv/bin", str(VENV_BIN)) for word in command]


async def handshake(
    argv: list[str], env: dict[str, str], cwd: Path, client: dict[str, Any]
) -> dict[str, Any]:
    """Start the daemon as the editor would (NDJSON), replay the editor's calls; what it saw."""
    process = await DaemonProcess.spawn(argv, env=env, framing="ndjson")
    permissions: list[dict[str, Any]] = []

    async def permission(params: Any) -> Any:
        permissions.append(params)
        option = next(o for o in params["options"] if o["kind"] == "allow_always")
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    async def read_text_file(params: Any) -> Any:
        # What an editor does for `fs/read_text_file`: its buffer (here: the file on disk).
        lines = Path(params["path"]).read_text(encoding="utf-8").splitlines(keepends=True)
        start = max(int(params.get("line") or 1), 1) - 1
        limit = params.get("limit")
        chosen = lines[start : start + int(limit)] if limit else lines[start:]
        return {"content": "".join(chosen)}

    async def write_text_file(params: Any) -> Any:
        Path(params["path"]).write_text(params["content"], encoding="utf-8")
        return None

    conn = process.connection
    conn.on_request("session/request_permission", permission)
    fs = client["initialize"]["clientCapabilities"].get("fs", {})
    if fs.get("readTextFile"):
        conn.on_request("fs/read_text_file", read_text_file)
    if fs.get("writeTextFile"):
        conn.on_request("fs/write_text_file", write_text_file)
    try:
        init = await conn.request("initialize", client["initialize"])
        if client["authenticate"] == "first":
            await conn.request("authenticate", {"methodId": init["authMethods"][0]["id"]})
        session = await conn.request(
            "session/new", {"cwd": str(cwd), "mcpServers": client.get("mcpServers", [])}
        )
        answers = []
        for text in client["prompts"]:
            answers.append(
                await conn.request(
                    "session/prompt",
                    {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": text}]},
                )
            )
        return {"init": init, "session": session, "answers": answers, "permissions": permissions}
    finally:
        await process.close()


def test_the_zed_and_jetbrains_snippets_are_valid_json() -> None:
    zed = [json.loads(code) for code in blocks("Zed", "json")]
    for config in zed:
        cody = config["agent_servers"]["Cody"]
        assert cody["type"] == "custom"
        assert isinstance(cody["command"], str) and cody["command"]
        assert all(isinstance(arg, str) for arg in cody["args"])
        assert isinstance(cody["env"], dict)
    assert any(c["agent_servers"]["Cody"]["command"] == "cody-daemon" for c in zed)
    [jetbrains] = [json.loads(code) for code in blocks("JetBrains IDEs (AI Assistant)", "json")]
    assert jetbrains["agent_servers"]["Cody"]["command"].endswith("cody-daemon")


async def test_the_zed_snippet_starts_a_daemon_zed_can_use(cody_env: CodyEnv) -> None:
    [installed] = [
        json.loads(code)["agent_servers"]["Cody"]
        for code in blocks("Zed", "json")
        if json.loads(code)["agent_servers"]["Cody"]["command"] == "cody-daemon"
    ]
    env = {**cody_env.env, **installed["env"]}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"  # `cody-daemon` from the install
    argv = [shutil.which(installed["command"], path=env["PATH"]) or "", *installed["args"]]
    assert argv[0], "cody-daemon is on the PATH the snippet relies on"
    zed = {
        "initialize": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
            "clientInfo": {"name": "zed", "version": "0.200.0"},
        },
        "authenticate": None,
        "prompts": ["list files"],
    }
    seen = await handshake(argv, env, cody_env.workspace, zed)
    assert seen["init"]["agentInfo"]["name"] == "cody"
    assert seen["answers"][0]["stopReason"] == "end_turn"


async def test_the_codecompanion_snippet_works_without_an_auth_method(
    cody_env: CodyEnv, tmp_path: Path
) -> None:
    [snippet] = blocks("Neovim: CodeCompanion", "lua")
    config = run_lua(snippet, "codecompanion", tmp_path, cody_env.env)
    assert config["setup"]["interactions"]["chat"]["adapter"] == "cody"
    adapter = config["adapter"]
    assert adapter["base"] == "goose", "a plain ACP adapter, extended"
    overrides = adapter["overrides"]
    assert "auth_method" not in overrides["defaults"], "the doc's point: none is needed"
    command = local_command(overrides["commands"]["default"])
    codecompanion = {
        "initialize": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
            "clientInfo": {"name": "CodeCompanion.nvim", "version": "18.0.0"},
        },
        "authenticate": "first",  # no auth_method: CodeCompanion uses authMethods[1]
        "mcpServers": overrides["defaults"]["mcpServers"],
        "prompts": ["write cc.txt: from codecompanion"],
    }
    seen = await handshake(command, cody_env.env, cody_env.workspace, codecompanion)
    assert seen["answers"][0]["stopReason"] == "end_turn"
    categories = [o.get("category") for o in seen["session"]["configOptions"]]
    assert categories.count("model") == 1 and categories.count("mode") == 1
    assert (cody_env.workspace / "cc.txt").read_text() == "from codecompanion"


async def test_the_avante_snippet_works_with_only_the_environment_avante_passes(
    cody_env: CodyEnv, tmp_path: Path
) -> None:
    [snippet] = blocks("Neovim: avante.nvim", "lua")
    home = cody_env.env["HOME"]
    config = run_lua(snippet, "avante", tmp_path, {**cody_env.env, "HOME": home})
    setup = config["setup"]
    assert setup["provider"] == "cody"
    provider = setup["acp_providers"]["cody"]
    assert provider["env"] == {"HOME": home}, "OPENAI_API_KEY is unset here: the entry is dropped"
    # avante's stdio transport: PATH, then the provider's env table, nothing else.
    env = {"PATH": cody_env.env["PATH"], **provider["env"]}
    argv = local_command([provider["command"], *provider["args"]])
    avante = {
        "initialize": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
        },
        "authenticate": "first" if provider.get("auth_method") else None,
        "prompts": ["run outside echo avante-ok", "run outside echo avante-ok"],
    }
    seen = await handshake(argv, env, cody_env.workspace, avante)
    assert [a["stopReason"] for a in seen["answers"]] == ["end_turn", "end_turn"]
    [request] = seen["permissions"]  # the second run is covered by "allow_always"
    kinds = {o["optionId"]: o["kind"] for o in request["options"]}
    assert all(kind == option for option, kind in kinds.items() if option != "allow_project"), (
        "avante decides by the option id: each id is its kind (allow_project: allow_always)"
    )
    assert any(Path(home).rglob("rollout-*.jsonl")), "the session is saved under avante's HOME"
