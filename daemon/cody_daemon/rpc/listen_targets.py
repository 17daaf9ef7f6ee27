"""What `cody-daemon --listen VALUE` (given once or twice) asks for: a unix socket, a
WebSocket listener (`ws://HOST:PORT`), or both.

Invariants:
- A value is a unix socket path (empty: the per-user default; `unix://PATH` is the same as
  `PATH`) or `ws://HOST:PORT`; anything else that looks like a URL (`wss://`, `http://`,
  `ws:/...`, `tcp:...`) is refused with what to write instead: it never becomes a socket file
  at a relative path named after the URL.
- HOST is an IP address (or `localhost`, meaning 127.0.0.1): a name could resolve to
  anything. A HOST that is not a loopback address needs `--allow-remote` (the token is still
  required; the daemon warns that the connection is not encrypted).
- At most one unix socket and one WebSocket listener.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from .unix_socket import ListenError

__all__ = ["ListenPlan", "WebAddress", "plan_listen"]

_URL_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_WS_URL = re.compile(r"ws://(\[[0-9A-Fa-f:.]+\]|[^/:?#\[\]]+):(\d{1,5})/?")


@dataclass(frozen=True, slots=True)
class WebAddress:
    """Where the WebSocket listener binds: an IP address (no brackets) and a port (0: any)."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.host).is_loopback

    @property
    def wildcard(self) -> bool:
        return ipaddress.ip_address(self.host).is_unspecified

    @property
    def family_v6(self) -> bool:
        return ipaddress.ip_address(self.host).version == 6


@dataclass(frozen=True, slots=True)
class ListenPlan:
    unix: str | None
    """The socket path asked for ("" = the default one); None: no unix socket."""
    web: WebAddress | None


def _web_address(value: str) -> WebAddress:
    match = _WS_URL.fullmatch(value)
    if match is None:
        raise ListenError(
            f"--listen {value}: a WebSocket address is ws://HOST:PORT, e.g. ws://127.0.0.1:8765 "
            "(HOST an IP address or localhost, PORT 0 for any free port)"
        )
    host, port_text = match.group(1), match.group(2)
    host = host[1:-1] if host.startswith("[") else host
    if host.lower() == "localhost":
        host = "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ListenError(
            f"--listen {value}: {host!r} is not an IP address; give one (127.0.0.1 for this "
            "machine only), a host name could resolve to anything"
        ) from None
    port = int(port_text)
    if port > 65535:
        raise ListenError(f"--listen {value}: port {port} is out of range (0-65535)")
    return WebAddress(str(address), port)


def plan_listen(values: list[str], *, allow_remote: bool) -> ListenPlan:
    """Read every `--listen` value; raises ListenError naming the bad one."""
    unix: str | None = None
    web: WebAddress | None = None
    for given in values:
        value = given
        if value.startswith("ws://"):
            if web is not None:
                raise ListenError("--listen ws://... is given twice; the daemon serves one")
            web = _web_address(value)
            continue
        if value.startswith("unix://"):
            value = value.removeprefix("unix://")
            if not value:
                raise ListenError("--listen unix:// needs a path: unix:///run/user/1000/cody.sock")
        elif _URL_LIKE.match(value):
            scheme = value.split(":", 1)[0].lower()
            hint = (
                "TLS is not served: listen on ws://127.0.0.1:PORT and put a TLS proxy or an SSH "
                "tunnel in front"
                if scheme in ("wss", "https")
                else "use ws://HOST:PORT for a WebSocket, or a path (./NAME for a file whose "
                "name has a colon)"
            )
            raise ListenError(
                f"--listen {value}: neither a socket path nor a supported URL; {hint}"
            )
        if unix is not None:
            raise ListenError("--listen PATH is given twice; the daemon serves one unix socket")
        unix = value
    if web is not None and not web.loopback and not allow_remote:
        raise ListenError(
            f"--listen ws://{web.host}:{web.port} would be reachable from other machines; "
            "pass --allow-remote as well if that is what you want (the token is still "
            "required, and the connection is not encrypted), or listen on 127.0.0.1"
        )
    return ListenPlan(unix, web)
