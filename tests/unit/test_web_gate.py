"""The web listener's rules as pure functions (rpc/listen_targets.py, rpc/web_security.py):
which `--listen` values mean what, which Host and Origin headers name the listener, and
that only the token opens it."""

from __future__ import annotations

from pathlib import Path

import pytest
from cody_daemon.rpc.listen_targets import WebAddress, plan_listen
from cody_daemon.rpc.unix_socket import ListenError
from cody_daemon.rpc.web_security import TokenFile, WebGate
from cody_protocol.web_access import ensure_token, read_token, token_path


def test_listen_values() -> None:
    assert plan_listen([""], allow_remote=False).unix == ""
    both = plan_listen(["", "ws://127.0.0.1:0"], allow_remote=False)
    assert both.unix == "" and both.web == WebAddress("127.0.0.1", 0)
    assert plan_listen(["ws://localhost:9"], allow_remote=False).web == WebAddress("127.0.0.1", 9)
    assert plan_listen(["ws://[::1]:9"], allow_remote=False).web == WebAddress("::1", 9)
    assert plan_listen(["unix:///tmp/x.sock"], allow_remote=False).unix == "/tmp/x.sock"
    assert plan_listen(["./a:b"], allow_remote=False).unix == "./a:b"
    assert plan_listen(["ws://0.0.0.0:9"], allow_remote=True).web == WebAddress("0.0.0.0", 9)
    for bad in (
        ["ws:/127.0.0.1:9"],
        ["tcp://x"],
        ["ws://a:1", "ws://b:2"],
        ["a", "b"],
        ["ws://0.0.0.0:9"],
    ):
        with pytest.raises(ListenError):
            plan_listen(bad, allow_remote=False)


def gate(tmp_path: Path, host: str = "127.0.0.1", port: int = 8765) -> tuple[WebGate, str]:
    token = ensure_token(tmp_path)
    return WebGate(WebAddress(host, port), TokenFile(tmp_path)), token


def test_host_must_name_the_listener(tmp_path: Path) -> None:
    loopback, _ = gate(tmp_path)
    for ok in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765"):
        assert loopback.host_refusal(ok) is None, ok
    for bad in (
        None,
        "",
        "evil.example:8765",
        "127.0.0.1",
        "127.0.0.1:80",
        "127.0.0.2:8765",
        "[::1]:8765",
        "127.0.0.1:8765x",
    ):
        refusal = loopback.host_refusal(bad)
        assert refusal is not None and refusal.status == 403, bad
    wildcard, _ = gate(tmp_path, "0.0.0.0")
    assert wildcard.host_refusal("192.0.2.7:8765") is None
    assert wildcard.host_refusal("evil.example:8765") is not None, "a name can be rebound"
    v6, _ = gate(tmp_path, "::1")
    assert v6.host_refusal("[::1]:8765") is None and v6.host_refusal("127.0.0.1:8765") is not None


def test_origin_must_be_the_listeners_own(tmp_path: Path) -> None:
    checks, _ = gate(tmp_path)
    assert checks.origin_refusal(None, "127.0.0.1:8765") is None, "no Origin: not a browser page"
    assert checks.origin_refusal("http://127.0.0.1:8765", "127.0.0.1:8765") is None
    for bad in (
        "http://localhost:8765",
        "null",
        "https://127.0.0.1:8765",
        "http://127.0.0.1:8765.evil",
    ):
        refusal = checks.origin_refusal(bad, "127.0.0.1:8765")
        assert refusal is not None and refusal.status == 403, bad


def test_only_the_token_opens(tmp_path: Path) -> None:
    checks, token = gate(tmp_path)
    assert checks.token_refusal(f"/rpc?token={token}", None) is None
    assert checks.token_refusal("/rpc", f"Bearer {token}") is None
    assert checks.token_refusal("/rpc", f"bearer   {token}") is None
    for target, auth in (
        ("/rpc", None),
        ("/rpc?token=", None),
        (f"/rpc?token={token}x", None),
        ("/rpc", f"Basic {token}"),
        (f"/rpc?token={token}&token={token}", None),
    ):
        refusal = checks.token_refusal(target, auth)
        assert refusal is not None and refusal.status == 401, (target, auth)


def test_a_token_file_that_is_not_private_or_not_a_file_is_never_used(tmp_path: Path) -> None:
    token = ensure_token(tmp_path)
    path = token_path(tmp_path)
    path.chmod(0o644)
    assert read_token(tmp_path) is None
    replaced = ensure_token(tmp_path)
    assert replaced != token and read_token(tmp_path) == replaced
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_text("A" * 43)
    assert read_token(tmp_path) is None, "a symlink is not followed"
    fresh = ensure_token(tmp_path)
    assert not path.is_symlink() and read_token(tmp_path) == fresh
    assert (tmp_path / "elsewhere").read_text() == "A" * 43
    assert sorted(p.name for p in path.parent.iterdir()) == ["token"], "no temp file left"
