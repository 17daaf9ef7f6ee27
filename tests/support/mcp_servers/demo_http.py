"""`python demo_http.py`: the demo MCP server over streamable HTTP on 127.0.0.1.

Binds an OS-chosen port and prints it as the first stdout line. When the
environment variable `DEMO_HTTP_TOKEN` is set, every HTTP request must carry
`Authorization: Bearer <token>` or gets a bare 401.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import uvicorn
from starlette.types import Receive, Scope, Send

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root

from tests.support.mcp_servers.demo_tools import build_server  # noqa: E402


async def main() -> None:
    app = build_server().streamable_http_app()
    token = os.environ.get("DEMO_HTTP_TOKEN")

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and token:
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections queue from now on: the port is printed only then
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    asyncio.run(main())
