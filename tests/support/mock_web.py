"""Local stand-ins for the web services and sites the web tools talk to (127.0.0.1 only).

Answer shapes imitate the real APIs, as documented:
- Perplexity Search API, `POST /search` `{"query", "max_results", ...}` ->
  `{"id", "results": [{"title", "url", "snippet", "date", "last_updated"}], "server_time"}`
  (https://docs.perplexity.ai/api-reference/search-post).
- Perplexity chat completions, `POST /chat/completions` `{"model", "messages", ...}` ->
  `{"id", "model", "created", "object": "chat.completion", "choices": [{"index",
  "finish_reason", "message": {"role", "content"}}], "citations": [url], "search_results":
  [{"title", "url", "date"}], "usage"}`
  (https://docs.perplexity.ai/api-reference/chat-completions-post); `sonar-reasoning-pro`
  starts `content` with a `<think>` section
  (https://docs.perplexity.ai/docs/sonar/models/sonar-reasoning-pro).
- Firecrawl scrape (v2), `POST /v2/scrape` `{"url", "formats": ["markdown"], ...}` ->
  `{"success": true, "data": {"markdown", "metadata": {"title", "description", "language",
  "sourceURL", "url", "statusCode"}}}` (https://docs.firecrawl.dev/api-reference/endpoint/scrape).
- Errors: a JSON body `{"error": {"message", "type", "code"}}` (OpenAI style, which the
  Perplexity API follows) or the HTML page a front proxy sends for 401.

A plain asyncio HTTP/1.1 server (`async with MockWeb() as web`; `MockWeb("127.0.0.2")` for a
second loopback "site"), OS-assigned port, every
answer `Connection: close`. Routes map `(method, path)` to a `Reply` or a function of the
request returning one. Every request is recorded (`web.requests`: method, path, lower-cased
headers, body). For streamed bodies, `web.sent[path]` counts the body bytes handed to the
socket, so a test can prove that a client stopped reading early.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from .loopback import LoopbackServer, read_request_head

__all__ = [
    "UNAUTHORIZED_HTML",
    "MockWeb",
    "Recorded",
    "Reply",
    "chat_answer",
    "json_error",
    "scrape_answer",
    "search_answer",
]

UNAUTHORIZED_HTML = (
    "<html>\r\n<head><title>401 Authorization Required</title></head>\r\n<body>\r\n"
    "<center><h1>401 Authorization Required</h1></center>\r\n<hr><center>openresty</center>\r\n"
    "</body>\r\n</html>\r\n"
)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay_s: float = 0.0
    """Sleep before sending anything (to trigger client timeouts)."""
    stream_size: int | None = None
    """Send this many filler bytes (`Content-Length` set) instead of `body`, chunk by chunk."""
    chunk_size: int = 64 * 1024
    chunk_delay_s: float = 0.0
    """Sleep between chunks of a streamed body (a trickle)."""


Handler = Reply | Callable[[Recorded], Reply]


# -- answer builders (shapes from the docs cited above) -----------------------------------------


def search_answer(results: list[dict[str, Any]]) -> dict[str, Any]:
    """A Search API answer; each result needs title, url, snippet (date fields optional)."""
    return {
        "id": "b6f2c8a4-3c1e-4f0e-9d7a-2a1f5e6c7d80",
        "results": [{"date": None, "last_updated": None, **result} for result in results],
        "server_time": None,
    }


def chat_answer(
    content: str,
    *,
    citations: list[str] | None = None,
    search_results: list[dict[str, Any]] | None = None,
    model: str = "sonar-reasoning-pro",
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "id": "3fbf9a47-ac23-400b-8c1b-5d8a9e7f1c2b",
        "model": model,
        "created": 1735689600,
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {
            "prompt_tokens": 14,
            "completion_tokens": 420,
            "total_tokens": 434,
            "search_context_size": "low",
            "citation_tokens": 3100,
            "num_search_queries": 2,
            "reasoning_tokens": 300,
        },
    }
    if citations is not None:
        answer["citations"] = citations
    if search_results is not None:
        answer["search_results"] = search_results
    return answer


def scrape_answer(markdown: str, *, url: str, title: str, status: int = 200) -> dict[str, Any]:
    return {
        "success": True,
        "data": {
            "markdown": markdown,
            "metadata": {
                "title": title,
                "description": "",
                "language": "en",
                "sourceURL": url,
                "url": url,
                "statusCode": status,
            },
        },
    }


def json_error(message: str, *, type: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "code": code}}


# -- the server ---------------------------------------------------------------------------------


class MockWeb(LoopbackServer):
    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self.requests: list[Recorded] = []
        self.sent: dict[str, int] = {}
        self._routes: dict[tuple[str, str], Handler] = {}

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.split("?")[0] == path]

    # routes

    def route(self, method: str, path: str, handler: Handler) -> None:
        self._routes[(method.upper(), path)] = handler

    def page(
        self,
        path: str,
        body: str | bytes,
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        all_headers = dict(headers or {})
        if content_type is not None:
            all_headers["Content-Type"] = content_type
        raw = body.encode() if isinstance(body, str) else body
        self.route("GET", path, Reply(headers=all_headers, body=raw))

    def redirect(
        self, path: str, location: str, status: int = 302, headers: dict[str, str] | None = None
    ) -> None:
        self.route(
            "GET", path, Reply(status=status, headers={"Location": location, **(headers or {})})
        )

    def json(
        self, method: str, path: str, payload: Any, status: int = 200, delay_s: float = 0.0
    ) -> None:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        self.route(method, path, Reply(status=status, headers=headers, body=body, delay_s=delay_s))

    # HTTP

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await _read_request(reader)
        self.requests.append(request)
        handler = self._routes.get((request.method, request.path.split("?")[0]))
        if handler is None:
            reply = Reply(status=404, headers={"Content-Type": "text/plain"}, body=b"no route")
        else:
            reply = handler(request) if callable(handler) else handler
        await self._send(request.path, reply, writer)

    async def _send(self, path: str, reply: Reply, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(reply.delay_s)
        length = reply.stream_size if reply.stream_size is not None else len(reply.body)
        reason = HTTPStatus(reply.status).phrase
        head = (
            f"HTTP/1.1 {reply.status} {reason}\r\nContent-Length: {length}\r\nConnection: close\r\n"
        )
        head += "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items()) + "\r\n"
        writer.write(head.encode())
        if reply.stream_size is None:
            writer.write(reply.body)
            await writer.drain()
            return
        self.sent[path] = 0
        chunk = b"All work and no play makes Jack a dull boy.\n" * (reply.chunk_size // 44 + 1)
        remaining = reply.stream_size
        while remaining > 0:
            piece = chunk[: min(reply.chunk_size, remaining)]
            writer.write(piece)
            await writer.drain()
            self.sent[path] += len(piece)
            remaining -= len(piece)
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)


async def _read_request(reader: asyncio.StreamReader) -> Recorded:
    method, path, headers = await read_request_head(reader)
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Recorded(method=method, path=path, headers=headers, body=body)
