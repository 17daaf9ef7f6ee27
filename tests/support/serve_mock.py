"""Run a mock model API as a process, for test drivers that are not Python (the TypeScript SDK
conformance script in tests/acp/ts).

    python -m tests.support.serve_mock responses|chat|anthropic "ANSWER TEXT"

Prints `READY <base_url>` on stdout, answers every request with the given text (as the
API would stream it; the mock's refusals apply as in-process), and on stdin EOF prints one
JSON line, the bodies of every request received, then exits 0.
"""

from __future__ import annotations

import asyncio
import json
import sys

from . import mock_anthropic, mock_chat, mock_responses

SERVERS = {
    "responses": (mock_responses.MockResponsesServer, mock_responses.text),
    "chat": (mock_chat.MockChatServer, mock_chat.text),
    "anthropic": (mock_anthropic.MockAnthropicServer, mock_anthropic.text),
}


async def serve(api: str, answer: str) -> None:
    server_class, text = SERVERS[api]
    async with server_class() as server:
        server.responder = lambda _request: server.scripted(text(answer))
        print(f"READY {server.base_url}", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        bodies = [request.body for request in server.requests]
        print(json.dumps(bodies), flush=True)


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in SERVERS:
        print(f"usage: serve_mock {'|'.join(SERVERS)} ANSWER", file=sys.stderr)
        return 2
    asyncio.run(serve(sys.argv[1], sys.argv[2]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
