"""Which warm daemon a client may use (issue 20.7, 20.12), through the real client.

20.7: a warm daemon reads its own config (approval policy, sandbox), data dir and agent homes.
A client whose environment names other locations (another `HOME`, `XDG_CONFIG_HOME`,
`XDG_DATA_HOME`...) must never be served by it, even on the same socket: it says so and
runs its own daemon, with its own (stricter) config.

20.12: another local user who creates `/tmp/cody-<uid>` first keeps the warm daemon from
listening there: the daemon says so and how to avoid it (a private `XDG_RUNTIME_DIR`, which
it prefers), and clients say so and run their own daemon.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemon import DAEMON_COMMAND, CodyEnv
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.warm_daemon import WarmDaemon, short_runtime_dir

pytestmark = pytest.mark.reliability

CLIENT = [sys.executable, "-m", "cody_client"]
NOBODY = 65534


@pytest.fixture
def runtime() -> Iterator[Path]:
    path = short_runtime_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def user_env(
    cody_env: CodyEnv, name: str, model: MockResponsesServer, policy: str
) -> dict[str, str]:
    """An environment of its own (HOME, XDG config and data dirs; no CODY_HOME) whose
    config runs the mock model under `policy`."""
    root = cody_env.root / name
    config = root / "config" / "cody"
    config.mkdir(parents=True)
    (root / "data").mkdir()
    (config / "config.toml").write_text(
        f'approval_policy = "{policy}"\nmodel_provider = "mock"\n'
        "[model_providers.mock]\n"
        f'name = "Mock"\nbase_url = "{model.base_url}"\nwire_api = "responses"\n'
        'env_key = "MOCK_API_KEY"\ndefault_model = "mock-model"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in cody_env.env.items() if k != "CODY_HOME"}
    env.update(
        HOME=str(root),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        MOCK_API_KEY="test-key-not-secret",
    )
    return env


async def run_client(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLIENT, *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def stored_sessions(env: dict[str, str]) -> list[Path]:
    return list((Path(env["XDG_DATA_HOME"]) / "cody" / "sessions").rglob("*.jsonl"))


async def test_a_client_with_other_locations_is_never_served_by_the_warm_daemon(
    cody_env: CodyEnv, model: MockResponsesServer, runtime: Path
) -> None:
    model.enqueue(tool_call("exec", {"command": ["touch", "PWNED"]}, call_id="c1"))
    model.enqueue(text("done"))
    lax = user_env(cody_env, "lax", model, "never")
    strict = user_env(cody_env, "strict", model, "untrusted")
    for env in (lax, strict):
        env["XDG_RUNTIME_DIR"] = str(runtime)
    workspace = cody_env.workspace
    cody_env.env = lax
    warm = await WarmDaemon.start(cody_env)
    try:
        # Its own socket name: the strict client does not even find the lax daemon.
        code, out, err = await run_client(strict, workspace, "exec", "touch a file")
        assert code == 4 and "rejected, no terminal to ask" in err, out + err
        assert not (workspace / "PWNED").exists(), "the strict config asked (no one to answer)"
        assert len(stored_sessions(strict)) == 1 and stored_sessions(lax) == []
        code, out, _ = await run_client(strict, workspace, "doctor", "--json")
        assert json.loads(out)["daemon"]["warm"] is False
        code, out, _ = await run_client(strict, workspace, "doctor")
        assert (
            f"warm daemons for other locations (HOME, config or data dirs) listen at {warm.path}"
            in out
        )

        # Even sent to the lax daemon's socket, the client checks what it reads, says so
        # and runs its own daemon.
        model.enqueue(tool_call("exec", {"command": ["touch", "PWNED"]}, call_id="c2"))
        model.enqueue(text("done"))
        pointed = {**strict, "CODY_DAEMON_SOCKET": str(warm.path)}
        code, out, err = await run_client(pointed, workspace, "exec", "touch a file")
        assert code == 4 and "rejected, no terminal to ask" in err, out + err
        assert f"the warm daemon on {warm.path}" in err and "reads other locations" in err
        assert f"home {lax['HOME']} (here {strict['HOME']})" in err
        assert "starting a daemon for this command" in err
        assert not (workspace / "PWNED").exists()
        assert len(stored_sessions(strict)) == 2 and stored_sessions(lax) == []
        code, out, _ = await run_client(pointed, workspace, "doctor")
        assert "spawned for each command (the warm daemon on" in out

        # The lax user's own client does use it (and its config).
        model.enqueue(tool_call("exec", {"command": ["touch", "PWNED"]}, call_id="c3"))
        model.enqueue(text("done"))
        code, out, err = await run_client(lax, workspace, "exec", "touch a file")
        assert code == 0, err
        assert (workspace / "PWNED").exists() and len(stored_sessions(lax)) == 1
        code, out, _ = await run_client(lax, workspace, "doctor", "--json")
        assert json.loads(out)["daemon"]["pid"] == warm.process.pid
    finally:
        assert await warm.stop() == 0


def as_root_only() -> None:
    if os.getuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs as root: this test must run there")
        pytest.skip("needs root to make a directory of another user")


async def start_listen(env: dict[str, str]) -> tuple[int, str]:
    """`cody-daemon --listen` that is expected to refuse: its exit code and stderr."""
    process = await asyncio.create_subprocess_exec(
        *DAEMON_COMMAND, "--listen", stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_another_users_tmp_dir_is_named_and_xdg_runtime_dir_is_preferred(
    cody_env: CodyEnv, model: MockResponsesServer, runtime: Path
) -> None:
    as_root_only()
    cody_env.use_mock_provider(model.base_url)
    model.responder = lambda request: model.scripted(text("answered"))
    env = {k: v for k, v in cody_env.env.items() if k != "XDG_RUNTIME_DIR"}
    taken = cody_env.tmpdir / f"cody-{os.getuid()}"  # TMPDIR: no real /tmp is touched
    taken.mkdir(mode=0o755)
    os.chown(taken, NOBODY, NOBODY)  # made first by another user

    code, err = await start_listen(env)
    assert code == 1
    assert f"{taken} belongs to another user (uid {NOBODY})" in err, err
    assert "XDG_RUNTIME_DIR" in err and "--listen PATH" in err
    code, out, err = await run_client(env, cody_env.workspace, "exec", "hi")
    assert code == 0 and "answered" in out, err
    assert f"no warm daemon can run here: {taken} belongs to another user" in err
    code, out, _ = await run_client(env, cody_env.workspace, "doctor")
    assert "belongs to another user" in out

    shared = cody_env.root / "shared-runtime"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # not private: not used, and the daemon says why
    code, err = await start_listen({**env, "XDG_RUNTIME_DIR": str(shared)})
    assert code == 1 and "is not a private directory of yours" in err, err
    assert not (shared / "cody").exists()

    private = {**env, "XDG_RUNTIME_DIR": str(runtime)}
    cody_env.env = private
    warm = await WarmDaemon.start(cody_env)
    try:
        assert warm.path.parent == runtime / "cody"
        code, out, err = await run_client(private, cody_env.workspace, "doctor", "--json")
        assert json.loads(out)["daemon"]["pid"] == warm.process.pid, err
    finally:
        assert await warm.stop() == 0
