"""A TLS-intercepting HTTPS proxy on 127.0.0.1, as a company network puts in front of PyPI.

`InterceptingProxy` answers `CONNECT host:443`, then speaks TLS to the client itself with a
certificate for `host` signed by its own certificate authority (made fresh per proxy, never
trusted anywhere but where a test puts `ca_pem`), and relays the bytes over a second TLS
connection it opens to the real host (verified as usual). A client that does not trust that
authority fails its handshake, exactly as behind the real thing (`UnknownIssuer` in uv).

Invariants: it listens on 127.0.0.1 only; it relays only CONNECT to port 443 (anything else
is answered 405); `hosts` records every host a client tunnelled to and `handshakes_failed`
every host (with the TLS alert) whose client rejected the certificate; `in_thread()` stops it (and every relay)
when the block ends.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .loopback import LoopbackServer, read_request_head

__all__ = ["InterceptingProxy"]

_DAY = datetime.timedelta(days=1)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class _Authority:
    """A certificate authority of its own, issuing one server certificate per host."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Cody test intercepting CA")])
        now = datetime.datetime.now(datetime.UTC)
        self.name = name
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )  # fmt: skip
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)
        self._contexts: dict[str, ssl.SSLContext] = {}

    def context_for(self, host: str) -> ssl.SSLContext:
        """A server-side TLS context presenting a certificate for `host` (made once)."""
        if host not in self._contexts:
            key = ec.generate_private_key(ec.SECP256R1())
            now = datetime.datetime.now(datetime.UTC)
            cert = (
                x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
                .issuer_name(self.name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - _DAY)
                .not_valid_after(now + _DAY)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(
                    x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
                )
                .add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                    critical=False,
                )
                .sign(self.key, hashes.SHA256())
            )
            chain = self.directory / f"{host}.pem"
            chain.write_bytes(_pem_key(key) + cert.public_bytes(serialization.Encoding.PEM))
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(chain)
            context.set_alpn_protocols(["http/1.1"])
            self._contexts[host] = context
        return self._contexts[host]


class InterceptingProxy(LoopbackServer):
    def __init__(self, directory: Path) -> None:
        super().__init__()
        directory.mkdir(parents=True, exist_ok=True)
        self._authority = _Authority(directory)
        self.ca_pem: bytes = self._authority.pem
        """The authority's certificate (PEM): what a trust store needs to accept the proxy."""
        self.hosts: list[str] = []
        self.handshakes_failed: list[str] = []
        self._upstream = ssl.create_default_context()
        self._upstream.set_alpn_protocols(["http/1.1"])
        self._writers: set[asyncio.StreamWriter] = set()
        """Every open connection's writers, aborted at `stop` (a TLS close can wait long)."""

    async def stop(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        await super().stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, target, _headers = await read_request_head(reader)
        host, _, port = target.rpartition(":")
        if method != "CONNECT" or port != "443" or not host:
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return
        self._writers.add(writer)
        upstream_reader, upstream_writer = await asyncio.open_connection(
            host, 443, ssl=self._upstream, server_hostname=host
        )
        self._writers.add(upstream_writer)
        try:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            try:
                await writer.start_tls(self._authority.context_for(host))
            except ssl.SSLError as exc:  # the client's alert: it does not trust the authority
                self.handshakes_failed.append(f"{host}: {exc!r}")
                return
            except ConnectionError:  # a client dropping a spare connection (uv does)
                return
            self.hosts.append(host)
            # Either side closing ends the tunnel (TLS has no half-close to pass on).
            pipes = {
                asyncio.ensure_future(self._pipe(reader, upstream_writer)),
                asyncio.ensure_future(self._pipe(upstream_reader, writer)),
            }
            try:
                await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pipe in pipes:
                    pipe.cancel()
                await asyncio.gather(*pipes, return_exceptions=True)
        finally:
            self._writers.discard(writer)
            self._writers.discard(upstream_writer)
            upstream_writer.close()
            with suppress(ConnectionError, ssl.SSLError):
                await upstream_writer.wait_closed()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with suppress(ConnectionError, ssl.SSLError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()

    @classmethod
    @contextmanager
    def in_thread(cls, directory: Path) -> Iterator[Self]:
        """Run a proxy on its own event loop in a daemon thread for the `with` block."""
        proxy = cls(directory)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="tls-proxy", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(timeout=5)
            yield proxy
        finally:
            with suppress(Exception):
                asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()
