"""The pygls behaviour rpc/ relies on, through its public API only (issue 15.4).

rpc/protocol.py and rpc/server.py use pygls for dispatch: `handle_message` runs handlers as
tasks and answers them through the writer given to `set_writer`, and `$/cancelRequest`
cancels a running handler. If a pygls release changes any of this, these tests fail with a
message that says which assumption broke (docs/architecture.md, "pygls").
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from cody_daemon.rpc.errors import RpcError
from cody_daemon.rpc.protocol import CodyProtocol
from cody_daemon.rpc.server import CodyServer
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage


class Sink:
    """A ByteSink stand-in that keeps the frames."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.frames.append(data)

    def messages(self) -> list[dict[str, Any]]:
        out = []
        for frame in self.frames:
            header, _, body = frame.partition(b"\r\n\r\n")
            assert header == b"Content-Length: %d" % len(body), "a frame is byte-exact"
            out.append(orjson.loads(body))
        return out


@pytest.fixture
def served() -> tuple[CodyServer, Sink]:
    server = CodyServer()
    sink = Sink()
    server.protocol.attach(sink)  # type: ignore[arg-type]
    gate = asyncio.Event()

    @server.feature("test/echo")
    async def echo(params: Any) -> Any:
        return {"echo": params}

    @server.feature("test/wait")
    async def wait(params: Any) -> Any:
        await gate.wait()
        return "finished"

    @server.feature("test/fail")
    async def fail(params: Any) -> Any:
        raise RpcError(-32011, "busy", {"why": "test"})

    return server, sink


def request(protocol: CodyProtocol, msg_id: int | str, method: str, params: Any) -> None:
    protocol.handle_message(
        JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)
    )


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_an_async_handler_is_answered_through_the_writer_as_a_bare_body(
    served: tuple[CodyServer, Sink],
) -> None:
    server, sink = served
    request(server.protocol, 1, "test/echo", {"class": 1, "ü": [1, None]})
    await settle()
    assert sink.messages() == [
        {"jsonrpc": "2.0", "id": 1, "result": {"echo": {"class": 1, "ü": [1, None]}}}
    ], "pygls must pass raw dict params and write the response via set_writer's writer"


async def test_a_raised_json_rpc_exception_keeps_its_code_message_and_data(
    served: tuple[CodyServer, Sink],
) -> None:
    server, sink = served
    request(server.protocol, "f", "test/fail", {})
    await settle()
    [reply] = sink.messages()
    assert reply["id"] == "f"
    assert reply["error"] == {"code": -32011, "message": "busy", "data": {"why": "test"}}


async def test_an_unknown_method_is_answered_with_32601(served: tuple[CodyServer, Sink]) -> None:
    server, sink = served
    request(server.protocol, 2, "test/nope", None)
    await settle()
    [reply] = sink.messages()
    assert (reply["id"], reply["error"]["code"]) == (2, -32601)


async def test_cancel_request_through_handle_message_cancels_the_handler_with_32800(
    served: tuple[CodyServer, Sink],
) -> None:
    server, sink = served
    request(server.protocol, 7, "test/wait", {})
    await settle()
    assert sink.messages() == []
    server.protocol.cancel_incoming(7)
    await settle()
    [reply] = sink.messages()
    assert (reply["id"], reply["error"]["code"]) == (7, -32800)


async def test_our_requests_never_enter_the_table_of_client_requests(
    served: tuple[CodyServer, Sink],
) -> None:
    """The confusion of issue 8.3 cannot come back: answers resolve only our own futures."""
    server, sink = served
    protocol = server.protocol
    request(protocol, "cody-1", "test/wait", {})  # a client request using "our" id format
    future = protocol.send_request_async("session/request_permission", {"x": 1}, msg_id="cody-1")
    await settle()
    assert protocol.resolve_answer("cody-1", {"result": {"ok": True}})
    assert await future == {"ok": True}
    assert not protocol.resolve_answer("cody-1", {"result": None}), "answered once"
    assert not protocol.resolve_answer(7, {"result": None}), "unknown ids are refused"
    # The client's own request is still running and can still be cancelled by its id.
    protocol.cancel_incoming("cody-1")
    await settle()
    assert sink.messages()[-1]["error"]["code"] == -32800


async def test_an_error_answer_becomes_json_rpc_exception_with_its_data(
    served: tuple[CodyServer, Sink],
) -> None:
    server, _ = served
    future = server.protocol.send_request_async("x/y", None, msg_id="q")
    server.protocol.resolve_answer("q", {"error": {"code": -1, "message": "no", "data": [1]}})
    with pytest.raises(JsonRpcException) as caught:
        await future
    assert (caught.value.code, caught.value.message, caught.value.data) == (-1, "no", [1])
    converted = JsonRpcException.from_error(ResponseError(code=5, message="m", data={"d": 1}))
    assert (converted.code, converted.data) == (5, {"d": 1})


async def test_notifications_reach_their_feature(served: tuple[CodyServer, Sink]) -> None:
    server, _ = served
    seen: list[Any] = []

    @server.feature("test/note")
    async def note(params: Any) -> None:
        seen.append(params)

    server.protocol.handle_message(
        JsonRPCNotification(method="test/note", jsonrpc="2.0", params={"a": 1})
    )
    await settle()
    assert seen == [{"a": 1}]
