"""`cody-client doctor` checks the configuration exactly as `session/new` would (issue 24.2).

Doctor said "Ready." and exited 0 with a config.toml that made every session fail with exit 2,
and never mentioned an ignored project config. Now the daemon checks it (`_cody/config/check`
runs `session/new`'s own checks): doctor exits 1 naming each problem as `session/new` does,
and shows the warnings a session would carry.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.support.daemon import CodyEnv, Daemon, expect_error

CLIENT = [sys.executable, "-m", "cody_client"]

BROKEN_CONFIGS = {
    "unknown key": ("modle = 'gpt-5.5'\n", "unknown key modle in {file}; valid keys: model,"),
    "TOML syntax error": ("model = [\n", "{file} is not valid TOML"),
    "wrong type": ("max_tool_iterations = 'many'\n", 'max_tool_iterations = "many" in {file}'),
    "unknown provider": (
        "model_provider = 'nosuch'\n",
        'model_provider = "nosuch" in {file}; valid values: auto, openai, anthropic',
    ),
}


async def run_client(env: CodyEnv, *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env.env, "CODY_DAEMON_SOCKET": ""},
        cwd=cwd or env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(), 50)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def problems(out: str) -> list[str]:
    lines = out.splitlines()
    assert "Problems:" in lines, out
    return [line[4:] for line in lines[lines.index("Problems:") + 1 :]]


@pytest.mark.parametrize("case", sorted(BROKEN_CONFIGS))
async def test_doctor_fails_on_a_config_that_fails_every_session(
    cody_env: CodyEnv, case: str
) -> None:
    text, expected = BROKEN_CONFIGS[case]
    cody_env.write_config(text)
    config_file = cody_env.cody_home / "config.toml"

    code, out, _ = await run_client(cody_env, "doctor")
    assert code == 1, out
    assert "Ready." not in out
    [problem] = problems(out)
    assert problem.startswith("invalid configuration: ")
    assert expected.format(file=config_file) in problem

    # The very message a session gets: `exec` fails with it, exit 2.
    code, _, err = await run_client(cody_env, "exec", "hi")
    assert code == 2
    assert f"cody-client: {problem}" in err.splitlines()


async def test_doctor_checks_the_projects_config_and_says_what_an_untrusted_one_loses(
    cody_env: CodyEnv,
) -> None:
    project = cody_env.workspace / ".cody" / "config.toml"
    project.parent.mkdir()
    project.write_text('approval_policy = "never"\n')
    code, out, _ = await run_client(cody_env, "doctor")
    assert code == 0, out
    assert out.splitlines()[-1] == "Ready."
    assert f"  project file {project}  (not trusted:" in out
    warning = next(line for line in out.splitlines() if line.startswith("  warning: "))
    assert f"ignored approval_policy from {project}: this project is not trusted" in warning
    assert f'add "{cody_env.workspace}" to trusted_projects' in warning

    # A project file that breaks sessions breaks doctor too, from that project only.
    project.write_text("model_reasoning_effort = 'extreme'\n")
    code, out, _ = await run_client(cody_env, "doctor")
    assert code == 1
    [problem] = problems(out)
    assert f'model_reasoning_effort = "extreme" in {project}; valid values: none,' in problem
    code, out, _ = await run_client(cody_env, "doctor", cwd=cody_env.tmpdir)
    assert code == 0, out
    code, out, _ = await run_client(cody_env, "doctor", "--cwd", str(cody_env.workspace))
    assert code == 1


async def test_doctor_sees_a_trusted_projects_keys_as_a_session_would(cody_env: CodyEnv) -> None:
    project = cody_env.workspace / ".cody" / "config.toml"
    project.parent.mkdir()
    project.write_text("[mcp_servers.tools]\ncommand = 'tool'\nurl = 'http://127.0.0.1:9/mcp'\n")
    cody_env.write_config(f'trusted_projects = ["{cody_env.workspace}"]\n')
    code, out, _ = await run_client(cody_env, "doctor", "--json")
    report = json.loads(out)
    assert report["config"]["files"][1] == {
        "path": str(project),
        "scope": "project",
        "exists": True,
        "trusted": True,
    }
    assert report["config"]["ok"] is False
    assert code == 1 and str(project) in report["problems"][0]
    code, _, err = await run_client(cody_env, "exec", "hi")
    assert code == 2 and report["problems"][0] in err

    cody_env.write_config("")  # untrusted: its MCP servers are ignored, and doctor says so
    code, out, _ = await run_client(cody_env, "doctor", "--json")
    report = json.loads(out)
    assert code == 0 and report["config"]["ok"] is True
    assert report["config"]["files"][1]["trusted"] is False
    [warning] = report["config"]["warnings"]
    assert warning.startswith(f"ignored mcp_servers from {project}: this project is not trusted")


async def test_config_check_answers_what_session_new_would_and_creates_nothing(
    cody_env: CodyEnv,
) -> None:
    daemon = await Daemon.start(cody_env)
    try:
        result = await daemon.initialize()
        assert "_cody/config/check" in result["_meta"]["cody"]["extensions"]
        cwd = str(cody_env.workspace)
        for text, _ in BROKEN_CONFIGS.values():
            cody_env.write_config(text)
            check = await daemon.request("_cody/config/check", {"cwd": cwd})
            error = await expect_error(daemon.new_session(), -32602)
            assert check["ok"] is False
            assert check["error"] == {
                "code": -32602,
                "message": error.message,
                "data": error.data,
            }
        cody_env.write_config("")
        meta = {"_meta": {"cody": {"model": "no-such-model"}}}
        check = await daemon.request("_cody/config/check", {"cwd": cwd, **meta})
        error = await expect_error(daemon.request("session/new", {"cwd": cwd, **meta}), -32602)
        assert check["error"]["message"] == error.message
        check = await daemon.request("_cody/config/check", {"cwd": cwd})
        assert check["ok"] is True and "error" not in check
        missing = await daemon.request("_cody/config/check", {"cwd": cwd + "/gone"})
        assert missing["error"]["data"]["errors"][0]["key"] == "cwd"
    finally:
        await daemon.close()
    assert not list(cody_env.cody_home.glob("sessions/**/*.jsonl")), "no session was created"
