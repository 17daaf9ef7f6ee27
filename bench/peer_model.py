"""The loopback model every peer talks to in `bench/run.py --peers`, in its own process.

`python bench/peer_model.py` prints its port on stdout, then serves, on 127.0.0.1:
- POST `.../v1/responses` (the Responses API: Cody and the Codex CLI, codex-acp);
- POST `.../v1/messages` (the Anthropic Messages API: Claude Code).

It is stateless: what it answers depends only on the request, so Cody, `codex app-server`,
`codex exec`, codex-acp and `claude -p` get the same answers for the same prompt:
- the request ends with a tool result (and no prompt after it) -> the final answer "It printed hi." (3 deltas);
- else the last user message holds a marker: `bench:stream` -> 5,000 text deltas,
  `bench:tool` -> one shell call `echo hi`, `bench:approve` -> one shell call
  `touch approved.txt` (not a "known safe" command, so each agent asks), `bench:hi` -> a one-line
  answer (5 deltas);
- anything else (a side request such as a title, or a request without tools) -> "ok".
The shell call is spelled in each agent's own tool: Cody's `exec {command}`, Codex's
`exec_command {cmd}`, Claude Code's `Bash {command, description}` (the request's `tools` tell
which). Bodies are built once at start from the event builders of tests/support (whose shapes
follow the official streaming references cited there), so serving costs ~nothing per event.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import mock_anthropic, mock_responses  # noqa: E402
from tests.support.mock_responses import Output, text, tool_call  # noqa: E402

STREAM_DELTAS = 5_000
MARKERS = ("bench:stream", "bench:approve", "bench:tool", "bench:hi")
FINAL_ANSWER = "It printed hi."
ONE_LINE = "Hello from the bench model, in one line."

_SHELL = {"echo": "echo hi", "touch": "touch approved.txt"}


def _tool(flavor: str, which: str) -> Output:
    command = _SHELL[which]
    if flavor == "codex":
        return tool_call("exec_command", {"cmd": command}, call_id=f"call_{which}")
    if flavor == "claude":
        args = {"command": command, "description": f"run {command}"}
        return tool_call("Bash", args, call_id=f"toolu_{which}")
    return tool_call("exec", {"command": command}, call_id=f"call_{which}")


def _frame(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def _body(api: str, *outputs: Output) -> bytes:
    if api == "messages":
        events = mock_anthropic.build_events(
            outputs,
            usage=mock_anthropic.Usage(input=100, output=10),
            end=mock_responses.End(),
            message_id="msg_bench",
            model="claude-sonnet-4-5",
        )
    else:
        events = mock_responses.build_events(
            outputs,
            usage=mock_responses.Usage(input=100, output=10),
            end=mock_responses.End(),
            response_id="resp_bench",
            model="gpt-5.5",
        )
    return _frame(events)


def build_bodies() -> dict[tuple[str, str], bytes]:
    """(flavor, answer) -> SSE body; flavor is cody / codex (Responses) or claude (Messages)."""
    bodies: dict[tuple[str, str], bytes] = {}
    for flavor in ("cody", "codex", "claude"):
        api = "messages" if flavor == "claude" else "responses"
        bodies[flavor, "final"] = _body(api, text(FINAL_ANSWER, chunks=3))
        bodies[flavor, "ok"] = _body(api, text("ok"))
        bodies[flavor, "bench:hi"] = _body(api, text(ONE_LINE, chunks=5))
        bodies[flavor, "bench:stream"] = _body(
            api, text("tok " * STREAM_DELTAS, chunks=STREAM_DELTAS)
        )
        bodies[flavor, "bench:tool"] = _body(api, _tool(flavor, "echo"))
        bodies[flavor, "bench:approve"] = _body(api, _tool(flavor, "touch"))
    return bodies


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(
        str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part
    )


def choose(path: str, body: dict[str, Any]) -> tuple[str, str]:
    """(flavor, answer) for one request (see the module docstring)."""
    tools = [str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)]
    if path.endswith("/messages"):
        flavor = "claude"
        said_by = [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant")]
        last = said_by[-1] if said_by else {}
        content = last.get("content")
        if isinstance(content, list):  # a prompt may share the message of the last tool result
            results = [
                i
                for i, part in enumerate(content)
                if isinstance(part, dict) and part.get("type") == "tool_result"
            ]
            if results:
                content = content[results[-1] + 1 :]
                if not _texts(content).strip():
                    return flavor, "final"
        said = _texts(content) if last.get("role") == "user" else ""
    else:
        flavor = "codex" if "exec_command" in tools else "cody"
        items = [
            i
            for i in body.get("input") or []
            if i.get("role") != "system" and i.get("role") != "developer"
        ]
        if items and str(items[-1].get("type", "")).endswith("_call_output"):
            return flavor, "final"
        users = [i for i in items if i.get("role") == "user"]
        said = _texts(users[-1].get("content")) if users else ""
    if not tools:
        return flavor, "ok"
    # the marker said last: Claude Code may merge a prompt into the previous user message
    at, marker = max((said.rfind(m), m) for m in MARKERS)
    return flavor, marker if at >= 0 else "ok"


_CALL_IDS = (b"call_echo", b"call_touch", b"toolu_echo", b"toolu_touch")


def unique(body: bytes, flavor: str, answer: str, count: int) -> bytes:
    """`body` with ids of its own: Claude Code merges assistant messages that share a message id
    and agents track tool calls by id, so a repeated id would change what they do."""
    if answer in ("bench:tool", "bench:approve"):
        for call_id in _CALL_IDS:
            body = body.replace(call_id, b"%s_%d" % (call_id, count))
    if flavor == "claude":  # the message id is in the first event, `message_start`
        end = body.index(b"\n\n")
        body = body[:end].replace(b'"msg_bench"', b'"msg_bench_%d"' % count) + body[end:]
    return body


async def serve() -> None:
    bodies = build_bodies()
    count = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                raw = await reader.readexactly(length) if length else b""
                route = path.split("?")[0].rstrip("/")
                if method != "POST" or not route.endswith(("/responses", "/messages")):
                    missing = json.dumps({"error": {"message": f"no route {method} {path}"}})
                    writer.write(
                        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(missing), missing.encode())
                    )
                    await writer.drain()
                    continue
                flavor, answer = choose(route, json.loads(raw) if raw else {})
                count += 1
                body = unique(bodies[flavor, answer], flavor, answer, count)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Cache-Control: no-cache\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve())
