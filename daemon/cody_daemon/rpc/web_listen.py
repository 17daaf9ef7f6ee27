"""`cody-daemon --listen ws://HOST:PORT`: the same JSON-RPC over WebSocket (one message per
text frame, at `/rpc`), and the web page from the same port (docs/web.md).

The WebSocket protocol is the `websockets` library's (imported only here, only when a web
listener is asked for). Every request goes through `_process_request` first:

1. `Host` must name this listener (DNS rebinding refused: 403).
2. `/rpc`: a browser `Origin` must be this listener's own origin (403), the token must be
   given (401), the request must be a WebSocket upgrade (426), and the daemon must have room
   for one more connection (503). Only then is the connection upgraded and served like any
   other client (rpc/connections.py).
3. Any other path: one of the page's files (rpc/web_page.py) or 404. The files hold no
   secret; the page reads the token from its address' fragment (`#token=`), which a browser
   never sends to the server, so it reaches no log.

Every answer carries the page's security headers, and never a CORS header.
"""

from __future__ import annotations

import asyncio
import http
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cody_protocol.web_access import (
    WebAccessError,
    ensure_token,
    remove_record,
    token_path,
    write_record,
)
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers, MultipleValuesError
from websockets.http11 import Request, Response

from .connections import Connections
from .framing import MAX_FRAME_BYTES
from .listen_targets import WebAddress
from .unix_socket import ListenError
from .web_page import PageFiles, security_headers
from .web_security import Refusal, TokenFile, WebGate
from .web_transport import WebSocketFrames, WebSocketSink

__all__ = ["RPC_PATH", "WebListener", "start_web"]

logger = logging.getLogger(__name__)

RPC_PATH = "/rpc"
WRITE_LIMIT = 64 * 1024
"""The socket buffer above which one send waits (the sink's own bound is HIGH_WATER)."""


@dataclass(slots=True)
class WebListener:
    """A bound (not yet serving) web listener."""

    sock: socket.socket
    address: WebAddress
    """The bound address, with the real port (PORT 0 asks for any free one)."""
    data_dir: Path

    @classmethod
    def bind(cls, requested: WebAddress, data_dir: Path) -> WebListener:
        try:
            ensure_token(data_dir)
        except WebAccessError as exc:
            raise ListenError(f"cannot set up the web token: {exc}") from None
        family = socket.AF_INET6 if requested.family_v6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((requested.host, requested.port))
        except OSError as exc:
            sock.close()
            raise ListenError(
                f"cannot listen on ws://{_netloc(requested)}: {exc.strerror or exc}"
                + (" (pick another port, or 0 for any free one)" if exc.errno == 98 else "")
            ) from None
        sock.setblocking(False)
        port = sock.getsockname()[1]
        return cls(sock, WebAddress(requested.host, port), data_dir)

    @property
    def page_base(self) -> str:
        return f"http://{_netloc(self.address)}/"

    def announce(self, pid: int) -> list[str]:
        """What the daemon says on stderr once serving (no token: it is in the token file),
        and the record `cody-client web` reads."""
        write_record(self.data_dir, self.page_base, pid)
        lines = [
            f"web page on {self.page_base} (WebSocket ws://{_netloc(self.address)}{RPC_PATH}; "
            f"token in {token_path(self.data_dir)}; `cody-client web` opens it) (pid {pid})"
        ]
        if not self.address.loopback:
            lines.append(
                "warning: the web listener is reachable from other machines (--allow-remote); "
                "the connection is not encrypted, so anyone on the network path can read the "
                "token and the sessions: prefer 127.0.0.1 with an SSH tunnel"
            )
        return lines

    def forget(self, pid: int) -> None:
        remove_record(self.data_dir, pid)


def _netloc(address: WebAddress) -> str:
    host = f"[{address.host}]" if address.family_v6 else address.host
    return f"{host}:{address.port}"


def _answer(status: int, body: bytes, content_type: str, host: str | None) -> Response:
    headers = Headers()
    headers["Content-Type"] = content_type
    headers["Content-Length"] = str(len(body))
    for name, value in security_headers(host):
        headers[name] = value
    if status == http.HTTPStatus.UNAUTHORIZED:
        headers["WWW-Authenticate"] = 'Bearer realm="cody"'
    return Response(status, http.HTTPStatus(status).phrase, headers, body)


def _refused(refusal: Refusal, host: str | None) -> Response:
    return _answer(refusal.status, refusal.text.encode(), "text/plain; charset=utf-8", host)


def _single(headers: Headers, name: str) -> str | None:
    """A header that may appear at most once; a repeated one counts as malformed."""
    try:
        return headers.get(name)
    except MultipleValuesError:
        return "\0repeated"


async def start_web(
    web: WebListener, connections: Connections, *, on_input: Callable[[], None] | None
) -> Server:
    """Serve the page and the WebSocket on `web.sock` until the server is closed."""
    gate = WebGate(web.address, TokenFile(web.data_dir))
    page = PageFiles()

    def process_request(connection: ServerConnection, request: Request) -> Response | None:
        host = _single(request.headers, "Host")
        refusal = gate.host_refusal(host)
        if refusal is not None:
            logger.warning("web listener: refused a request with a foreign Host header")
            return _refused(refusal, None)
        assert host is not None
        path = urlsplit(request.path).path
        if path != RPC_PATH:
            found = page.get(path)
            if found is None:
                return _answer(404, b"Not found.\n", "text/plain; charset=utf-8", host)
            return _answer(200, found.body, found.content_type, host)
        refusal = gate.origin_refusal(_single(request.headers, "Origin"), host)
        if refusal is None:
            refusal = gate.token_refusal(request.path, _single(request.headers, "Authorization"))
        if refusal is not None:
            logger.warning("web listener: refused a WebSocket (%d)", refusal.status)
            return _refused(refusal, host)
        upgrade = _single(request.headers, "Upgrade") or ""
        if upgrade.lower() != "websocket":
            return _answer(
                426, b"Upgrade required: /rpc is a WebSocket.\n", "text/plain; charset=utf-8", host
            )
        if not connections.admit():
            return _answer(503, b"Too many connections.\n", "text/plain; charset=utf-8", host)
        return None

    async def handler(connection: ServerConnection) -> None:
        await connections.serve(WebSocketFrames(connection, on_input), WebSocketSink(connection))

    quiet = logging.getLogger("cody_daemon.rpc.websockets")
    server = await serve(
        handler,
        sock=web.sock,
        process_request=process_request,
        compression=None,
        max_size=MAX_FRAME_BYTES,
        write_limit=WRITE_LIMIT,
        server_header=None,
        logger=quiet,
    )
    logger.info("web listener on %s (pid %d)", web.page_base, os.getpid())
    await asyncio.sleep(0)
    return server
