"""`bench/run.py web`: the same streamed turn over the daemon's stdio and over its WebSocket
(`cody-daemon --listen ws://127.0.0.1:0`), interleaved run by run in one invocation.

Per run: a 20,000-delta answer from bench/sse_server.py's `stream` scenario. Measured at the
client: deltas per second (prompt sent -> answer received) and first-token latency (prompt
sent -> first `agent_message_chunk`). Both clients parse every message with orjson.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect

from bench.run import DAEMON, Env, daemon, new_session, sse_server, summary

DELTAS = 20_000
_PAGE = re.compile(rb"web page on http://([^ /]+)/ ")


@contextlib.asynccontextmanager
async def web_daemon(env: Env) -> AsyncIterator[ClientConnection]:
    process = await asyncio.create_subprocess_exec(
        *DAEMON,
        "--listen",
        "ws://127.0.0.1:0",
        env=env.env,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    while not (found := _PAGE.search(await process.stderr.readline())):
        pass
    token = (env.root / "cody" / "web" / "token").read_text().strip()
    ws = await connect(
        f"ws://{found.group(1).decode()}/rpc",
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=None,
    )
    try:
        yield ws
    finally:
        await ws.close()
        process.terminate()
        await process.wait()


class WsClient:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.ids = 0

    async def request(self, method: str, params: Any, on_note: Any = None) -> Any:
        self.ids += 1
        await self.ws.send(
            orjson.dumps(
                {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
            ).decode()
        )
        while True:
            message = orjson.loads(await self.ws.recv())
            if message.get("id") == self.ids and "method" not in message:
                return message.get("result")
            if on_note is not None and "method" in message:
                on_note(message)


async def bench_web(runs: int) -> dict[str, Any]:
    import tempfile

    results: dict[str, dict[str, list[float]]] = {
        "stdio": {"rate": [], "first": []},
        "websocket": {"rate": [], "first": []},
    }
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        async with sse_server("stream") as port:
            env.use_server(port)
            async with daemon(env) as process, web_daemon(env) as ws:
                client = WsClient(ws)
                await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
                for index in range(runs + 1):
                    # stdio
                    sid = await new_session(process, env)
                    first: list[float] = []
                    started = time.perf_counter()

                    def on_stdio(
                        params: Any, t0: float = started, seen: list[float] = first
                    ) -> None:
                        if not seen and params["update"]["sessionUpdate"] == "agent_message_chunk":
                            seen.append(time.perf_counter() - t0)

                    process.connection.on_notification("session/update", on_stdio)
                    await process.connection.request(
                        "session/prompt",
                        {"sessionId": sid, "prompt": [{"type": "text", "text": "stream"}]},
                    )
                    elapsed = time.perf_counter() - started
                    process.connection._notification_handlers["session/update"].clear()
                    if index:
                        results["stdio"]["rate"].append(DELTAS / elapsed)
                        results["stdio"]["first"].append(first[0] * 1000)
                    # websocket
                    new = await client.request(
                        "session/new", {"cwd": str(env.workspace), "mcpServers": []}
                    )
                    first_ws: list[float] = []
                    started = time.perf_counter()

                    def on_ws(
                        message: Any, t0: float = started, seen: list[float] = first_ws
                    ) -> None:
                        update = message.get("params", {}).get("update", {})
                        if not seen and update.get("sessionUpdate") == "agent_message_chunk":
                            seen.append(time.perf_counter() - t0)

                    await client.request(
                        "session/prompt",
                        {
                            "sessionId": new["sessionId"],
                            "prompt": [{"type": "text", "text": "stream"}],
                        },
                        on_ws,
                    )
                    elapsed = time.perf_counter() - started
                    if index:
                        results["websocket"]["rate"].append(DELTAS / elapsed)
                        results["websocket"]["first"].append(first_ws[0] * 1000)
    return {
        transport: {
            "deltas_per_s": summary(values["rate"]),
            "first_token_ms": summary(values["first"]),
        }
        for transport, values in results.items()
    }
