"""`initialize` answered before the server's stack is imported (rpc/first_answer.py, issue
24.11a), through the real daemon started as editors start it (no arguments): the answer is
the server's own, however the first frame arrives, and whatever the first frame is, the
daemon then behaves as it did."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.support.daemon import DAEMON_COMMAND, CodyEnv

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
}


SERVER_ONLY = ("--stall-timeout", "300")
"""Any argument that is not the default turns the first answer off (the server answers)."""


def body(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def lsp(raw: bytes, extra_header: bytes = b"") -> bytes:
    return b"Content-Length: %d\r\n%s\r\n%s" % (len(raw), extra_header, raw)


class RawDaemon:
    """The daemon on pipes, spoken to byte by byte."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, cody_env: CodyEnv, *args: str) -> RawDaemon:
        process = await asyncio.create_subprocess_exec(
            *DAEMON_COMMAND, *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=cody_env.env, cwd=cody_env.workspace,
        )  # fmt: skip
        return cls(process)

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def read(self) -> tuple[str, dict[str, Any]]:
        """The next message and its framing."""
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 30)
        if line.lower().startswith(b"content-length"):
            length = int(line.split(b":")[1])
            await self.process.stdout.readline()
            raw = await self.process.stdout.readexactly(length)
            return "lsp", json.loads(raw)
        return "ndjson", json.loads(line)

    async def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return await asyncio.wait_for(self.process.wait(), 30)


async def server_answer(cody_env: CodyEnv) -> dict[str, Any]:
    """`initialize` answered by the server itself (`SERVER_ONLY`)."""
    daemon = await RawDaemon.start(cody_env, *SERVER_ONLY)
    await daemon.send(body(INITIALIZE) + b"\n")
    _, answer = await daemon.read()
    await daemon.close()
    return answer


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
async def test_the_first_answer_is_the_servers_and_what_follows_in_the_same_write_is_served(
    cody_env: CodyEnv, framing: str
) -> None:
    expected = await server_answer(cody_env)
    daemon = await RawDaemon.start(cody_env)
    listing = body({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}})
    if framing == "lsp":
        await daemon.send(lsp(body(INITIALIZE)) + lsp(listing))
    else:
        await daemon.send(body(INITIALIZE) + b"\n" + listing + b"\n")
    shown, answer = await daemon.read()
    assert (shown, answer) == (framing, expected)
    shown, listed = await daemon.read()  # initialize counts as seen: this one is served
    assert shown == framing and listed == {"jsonrpc": "2.0", "id": 2, "result": {"sessions": []}}
    assert await daemon.close() == 0


async def test_a_first_frame_in_pieces_is_answered_once_it_is_whole(cody_env: CodyEnv) -> None:
    expected = await server_answer(cody_env)
    daemon = await RawDaemon.start(cody_env)
    frame = lsp(body(INITIALIZE))
    for piece in (frame[:7], frame[7:30], frame[30:-5], frame[-5:]):
        await daemon.send(piece)
        await asyncio.sleep(0.05)
    assert await daemon.read() == ("lsp", expected)
    assert await daemon.close() == 0


@pytest.mark.parametrize(
    "first",
    [
        lsp(body(INITIALIZE), b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"),
        body({**INITIALIZE, "params": {"protocolVersion": 1, "client_info": {"name": "x"}}})
        + b"\n",
        b'  \n{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n',
        # what `json` reads and orjson (the server's parser) does not, or reads otherwise
        b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"initialize","params":{}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":'
        b'{"name":"\\ud800","version":"1"}}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1e400}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":NaN}}\n',
    ],
    ids=[
        "another-header",
        "python-field-name",
        "blank-line-first",
        "id-past-64-bits",
        "lone-surrogate",
        "float-overflow",
        "nan",
    ],
)
async def test_first_frames_this_path_leaves_alone_get_the_servers_answer(
    cody_env: CodyEnv, first: bytes
) -> None:
    answers = []
    for args in ((), SERVER_ONLY):  # as editors start it; the server alone
        daemon = await RawDaemon.start(cody_env, *args)
        await daemon.send(first)
        answers.append(await daemon.read())
        assert await daemon.close() == 0
    assert answers[0] == answers[1]


async def test_anything_but_initialize_first_is_refused_as_before(cody_env: CodyEnv) -> None:
    daemon = await RawDaemon.start(cody_env)
    await daemon.send(body({"jsonrpc": "2.0", "id": 5, "method": "session/list"}) + b"\n")
    _, refused = await daemon.read()
    assert refused["id"] == 5 and refused["error"]["code"] == -32600
    assert "send initialize first" in refused["error"]["message"]
    await daemon.send(b'{"jsonrpc": "2.0", "id": 6, "method": ')  # and a broken frame
    await daemon.send(b"\n" + body({**INITIALIZE, "id": 7}) + b"\n")
    _, broken = await daemon.read()
    assert broken["error"]["code"] == -32700
    _, answer = await daemon.read()
    assert answer["id"] == 7 and answer["result"]["protocolVersion"] == 1
    assert await daemon.close() == 0


@pytest.mark.parametrize("sent", [b"", b"Content-Le", b'{"jsonrpc": "2.0"'])
async def test_eof_before_a_whole_first_frame_ends_the_daemon_as_before(
    cody_env: CodyEnv, sent: bytes
) -> None:
    codes = []
    for args in ((), SERVER_ONLY):
        daemon = await RawDaemon.start(cody_env, *args)
        await daemon.send(sent)
        codes.append(await daemon.close())
    assert codes[0] == codes[1]


async def test_initialize_is_answered_before_asyncio_is_even_imported(cody_env: CodyEnv) -> None:
    """A daemon that cannot import asyncio (an import hook refuses it) still answers the
    first `initialize`, then fails: the answer came before the server's stack."""
    hooks = cody_env.root / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoAsyncio:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'asyncio':\n"
        "            raise ImportError('asyncio refused by the test')\n"
        "        return None\n"
        "sys.meta_path.insert(0, _NoAsyncio())\n"
    )
    paths = [str(hooks), *filter(None, [cody_env.env.get("PYTHONPATH")])]
    cody_env.env["PYTHONPATH"] = ":".join(paths)
    daemon = await RawDaemon.start(cody_env)
    await daemon.send(body(INITIALIZE) + b"\n")
    framing, answer = await daemon.read()
    assert framing == "ndjson" and answer["id"] == 1
    assert answer["result"]["protocolVersion"] == 1
    assert await daemon.close() != 0  # then it could not start its server

    refused = await RawDaemon.start(cody_env, *SERVER_ONLY)  # the server's own path
    await refused.send(body(INITIALIZE) + b"\n")
    assert await refused.close() != 0
    assert refused.process.stdout is not None
    assert await refused.process.stdout.read() == b"", "no answer without asyncio"
