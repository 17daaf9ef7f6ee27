"""The Python client library survives its users: their bugs surface as their exceptions, the
connection stays usable, memory stays bounded, a garbled frame says so, and the library is
installable without the daemon's dependencies."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cody_client.client import CodyClient
from cody_client.connection import ConnectionClosed
from cody_client.process import STDERR_TAIL_LINES
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.updates import SessionUpdate

from tests.support.daemon import CodyEnv

REPO = Path(__file__).resolve().parents[2]


class CallbackBug(Exception):
    pass


async def test_an_exception_in_on_update_is_raised_to_the_caller_and_the_client_goes_on(
    cody_env: CodyEnv,
) -> None:
    def on_update(update: SessionUpdate) -> None:
        raise CallbackBug("my on_update is broken")

    async with CodyClient.spawn(env=cody_env.env) as client:
        session = await client.new_session(str(cody_env.workspace), provider="offline")
        run = session.prompt("list files", on_update=on_update)
        with pytest.raises(CallbackBug, match="my on_update is broken"):
            await run
        assert run.result is not None and run.result.stop_reason == "cancelled"

        again = await session.prompt("list files")
        assert again.stop_reason == "end_turn", "the connection and the session still work"
        assert len(await client.list_sessions()) == 1


async def test_an_exception_in_the_approval_callback_cancels_the_turn_and_is_raised(
    cody_env: CodyEnv,
) -> None:
    async def on_permission(request: RequestPermissionParams) -> str:
        raise CallbackBug("my approval UI crashed")

    async with CodyClient.spawn(env=cody_env.env) as client:
        client.on_permission = on_permission
        # the `ask` mode's policy: an edit in the workspace asks
        session = await client.new_session(
            str(cody_env.workspace), provider="offline", approval_policy="untrusted"
        )
        run = session.prompt("write notes.txt: hello")
        with pytest.raises(CallbackBug, match="my approval UI crashed"):
            await run
        assert run.result is not None and run.result.stop_reason == "cancelled"
        assert not (cody_env.workspace / "notes.txt").exists(), "nothing ran unapproved"

        client.on_permission = None  # no callback: rejected, and the turn goes on
        result = await session.prompt("write notes.txt: hello")
        assert result.stop_reason == "end_turn"


def fake_daemon(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "fake_daemon.py"
    script.write_text(textwrap.dedent(body))
    return [sys.executable, str(script)]


async def test_a_malformed_content_length_is_reported_as_such(tmp_path: Path) -> None:
    command = fake_daemon(
        tmp_path,
        """
        import sys, time
        sys.stdin.buffer.readline()
        sys.stdout.buffer.write(b"Content-Length: twelve\\r\\n\\r\\n{}")
        sys.stdout.buffer.flush()
        time.sleep(30)
        """,
    )
    async with CodyClient.spawn(command, initialize=False) as client:
        with pytest.raises(ConnectionClosed, match="unreadable frame.*Content-Length"):
            await client.initialize()


async def test_a_dying_daemon_is_explained_and_its_stderr_is_not_hoarded(tmp_path: Path) -> None:
    command = fake_daemon(
        tmp_path,
        """
        import sys
        for n in range(5000):
            print(f"noise line {n}", file=sys.stderr)
        print("fatal: the config file is broken", file=sys.stderr, flush=True)
        sys.stdin.buffer.readline()
        sys.exit(3)
        """,
    )
    async with CodyClient.spawn(command, initialize=False) as client:
        with pytest.raises(ConnectionClosed, match="fatal: the config file is broken"):
            await client.initialize()
        assert client.process is not None
        assert len(client.process.stderr_lines) <= STDERR_TAIL_LINES
        assert client.process.stderr_lines[-1] == "fatal: the config file is broken"


def _uv() -> list[str] | None:
    found = shutil.which("uv")
    if found:
        return [found]
    probe = subprocess.run(
        ["python3", "-m", "uv", "--version"], capture_output=True, check=False, timeout=60
    )
    return ["python3", "-m", "uv"] if probe.returncode == 0 else None


@pytest.mark.timeout(300)
def test_the_client_installs_without_the_daemons_dependencies(cody_env: CodyEnv) -> None:
    uv = _uv()
    if uv is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but uv is not available")
        pytest.skip("uv is not available")
    venv = cody_env.root / "client-only"
    # Installing uses the machine's own uv settings (cache, certificates, index); running the
    # client uses the test's empty homes.
    install_env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    install_env["UV_NO_PROGRESS"] = "1"
    subprocess.run([*uv, "venv", "-q", str(venv)], check=True, env=install_env, timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [*uv, "pip", "install", "-q", "--python", str(python), str(REPO / "protocol"),
         str(REPO / "clients")],
        capture_output=True, text=True, env=install_env, timeout=240, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    listed = subprocess.run(
        [*uv, "pip", "list", "--python", str(python)],
        capture_output=True, text=True, env=install_env, timeout=60, check=True,
    ).stdout.lower()  # fmt: skip
    for heavy in ("cody-daemon", "pygls", "mcp", "httpx", "trafilatura", "lxml"):
        assert f"\n{heavy} " not in listed, f"{heavy} came with the client:\n{listed}"

    env = cody_env.env
    client = venv / "bin" / "cody-client"
    missing = subprocess.run(
        [str(client), "sessions", "list"],
        capture_output=True, text=True, env={**env, "PATH": "/usr/bin:/bin"}, timeout=60,
        check=False,
    )  # fmt: skip
    assert missing.returncode == 1
    assert "daemon is not installed" in missing.stderr and "Traceback" not in missing.stderr
    # Issue 24.7: no advice to install a name nobody owns on PyPI; what really works instead.
    assert (
        "pip install cody-daemon" not in missing.stderr
        and "cody-client[daemon]" not in missing.stderr
    )
    assert "install.py" in missing.stderr and "constraints.txt" in missing.stderr
    assert "CODY_DAEMON" in missing.stderr

    # With the daemon on PATH (an editor's or another venv's `cody-daemon`), it is used.
    daemon_bin = Path(sys.executable).parent
    found = subprocess.run(
        [str(client), "sessions", "list"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**env, "PATH": f"{daemon_bin}:/usr/bin:/bin"},
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert "No saved sessions." in found.stdout
