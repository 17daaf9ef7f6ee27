"""Issue 24.4: the README's install behind an HTTPS proxy that intercepts TLS, whose
certificate authority is in the machine's trust store (as a company installs it), and nowhere
else: no `SSL_CERT_FILE`, no `SSL_CERT_DIR`, no uv setting.

install.py's own download (urllib) used the system store and worked; uv used its bundled
Mozilla roots and failed with `UnknownIssuer`. The machine's store is replaced, in a mount
namespace of bubblewrap's, by a bundle holding only the proxy's authority: every download
must go through the proxy (tests/support/tls_proxy.py, a real one on 127.0.0.1, relaying to
the real index) and be verified with the system store. uv gets an empty cache of its own, so
it downloads every package through the proxy.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_install import clean_path, fresh_clone, system_python
from tests.support.tls_proxy import InterceptingProxy

pytestmark = [pytest.mark.timeout(600)]

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
"""Where Debian's (and OpenSSL's, through /usr/lib/ssl/cert.pem) system trust store lives."""


def sandbox_binary() -> str:
    from cody_daemon.policy.sandbox import bwrap_path

    found = bwrap_path()
    if found is None or not Path(SYSTEM_BUNDLE).is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but bubblewrap cannot run here (or no system CA bundle)")
        pytest.skip("bubblewrap cannot run here, or this is not a Debian-style trust store")
    return found


def test_install_behind_a_tls_intercepting_proxy_uses_the_system_trust_store(
    tmp_path: Path,
) -> None:
    bwrap = sandbox_binary()
    python = system_python()
    system_path = clean_path(tmp_path)
    clone = fresh_clone(tmp_path / "cody")
    home = tmp_path / "home"
    home.mkdir()
    with InterceptingProxy.in_thread(tmp_path / "proxy") as proxy:
        store = tmp_path / "system-store.pem"
        store.write_bytes(proxy.ca_pem)
        env = {
            "HOME": str(home),
            "PATH": system_path,
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            "HTTPS_PROXY": proxy.url,
            "https_proxy": proxy.url,
            "UV_CACHE_DIR": str(tmp_path / "uv-cache"),  # empty: every package is fetched
        }
        for name in ("UV_INDEX_URL", "PIP_INDEX_URL"):
            if name in os.environ:
                env[name] = os.environ[name]
        installed = subprocess.run(
            [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(store), SYSTEM_BUNDLE,
             "--", python, "install.py"],
            cwd=clone, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=560, check=False,
        )  # fmt: skip
        report = f"{installed.stdout}\n{installed.stderr}\nproxied: {sorted(set(proxy.hosts))}"
        assert installed.returncode == 0, report
        assert "UnknownIssuer" not in installed.stderr, report
        assert not proxy.handshakes_failed, report  # nobody refused the proxy's certificate
        # install.py's listing and the uv wheel, then uv's index pages and every package:
        # all through the proxy, verified with the (replaced) system store.
        index_host = (env.get("UV_INDEX_URL") or "https://pypi.org/").split("/")[2]
        assert index_host in proxy.hosts, report
        assert len(proxy.hosts) >= 3, report

    client = home / ".local" / "bin" / "cody-client"
    version = subprocess.run(
        [str(client), "--version"],
        env={**env, "PATH": system_path}, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert version.returncode == 0 and version.stdout.strip(), version.stderr
