"""A canned Responses-API server for benchmarks, in its own process.

`python bench/sse_server.py SCENARIO` prints its port on stdout, then serves POST
/v1/responses forever, cycling through the scenario's prebuilt bodies (built once, so the
server costs almost nothing per event). Event shapes follow
https://platform.openai.com/docs/api-reference/responses-streaming.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


def sse(events: list[dict[str, object]]) -> bytes:
    out = []
    for number, event in enumerate(events):
        numbered = {**event, "sequence_number": number}
        out.append(f"event: {numbered['type']}\ndata: {json.dumps(numbered)}\n\n")
    return "".join(out).encode()


def _response(output: list[dict[str, object]], usage_in: int = 100) -> dict[str, object]:
    return {
        "id": "resp_bench",
        "object": "response",
        "status": "completed",
        "output": output,
        "usage": {
            "input_tokens": usage_in,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage_in + 10,
        },
    }


def text_body(deltas: int, piece: str = "tok ") -> bytes:
    events: list[dict[str, object]] = [
        {
            "type": "response.created",
            "response": {"id": "resp_bench", "status": "in_progress", "output": []},
        },
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            },
        },
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": ""},
        },
    ]
    events += [
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": piece,
        }
        for _ in range(deltas)
    ]
    full = piece * deltas
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": full}],
    }
    events += [
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "text": full,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": _response([item])},
    ]
    return sse(events)


def tool_body(command: list[str], *, name: str = "exec", arguments: str | None = None) -> bytes:
    args = arguments if arguments is not None else json.dumps({"command": command})
    item = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_bench",
        "name": name,
        "arguments": args,
    }
    return sse(
        [
            {
                "type": "response.created",
                "response": {"id": "resp_bench", "status": "in_progress", "output": []},
            },
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "arguments": ""},
            },
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "output_index": 0,
                "delta": args,
            },
            {
                "type": "response.function_call_arguments.done",
                "item_id": "fc_1",
                "output_index": 0,
                "arguments": args,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": _response([item])},
        ]
    )


PACED_DELTAS = 200
PACED_INTERVAL_S = 0.01


async def write_paced(writer: asyncio.StreamWriter) -> None:
    """Stream PACED_DELTAS text deltas, PACED_INTERVAL_S apart, with chunked encoding.

    Each delta is `<ns> ` where ns is `time.time_ns()` when it was written, so a client on
    the same machine can compute each delta's latency through the daemon.
    """
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    def send(event: dict[str, object], number: int) -> None:
        numbered = {**event, "sequence_number": number}
        data = f"event: {numbered['type']}\ndata: {json.dumps(numbered)}\n\n".encode()
        writer.write(b"%x\r\n%s\r\n" % (len(data), data))

    head = [
        {"type": "response.created", "response": {"id": "resp_bench", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
        },
    ]
    number = 0
    for event in head:
        send(event, number)
        number += 1
    pieces = []
    for _ in range(PACED_DELTAS):
        piece = f"<{time.time_ns()}> "
        pieces.append(piece)
        delta = {"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": piece}
        send({"type": "response.output_text.delta", **delta}, number)
        number += 1
        await writer.drain()
        await asyncio.sleep(PACED_INTERVAL_S)
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "".join(pieces)}],
    }
    send({"type": "response.output_item.done", "output_index": 0, "item": item}, number)
    send({"type": "response.completed", "response": _response([item])}, number + 1)
    writer.write(b"0\r\n\r\n")
    await writer.drain()


EDIT_BROKEN = "from shop.prices import total\n\n\ndef main() -> float:\n    return total(prices)\n"
EDIT_FIXED = (
    "from shop.prices import total\n\n\ndef main() -> float:\n    return total([1.0, 2.0])\n"
)


def write_body(content: str) -> bytes:
    arguments = json.dumps({"filePath": "main.py", "content": content})
    return tool_body([], name="writeFile", arguments=arguments)


SCENARIOS = {
    "stream": lambda: [text_body(20_000)],
    "tool-turn": lambda: [tool_body(["echo", "bench"]), text_body(5, "done ")],
    "short": lambda: [text_body(3, "ok ")],
    "concurrent": lambda: [],  # paced: see write_paced
    "flood": lambda: [text_body(100_000, "0123456789abcdef ")],  # 1.7 MB of text
    # An edit that breaks main.py, then one that fixes it (diagnostics: each one is a change).
    "edit-turn": lambda: [
        write_body(EDIT_BROKEN),
        text_body(3, "done "),
        write_body(EDIT_FIXED),
        text_body(3, "done "),
    ],
}


async def main(scenario: str) -> None:
    bodies = SCENARIOS[scenario]()
    counter = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal counter
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                await reader.readexactly(length)
                if not bodies:
                    await write_paced(writer)
                    continue
                body = bodies[counter % len(bodies)]
                counter += 1
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
