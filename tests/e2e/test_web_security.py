"""The web listener's security (docs/web.md, "Security"), against the real daemon: every
WebSocket needs the token, a browser page of another origin and a DNS-rebinding Host are
refused with an HTTP status before any upgrade, no CORS header is ever sent, and a
`--listen` value that is neither a path nor a supported URL is refused instead of becoming
a socket file named after the URL."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.daemon import DAEMON_COMMAND, CodyEnv
from tests.support.web_daemon import WebDaemon, unix_client

pytestmark = pytest.mark.e2e


@pytest.fixture
async def web(cody_env: CodyEnv) -> AsyncIterator[WebDaemon]:
    daemon = await WebDaemon.start(cody_env)
    yield daemon
    assert await daemon.stop() == 0


async def http(
    web: WebDaemon, target: str, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 request (the test controls every header, Host included)."""
    host, port = web.netloc.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    lines = [f"GET {target} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items())]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    status_line, *header_lines = head.decode().split("\r\n")
    parsed = {}
    for line in header_lines:
        if ":" in line:
            name, value = line.split(":", 1)
            parsed[name.strip().lower()] = value.strip()
    body = await asyncio.wait_for(reader.read(int(parsed.get("content-length", "0"))), 10)
    writer.close()
    return int(status_line.split()[1]), parsed, body


def upgrade(web: WebDaemon, **extra: str) -> dict[str, str]:
    return {
        "Host": web.netloc,
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
        **extra,
    }


async def test_a_websocket_without_the_token_is_refused_401_before_the_upgrade(
    web: WebDaemon,
) -> None:
    status, headers, body = await http(web, "/rpc", upgrade(web))
    assert status == 401 and b"token is required" in body
    assert "upgrade" not in headers and "sec-websocket-accept" not in headers
    with pytest.raises(InvalidStatus) as refused:
        await connect(web.ws_url)
    assert refused.value.response.status_code == 401


async def test_a_wrong_token_is_refused_in_either_form(web: WebDaemon) -> None:
    wrong = "A" * 43
    for target, extra in (
        (f"/rpc?token={wrong}", {}),
        ("/rpc", {"Authorization": f"Bearer {wrong}"}),
        (f"/rpc?token={web.token[:-1]}", {}),  # all but one character
        (f"/rpc?token={web.token}&token={web.token}", {}),  # ambiguous
    ):
        status, headers, body = await http(web, target, upgrade(web, **extra))
        assert status == 401, (target, body)
        assert "sec-websocket-accept" not in headers


async def test_the_right_token_in_either_form_opens_the_socket(web: WebDaemon) -> None:
    status, headers, _ = await http(web, f"/rpc?token={web.token}", upgrade(web))
    assert status == 101 and headers["upgrade"].lower() == "websocket"
    client = await web.client()  # Authorization: Bearer
    listed = await client.request("_cody/history/list", {})
    assert listed == {"sessions": []}
    await client.close()


async def test_a_page_of_another_origin_is_refused_403_even_with_the_token(web: WebDaemon) -> None:
    for origin in (
        "http://evil.example",
        "null",
        f"http://{web.netloc}.evil.example",
        f"https://{web.netloc}",
    ):
        status, headers, body = await http(
            web, f"/rpc?token={web.token}", upgrade(web, Origin=origin)
        )
        assert status == 403, origin
        assert b"another origin" in body and "sec-websocket-accept" not in headers
    own, _, _ = await http(
        web, f"/rpc?token={web.token}", upgrade(web, Origin=f"http://{web.netloc}")
    )
    assert own == 101


async def test_a_dns_rebinding_host_is_refused_for_the_socket_and_the_page(web: WebDaemon) -> None:
    port = web.netloc.rsplit(":", 1)[1]
    for host in (f"evil.example:{port}", f"127.0.0.1.nip.io:{port}", "127.0.0.1:1", "127.0.0.1"):
        status, _, body = await http(web, f"/rpc?token={web.token}", upgrade(web, Host=host))
        assert status == 403, host
        page, _, _ = await http(web, "/", {"Host": host})
        assert page == 403, host
    ok, _, _ = await http(web, "/", {"Host": f"localhost:{port}"})
    assert ok == 200


async def test_answers_carry_a_strict_csp_and_never_cors(web: WebDaemon) -> None:
    for target, extra in (
        ("/", {}),
        ("/app.js", {}),
        ("/nothing", {}),
        ("/rpc", {"Origin": "http://evil.example"}),
    ):
        status, headers, _ = await http(
            web, target, {"Host": web.netloc, "Origin": "http://evil.example", **extra}
        )
        assert status in (200, 403, 404, 401), target
        assert not [name for name in headers if name.startswith("access-control-")], target
        if status != 403 or target == "/rpc":
            policy = headers["content-security-policy"]
            assert "script-src 'self'" in policy and "require-trusted-types-for 'script'" in policy
            assert "frame-ancestors 'none'" in policy and "'unsafe-inline'" not in policy
    status, headers, body = await http(web, "/", {"Host": web.netloc})
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'<script type="module" src="/app.js">' in body
    assert headers["x-content-type-options"] == "nosniff"


async def test_the_token_file_is_private_and_a_new_token_takes_effect_at_once(
    web: WebDaemon, cody_env: CodyEnv
) -> None:
    token_file = cody_env.cody_home / "web" / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    old = web.token
    assert len(old) == 43
    from cody_protocol.web_access import new_token

    fresh = new_token(cody_env.cody_home)
    assert fresh != old and stat.S_IMODE(token_file.stat().st_mode) == 0o600
    refused, _, _ = await http(web, f"/rpc?token={old}", upgrade(web))
    accepted, _, _ = await http(web, f"/rpc?token={fresh}", upgrade(web))
    assert (refused, accepted) == (401, 101)
    token_file.unlink()
    gone, _, body = await http(web, f"/rpc?token={fresh}", upgrade(web))
    assert gone == 401 and b"no usable token" in body


def run_daemon(cody_env: CodyEnv, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DAEMON_COMMAND, *args],
        check=False,
        env=cody_env.env,
        cwd=cody_env.workspace,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def test_a_non_loopback_listener_needs_allow_remote(cody_env: CodyEnv) -> None:
    for value in ("ws://0.0.0.0:0", "ws://[::]:0", "ws://192.0.2.1:0"):
        done = run_daemon(cody_env, "--listen", value)
        assert done.returncode == 2, value
        assert "--allow-remote" in done.stderr and "reachable from other machines" in done.stderr
    assert not (cody_env.cody_home / "web").exists(), "nothing set up for a refused listener"


def test_a_listen_value_that_is_neither_a_path_nor_a_supported_url_is_refused(
    cody_env: CodyEnv,
) -> None:
    for value, says in (
        ("ws:/127.0.0.1:8765", "neither a socket path nor a supported URL"),
        ("wss://127.0.0.1:8765", "TLS is not served"),
        ("http://127.0.0.1:8765", "use ws://HOST:PORT"),
        ("ws://example.com:8765", "not an IP address"),
        ("ws://127.0.0.1", "ws://HOST:PORT"),
        ("ws://127.0.0.1:99999", "out of range"),
    ):
        done = run_daemon(cody_env, "--listen", value)
        assert done.returncode == 2, value
        assert says in done.stderr, (value, done.stderr)
    assert os.listdir(cody_env.workspace) == [], "no socket file named after a URL"


async def test_the_unix_socket_and_the_websocket_serve_the_same_sessions(cody_env: CodyEnv) -> None:
    daemon = await WebDaemon.start(cody_env, "", "ws://127.0.0.1:0")
    assert daemon.socket_path is not None and daemon.socket_path.is_socket()
    record = json.loads((cody_env.cody_home / "web" / "listening.json").read_text())
    assert record == {"url": daemon.base_url, "pid": daemon.process.pid}
    over_web = await daemon.client()
    sid = await over_web.new_session()
    terminal = await unix_client(daemon, cody_env)
    resumed = await terminal.request(
        "session/resume", {"sessionId": sid, "cwd": str(cody_env.workspace)}
    )
    assert resumed["configOptions"], "the terminal reached the session the page made"
    await terminal.close()
    await over_web.close()
    assert await daemon.stop() == 0
    assert not daemon.socket_path.exists()
    assert not (cody_env.cody_home / "web" / "listening.json").exists()
