"""pygls' JsonRPCProtocol, adapted for a non-LSP daemon (PYGLS_NOTES.md section 2).

- Messages are plain dicts (no namedtuples, no attrs envelopes on the hot path) encoded with
  orjson; frames are written in the framing the client chose, with byte-exact lengths.
- `notify` builds the envelope directly (the stock path walks params through cattrs).
- Outgoing requests that are abandoned (timeout, turn cancelled) are removed from pygls'
  future table and cancelled on the wire, in the form matching the framing:
  `$/cancelRequest {id}` under Content-Length, `$/cancel_request {requestId}` under NDJSON.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

import attrs
import cattrs
import orjson
from lsprotocol import converters
from lsprotocol.types import ResponseErrorMessage
from pydantic import BaseModel
from pygls.protocol import JsonRPCProtocol
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    MsgId,
)

from .framing import Framing, encode_frame
from .transport import ByteSink

__all__ = ["CodyProtocol", "make_converter"]

logger = logging.getLogger(__name__)


def make_converter() -> cattrs.Converter:
    """lsprotocol's converter, with optional `params` (a request without params is valid)."""
    converter = converters.get_converter()
    converter.register_structure_hook(
        JsonRPCRequestMessage,
        lambda obj, cls: cls(
            id=obj["id"], method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params")
        ),
    )
    converter.register_structure_hook(
        JsonRPCNotification,
        lambda obj, cls: cls(
            method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params")
        ),
    )
    return converter


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, enum.Enum):
        return value.value
    if attrs.has(type(value)):
        return attrs.asdict(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


class CodyProtocol(JsonRPCProtocol):
    sink: ByteSink | None = None
    framing: Framing = "lsp"

    def attach(self, sink: ByteSink) -> None:
        self.sink = sink

    # -- sending --------------------------------------------------------------------------

    def _envelope(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            return data
        if isinstance(data, JsonRPCResponseMessage):
            return {"jsonrpc": "2.0", "id": data.id, "result": data.result}
        if isinstance(data, ResponseErrorMessage):
            error = data.error
            body: dict[str, Any] = {
                "code": error.code if error is not None else -32603,
                "message": error.message if error is not None else "Internal error",
            }
            if error is not None and error.data is not None:
                body["data"] = error.data
            return {"jsonrpc": "2.0", "id": data.id, "error": body}
        if isinstance(data, JsonRPCRequestMessage):
            message = {"jsonrpc": "2.0", "id": data.id, "method": data.method}
            if data.params is not None:
                message["params"] = data.params
            return message
        if isinstance(data, JsonRPCNotification):
            message = {"jsonrpc": "2.0", "method": data.method}
            if data.params is not None:
                message["params"] = data.params
            return message
        unstructured: dict[str, Any] = self._converter.unstructure(data)
        return unstructured

    def _send_data(self, data: Any) -> None:
        if not data or self.sink is None:
            return
        message = self._envelope(data)
        try:
            body = orjson.dumps(message, default=_default)
        except TypeError as exc:
            logger.error("cannot encode an outgoing %s: %s", _kind(message), exc)
            if "id" in message and "method" not in message:
                body = orjson.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32603, "message": "Internal error: unencodable result"},
                    }
                )
            else:
                return
        self.sink.write(encode_frame(body, self.framing))

    def notify(self, method: str, params: Any | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send_data(message)

    def send_error(self, msg_id: MsgId | None, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

    # -- outgoing request bookkeeping ----------------------------------------------------

    def withdraw_request(self, msg_id: MsgId) -> None:
        """Forget an outgoing request we no longer wait for, and cancel it on the wire."""
        future = self._request_futures.pop(msg_id, None)
        self._result_types.pop(msg_id, None)
        if future is not None and not future.done():
            future.cancel()
        if self.framing == "ndjson":
            self.notify("$/cancel_request", {"requestId": msg_id})
        else:
            self.notify("$/cancelRequest", {"id": msg_id})

    def cancel_incoming(self, msg_id: MsgId) -> None:
        """A client cancel (either form) for one of its requests."""
        self._handle_cancel_notification(msg_id)


def _kind(message: dict[str, Any]) -> str:
    if "method" in message:
        return "request" if "id" in message else "notification"
    return "response"
