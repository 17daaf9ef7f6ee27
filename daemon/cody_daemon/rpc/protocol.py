"""pygls' JsonRPCProtocol, adapted for a non-LSP daemon (see "pygls pitfalls" in docs/architecture.md).

Only public pygls API is used (docs/architecture.md, "pygls"):

- Incoming requests and notifications go to `handle_message` (pygls runs each async handler
  as a task, answers it, and cancels it on `$/cancelRequest`).
- Responses pygls produces reach the wire through `set_writer`: the writer gets the bare
  JSON body (`include_headers=False`) and frames it in the client's framing, byte-exact.
- Notifications (the hot path: `notify` is overridden) are plain dicts encoded with orjson.
- Requests *to* the client live in this class' own table, `outgoing`, keyed by our ids and
  resolved by the dispatcher (rpc/server.py). They never touch pygls' table of incoming
  requests, so a client id can never be confused with one of ours: a response whose id
  matches a running client request, or a client request that reuses the id of a pending
  approval, is harmless (issue 8.3).
- An outgoing request that is abandoned (timeout, turn cancelled) is removed from `outgoing`
  and cancelled on the wire in the form matching the framing: `$/cancelRequest {id}` under
  Content-Length, `$/cancel_request {requestId}` under NDJSON and WebSocket (ACP's form).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from concurrent.futures import Future
from typing import Any, NoReturn

import attrs
import cattrs
import orjson
from lsprotocol.types import CANCEL_REQUEST, ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCNotification, JsonRPCProtocol, JsonRPCResponseMessage

from . import lazy_lsprotocol, wire_models
from .framing import Framing, encode_frame
from .transport import ByteSink

__all__ = ["CodyProtocol", "MsgId", "make_converter"]

logger = logging.getLogger(__name__)

MsgId = int | str


def make_converter() -> cattrs.Converter:
    """The converter pygls serialises its own messages with: answers and error answers.

    Handlers return plain JSON values (rpc/handlers.py dumps models), so pygls only ever
    hands over a `JsonRPCResponseMessage` or a `ResponseErrorMessage`; both get
    lsprotocol's wire shape (an error's `data` and a null `id` are left out, a null
    `result` is kept). lsprotocol's own converter is not used: building it needs every LSP
    class (rpc/lazy_lsprotocol.py). Pydantic models, should a result hold one, dump as
    JSON."""
    converter = cattrs.Converter()
    converter.register_unstructure_hook(
        JsonRPCResponseMessage,
        lambda message: {
            "id": message.id,
            "jsonrpc": message.jsonrpc,
            "result": converter.unstructure(message.result),
        },
    )
    # pygls holds the stand-in's classes in the daemon, lsprotocol's in a library process.
    for error_cls in {ResponseError, lazy_lsprotocol.ResponseError}:
        converter.register_unstructure_hook(error_cls, _error_body)
    for message_cls in {ResponseErrorMessage, lazy_lsprotocol.ResponseErrorMessage}:
        converter.register_unstructure_hook(message_cls, _error_message)
    converter.register_unstructure_hook_func(wire_models.is_model_class, wire_models.dump)
    return converter


def _error_body(error: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return body


def _error_message(message: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": message.jsonrpc}
    if message.error is not None:
        body["error"] = _error_body(message.error)
    if message.id is not None:
        body["id"] = message.id
    return body


@attrs.frozen
class _CancelTarget:
    """What pygls reads from a `$/cancelRequest` notification: the request's `id`."""

    id: MsgId


def _default(value: Any) -> Any:
    if wire_models.is_model(value):
        return wire_models.dump(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


class _FrameWriter:
    """pygls' writer interface: bare JSON bodies in, frames in the client's framing out."""

    def __init__(self, protocol: CodyProtocol) -> None:
        self._protocol = protocol

    def write(self, data: bytes) -> None:
        self._protocol.write_body(data)

    def close(self) -> None:
        """The sink is closed by the serve loop, not by pygls."""


class CodyProtocol(JsonRPCProtocol):
    sink: ByteSink | None = None
    framing: Framing = "lsp"

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.outgoing: dict[MsgId, asyncio.Future[Any]] = {}
        """Our requests to the client that still wait for an answer."""

    def attach(self, sink: ByteSink) -> None:
        self.sink = sink
        self.set_writer(_FrameWriter(self), include_headers=False)

    # -- sending --------------------------------------------------------------------------

    def write_body(self, body: bytes) -> None:
        if self.sink is not None:
            self.sink.write(encode_frame(body, self.framing))

    def write_message(self, message: dict[str, Any]) -> None:
        try:
            body = orjson.dumps(message, default=_default)
        except TypeError as exc:
            logger.error("cannot encode an outgoing %s: %s", _kind(message), exc)
            if _kind(message) != "response":
                return
            # A request must still be answered: an error with its id (if that encodes).
            error = {"code": -32603, "message": "Internal error: the answer could not be encoded"}
            try:
                body = orjson.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": error})
            except TypeError:
                body = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error})
        self.write_body(body)

    def notify(self, method: str, params: Any | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.write_message(message)

    def send_error(self, msg_id: MsgId | None, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.write_message({"jsonrpc": "2.0", "id": msg_id, "error": error})

    # -- requests to the client -----------------------------------------------------------

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Any = None,
        msg_id: MsgId | None = None,
    ) -> Future[Any]:
        """Not used: pygls would file the request in its table of *incoming* requests."""
        _refuse(method)

    def send_request_async(
        self, method: str, params: Any | None = None, msg_id: MsgId | None = None
    ) -> asyncio.Future[Any]:
        """Send a request to the client; the future resolves with its `result`.

        An `error` answer raises `JsonRpcException` (code, message, data) from the future.
        """
        if msg_id is None:
            msg_id = str(uuid.uuid4())
        if msg_id in self.outgoing:
            raise ValueError(f"request id {msg_id!r} is already waiting for an answer")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.outgoing[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write_message(message)
        return future

    def resolve_answer(self, msg_id: MsgId, message: dict[str, Any]) -> bool:
        """Deliver a client's answer to our request `msg_id`; False if none is waiting."""
        future = self.outgoing.pop(msg_id, None)
        if future is None or future.done():
            return False
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            code = error.get("code")
            future.set_exception(
                JsonRpcException.from_error(
                    ResponseError(
                        code=code
                        if isinstance(code, int) and not isinstance(code, bool)
                        else -32603,
                        message=str(error.get("message", "")),
                        data=error.get("data"),
                    )
                )
            )
        else:
            future.set_result(message.get("result"))
        return True

    def withdraw_request(self, msg_id: MsgId) -> None:
        """Forget an outgoing request we no longer wait for, and cancel it on the wire."""
        future = self.outgoing.pop(msg_id, None)
        if future is not None and not future.done():
            future.cancel()
        if self.framing != "lsp":
            self.notify("$/cancel_request", {"requestId": msg_id})
        else:
            self.notify("$/cancelRequest", {"id": msg_id})

    # -- requests from the client ---------------------------------------------------------

    def cancel_incoming(self, msg_id: MsgId) -> None:
        """A client cancel (either form) for one of its requests: pygls cancels the task."""
        self.handle_message(
            JsonRPCNotification(
                method=CANCEL_REQUEST, jsonrpc="2.0", params=_CancelTarget(id=msg_id)
            )
        )


def _refuse(method: str) -> NoReturn:
    raise NotImplementedError(f"use send_request_async for {method}")


def _kind(message: dict[str, Any]) -> str:
    if "method" in message:
        return "request" if "id" in message else "notification"
    return "response"
