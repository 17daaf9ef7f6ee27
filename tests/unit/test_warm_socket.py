"""The warm daemon's socket: where it is, who may connect, what may already be there.

The uid check is tested with the allowed uid injected (CI runs as root, where no other
user can be faked by a chmod); modes are read with os.stat."""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from cody_daemon.app import DaemonApp
from cody_daemon.config.paths import CodyPaths, resolve_paths
from cody_daemon.rpc.listen import (
    ListenError,
    ListenTarget,
    bind_socket,
    peer_allowed,
    serve_listen,
)
from cody_protocol.endpoint import client_socket_path, default_socket_path, socket_dir
from cody_protocol.locations import daemon_locations


def test_the_socket_is_per_user_and_per_set_of_locations(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    base = {"XDG_RUNTIME_DIR": str(runtime), "HOME": "/home/a"}
    path = default_socket_path(base)
    assert path.parent == runtime / "cody" and re.fullmatch(r"daemon-[0-9a-f]{16}\.sock", path.name)
    assert default_socket_path(dict(base)) == path, "the same environment, the same socket"
    for name, value in (
        ("CODY_HOME", "/home/a/one"),
        ("HOME", "/home/b"),
        ("XDG_CONFIG_HOME", "/home/a/other-config"),
        ("XDG_DATA_HOME", "/home/a/other-data"),
        ("CODEX_HOME", "/home/a/codex"),
        ("CLAUDE_CONFIG_DIR", "/home/a/claude"),
    ):
        other = default_socket_path({**base, name: value})
        assert other.parent == path.parent and other != path, f"another {name}: another daemon"
    assert default_socket_path({**base, "XDG_CONFIG_HOME": "relative"}) == path, "ignored"
    uid = os.getuid()
    name = path.name
    assert default_socket_path({"HOME": "/home/a"}) == Path(f"/tmp/cody-{uid}/{name}")
    assert default_socket_path({"HOME": "/home/a", "TMPDIR": "/var/tmp"}) == Path(
        f"/var/tmp/cody-{uid}/{name}"
    )
    assert default_socket_path({"HOME": "/home/a", "TMPDIR": "rel", "TMP": "/var/tmp"}) == Path(
        f"/var/tmp/cody-{uid}/{name}"
    ), "a relative temp dir is skipped"
    assert default_socket_path({"HOME": "/home/a", "TMPDIR": "/proc/no-such-tmp"}) == Path(
        f"/tmp/cody-{uid}/{name}"
    ), "so is one that does not exist (a warm daemon could not listen there)"
    assert default_socket_path({**base, "CODY_DAEMON_SOCKET": "/x/d.sock"}) == Path("/x/d.sock")
    assert client_socket_path({**base, "CODY_DAEMON_SOCKET": ""}) is None, "set but empty: opt out"
    assert client_socket_path(base) == default_socket_path(base)


def test_xdg_runtime_dir_is_preferred_only_when_it_is_private(tmp_path: Path) -> None:
    uid = os.getuid()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    for runtime in ("/run/user/no-such-dir", str(shared), str(link), "relative"):
        env = {"XDG_RUNTIME_DIR": runtime, "HOME": "/home/a"}
        assert socket_dir(env) == Path(f"/tmp/cody-{uid}"), runtime
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    assert socket_dir({"XDG_RUNTIME_DIR": str(private)}) == private / "cody"


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"CODY_HOME": "~/cody-data"},
        {"CODY_HOME": "/srv/cody"},
        {"XDG_CONFIG_HOME": "/x/config", "XDG_DATA_HOME": "/x/data"},
        {"XDG_CONFIG_HOME": "relative/config"},
        {"CODEX_HOME": "/x/codex", "CLAUDE_CONFIG_DIR": "~/claude"},
        {"HOME": "/home/elsewhere"},
    ],
)
def test_the_locations_a_client_computes_are_those_the_daemon_reports(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """cody_protocol.locations follows the daemon's own resolution (platformdirs), so a
    client and a warm daemon of the same environment agree."""
    full = {"HOME": str(tmp_path / "home"), **env}
    for name in (
        "CODY_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in full.items():
        monkeypatch.setenv(name, value)
    app = DaemonApp(env=full, paths=resolve_paths(full))
    assert app.locations() == daemon_locations(full)


def test_only_the_daemon_s_own_uid_may_connect() -> None:
    assert peer_allowed(1000, 1000)
    assert not peer_allowed(1001, 1000)
    assert not peer_allowed(0, 1000), "not even root"
    assert not peer_allowed(1000, 0)


@pytest.fixture
def short_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="cody-u-", dir="/tmp"))
    yield path
    import shutil

    shutil.rmtree(path, ignore_errors=True)


async def _serve(short_dir: Path, own_uid: int) -> tuple[asyncio.Event, asyncio.Task[int], Path]:
    paths = CodyPaths.under(short_dir / "home", short_dir / "home")
    env = {"CODY_HOME": str(short_dir / "home"), "PATH": os.environ.get("PATH", "")}
    app = DaemonApp(env=env, paths=paths)
    target = ListenTarget(short_dir / "run" / "d.sock", private_dir=True)
    sock = bind_socket(target)
    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.ensure_future(
        serve_listen(
            app, sock, "auto", stall_timeout_s=30, ready=ready.set, own_uid=own_uid, stop=stop
        )
    )
    await asyncio.wait_for(ready.wait(), 10)
    return stop, task, target.path


INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'


async def test_a_connection_from_another_uid_is_closed_unanswered(short_dir: Path) -> None:
    stop, task, path = await _serve(short_dir, own_uid=os.getuid() + 1)
    reader, writer = await asyncio.open_unix_connection(str(path))
    assert await asyncio.wait_for(reader.read(), 10) == b"", "closed before a byte is read"
    writer.close()
    stop.set()
    assert await task == 0


async def test_the_own_uid_is_served_and_the_socket_is_0600_in_a_0700_dir(short_dir: Path) -> None:
    stop, task, path = await _serve(short_dir, own_uid=os.getuid())
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert oct(os.stat(path.parent).st_mode & 0o777) == "0o700"
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(INITIALIZE)
    answer = json.loads(await asyncio.wait_for(reader.readline(), 10))
    assert answer["id"] == 1 and answer["result"]["agentInfo"]["name"] == "cody"
    writer.close()
    stop.set()
    assert await task == 0


def test_a_file_that_is_not_a_socket_is_left_alone(short_dir: Path) -> None:
    (short_dir / "run").mkdir(mode=0o700)
    path = short_dir / "run" / "d.sock"
    path.write_text("mine")
    with pytest.raises(ListenError, match="is not a socket"):
        bind_socket(ListenTarget(path, private_dir=True))
    assert path.read_text() == "mine"


def test_a_socket_dir_of_another_user_is_refused(short_dir: Path) -> None:
    if os.getuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs as root: this test must run there")
        pytest.skip("needs root to give a directory to another user")
    directory = short_dir / "run"
    directory.mkdir(mode=0o700)
    os.chown(directory, 12345, 12345)
    with pytest.raises(ListenError, match="belongs to another user"):
        bind_socket(ListenTarget(directory / "d.sock", private_dir=True))
    assert not (directory / "d.sock").exists()


def test_a_socket_path_too_long_is_a_clear_error(short_dir: Path) -> None:
    with pytest.raises(ListenError, match="too long"):
        bind_socket(ListenTarget(short_dir / ("x" * 120) / "d.sock", private_dir=True))
