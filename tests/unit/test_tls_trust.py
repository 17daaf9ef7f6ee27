"""A provider at a plain http:// URL (a local model server) skips loading the CA bundle, and
its client can still never complete a TLS handshake (providers/http_provider.tls_trust)."""

from __future__ import annotations

import ssl

import pytest
from cody_daemon.providers.http_provider import tls_trust

PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_https_providers_keep_the_default_trust() -> None:
    assert tls_trust("https://api.openai.com/v1/responses") is True


def test_a_plain_http_provider_trusts_no_certificate() -> None:
    context = tls_trust("http://127.0.0.1:11434/v1/chat/completions")
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0  # fails closed: nothing is trusted


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "http_proxy", "ALL_PROXY"])
def test_with_a_proxy_the_default_trust_is_kept(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A proxy may itself be reached over TLS."""
    monkeypatch.setenv(name, "https://proxy.example:3128")
    assert tls_trust("http://127.0.0.1:11434/v1/chat/completions") is True
