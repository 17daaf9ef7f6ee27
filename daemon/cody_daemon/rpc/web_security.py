"""Who may use the web listener: every HTTP request and WebSocket handshake is checked here
before anything else happens (docs/web.md, "Security").

A local WebSocket is reachable from any web page the user visits, so:

- `Host` must name the listener itself: `127.0.0.1:PORT` / `localhost:PORT` (or `[::1]:PORT`)
  on a loopback listener, the bound address on another one, and any IP address (never a
  name) with the port on a wildcard one. A page of `evil.example` whose name was re-pointed at
  127.0.0.1 (DNS rebinding) sends `Host: evil.example:PORT` and is refused (403).
- A browser's `Origin` must be the listener's own origin, `http://<Host>` (403 otherwise,
  `null` included); a request without `Origin` is not a browser page's and still needs the
  token like any other.
- Every WebSocket needs the token: `?token=` (the page) or `Authorization: Bearer` (other
  clients); missing or wrong is 401. Both sides are hashed (SHA-256) and compared with
  `hmac.compare_digest`, so the comparison takes the same time whatever the guess. The token
  is re-read when its file changes (`cody-client web --new-token` takes effect at once); a
  missing or unusable token file refuses every WebSocket (fail closed).
- No CORS headers are ever sent; every refusal is an HTTP answer before any upgrade.

Pure functions of the request's target and headers, so each rule is unit-tested alone.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from cody_protocol.web_access import read_token

from .listen_targets import WebAddress

__all__ = ["Refusal", "TokenFile", "WebGate"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    text: str


class TokenFile:
    """The current token of `<data dir>/web/token`, re-read when the file changes."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._stamp: tuple[int, int, int] | None = None
        self._digest: bytes | None = None

    def digest(self) -> bytes | None:
        """SHA-256 of the token; None when there is no usable token file."""
        from cody_protocol.web_access import token_path

        try:
            info = os.lstat(token_path(self._data_dir))
        except OSError:
            return None
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        if stamp != self._stamp:
            token = read_token(self._data_dir)
            self._digest = _digest(token) if token is not None else None
            self._stamp = stamp
            if token is None:
                logger.warning("the web token file is missing or unusable: refusing every socket")
        return self._digest


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


def _host_and_port(value: str) -> tuple[str, int] | None:
    """`value` of a Host header split as (host without brackets, port); None if malformed."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1 :]
    else:
        host, _, port_part = value.partition(":")
        rest = f":{port_part}" if port_part else ""
    if rest and (not rest.startswith(":") or not rest[1:].isdigit()):
        return None
    port = int(rest[1:]) if rest else 80
    return host.lower(), port


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class WebGate:
    """The checks for one listener bound at `address` (the real port, after bind)."""

    def __init__(self, address: WebAddress, tokens: TokenFile) -> None:
        self.address = address
        self._tokens = tokens

    def host_refusal(self, host_header: str | None) -> Refusal | None:
        parsed = _host_and_port(host_header) if host_header else None
        if parsed is None:
            return Refusal(403, "Forbidden: a Host header naming this listener is required.\n")
        host, port = parsed
        bound = self.address
        if port != bound.port:
            return Refusal(403, "Forbidden: the Host header names another port.\n")
        if bound.wildcard:
            ok = _is_ip(host) or host == "localhost"
        elif bound.loopback:
            ok = host == "localhost" or (
                _is_ip(host) and ipaddress.ip_address(host) == ipaddress.ip_address(bound.host)
            )
        else:
            ok = _is_ip(host) and ipaddress.ip_address(host) == ipaddress.ip_address(bound.host)
        if not ok:
            return Refusal(
                403,
                "Forbidden: the Host header does not name this listener (a DNS-rebinding page "
                "is refused); open the address cody-client web prints.\n",
            )
        return None

    def origin_refusal(self, origin: str | None, host_header: str) -> Refusal | None:
        """A browser's Origin must be this listener's own origin (the page it serves)."""
        if origin is None:
            return None
        if origin != f"http://{host_header.strip().lower()}":
            return Refusal(403, "Forbidden: pages of another origin may not use this listener.\n")
        return None

    def token_refusal(self, target: str, authorization: str | None) -> Refusal | None:
        expected = self._tokens.digest()
        if expected is None:
            return Refusal(401, "Unauthorized: this daemon has no usable token file.\n")
        given: str | None = None
        if authorization is not None:
            scheme, _, value = authorization.strip().partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                given = value.strip()
        if given is None:
            values = parse_qs(urlsplit(target).query, keep_blank_values=True).get("token", [])
            if len(values) == 1:
                given = values[0]
        if given is None:
            return Refusal(
                401, "Unauthorized: a token is required (?token= or Authorization: Bearer).\n"
            )
        if not hmac.compare_digest(_digest(given), expected):
            return Refusal(401, "Unauthorized: wrong token.\n")
        return None
