"""A scripted OAuth token endpoint on 127.0.0.1 for refresh tests (plain asyncio, real HTTP).

    async with MockTokenServer() as srv:
        srv.enqueue(200, {"access_token": "new", "refresh_token": "r2", "expires_in": 3600})
        srv.enqueue(400, {"error": "invalid_grant"}, delay_s=0.1)
        ... token_url=srv.url ...
        srv.requests[0].body  # the parsed JSON body that was POSTed

One scripted answer per request, in order; a request with nothing scripted gets HTTP 500.
`delay_s` holds the answer back (to make concurrent callers overlap). Every answer carries
`Connection: close`. Also: `fake_jwt(claims)` builds an unsigned JWT-shaped token for tests.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections import deque
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from .loopback import LoopbackServer, read_request_head

__all__ = ["MockTokenServer", "TokenRequest", "fake_jwt"]


def fake_jwt(claims: dict[str, Any]) -> str:
    """`header.payload.signature` with base64url JSON parts; the signature is not real."""

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


@dataclass(slots=True)
class TokenRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: Any
    """Parsed JSON (None when not JSON)."""


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    body: bytes
    delay_s: float


class MockTokenServer(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[TokenRequest] = []
        self._script: deque[_Answer] = deque()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/oauth/token"

    def enqueue(
        self, status: int, body: dict[str, Any] | str | bytes, *, delay_s: float = 0.0
    ) -> None:
        if isinstance(body, dict):
            raw = json.dumps(body).encode()
        else:
            raw = body.encode() if isinstance(body, str) else body
        self._script.append(_Answer(status, raw, delay_s))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, path, headers = await read_request_head(reader)
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.requests.append(TokenRequest(method, path, headers, body))
        answer = self._script.popleft() if self._script else None
        if answer is None:
            answer = _Answer(500, b'{"error": "mock: no scripted answer left"}', 0.0)
        await asyncio.sleep(answer.delay_s)
        reason = HTTPStatus(answer.status).phrase
        writer.write(
            (
                f"HTTP/1.1 {answer.status} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(answer.body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            + answer.body
        )
        await writer.drain()
