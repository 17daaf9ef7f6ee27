"""`initialize` answered before asyncio, pygls and the rpc layer are imported (issue 24.11a).

An editor spawns `cody-daemon` and sends `initialize` first; the answer needs only the
configuration's provider listing and the bwrap/rg probe (initialize_answer.py), not the
~60 ms of asyncio, pygls, attrs and cattrs the server needs. So the daemon started without
arguments (as editors start it) reads its first frame itself, with plain `os.read`, and when
it is an ordinary `initialize` request it writes the answer straight to stdout; then it
imports the server, which starts as if it had answered that request itself (the
capabilities recorded, `initialize` seen, the framing known) and reads on from the bytes
that followed.

Invariants:
- The answer is the one the server would give: cli.py passes the function the server's
  `DaemonApp.initialize_result` uses (cody_daemon/initialize_answer.py), for the same
  environment and paths.
- The frame is parsed with `json` and answered only when orjson, the server's parser, would
  read it the same (`_as_orjson_reads`).
- Only the common case is answered here: the first frame complete within `MAX_FIRST_BYTES`,
  framed as NDJSON (`{...}\\n`) or with a single `Content-Length` header, a JSON object with
  `jsonrpc: "2.0"`, `method: "initialize"`, an integer or string id and plain params
  (`plain_client_capabilities`). Anything else (another method first, bad JSON, other
  headers, a batch, EOF) is left to the server whole: every byte read is handed to it
  unanswered, so its answers (errors included) are exactly what they were.
- Nothing here writes anything but that one answer; nothing is read past the first frame
  except what the same `read` returned, which the server gets first.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .initialize_wire import plain_client_capabilities

__all__ = ["FirstRead", "MAX_FIRST_BYTES", "answer_first_initialize"]

MAX_FIRST_BYTES = 1 << 20
"""A first frame longer than this is left to the server (it has its own limits)."""

_LSP_HEADER = re.compile(rb"Content-Length: ?(\d{1,7})\r\n\r\n")


@dataclass(frozen=True, slots=True)
class FirstRead:
    """What was read from stdin before the server started."""

    data: bytes
    """The bytes the server must read first (after the answered frame, or all of them)."""
    framing: Literal["lsp", "ndjson"] | None = None
    """The framing of the answered `initialize`; None when nothing was answered."""
    capabilities: dict[str, Any] | None = None
    """Its client capabilities in wire form (for `DaemonApp.set_client_capabilities`)."""

    @property
    def answered(self) -> bool:
        return self.framing is not None


def answer_first_initialize(
    result: Callable[[], dict[str, Any]], *, read_fd: int = 0, write_fd: int = 1
) -> FirstRead:
    """Read the first frame from `read_fd`; answer it on `write_fd` with `result()` when it
    is a plain `initialize` (see the module docstring)."""
    data = b""
    while len(data) < MAX_FIRST_BYTES:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            return FirstRead(data)
        data += chunk
        split = _first_frame(data)
        if split is None:
            return FirstRead(data)  # not a frame this path takes: the server decides
        if split is not True:
            break
    else:
        return FirstRead(data)
    framing, body, rest = split
    request = _initialize_request(body)
    if request is None:
        return FirstRead(data)
    msg_id, capabilities = request
    answer = json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "result": result()},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")
    frame = (
        b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer)
        if framing == "lsp"
        else answer + b"\n"
    )
    view = memoryview(frame)
    while view:
        view = view[os.write(write_fd, view) :]
    return FirstRead(rest, framing, capabilities)


def _first_frame(
    data: bytes,
) -> tuple[Literal["lsp", "ndjson"], bytes, bytes] | Literal[True] | None:
    """(framing, body, rest) of the first frame; True when more bytes are needed; None when
    the bytes are not a frame this path answers."""
    start = len(data) - len(data.lstrip(b" \t\r\n"))
    if start == len(data):
        return True
    if data[start : start + 1] == b"{":
        end = data.find(b"\n", start)
        if end < 0:
            return True
        return "ndjson", data[start:end].rstrip(b"\r"), data[end + 1 :]
    if start:
        return None
    header = _LSP_HEADER.match(data)
    if header is None:
        prefix = b"Content-Length: "
        return True if prefix.startswith(data[: len(prefix)]) and b"\r\n\r\n" not in data else None
    end = header.end() + int(header.group(1))
    if len(data) < end:
        return True
    return "lsp", data[header.end() : end], data[end:]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _as_orjson_reads(value: Any) -> bool:
    """Whether the server's parser (orjson, rpc/server.py) reads `value` the same: no lone
    surrogate in a string, no integer past 64 bits, no float that overflowed (`json` is used
    here because importing orjson costs ~7 ms before the answer)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    if isinstance(value, float):
        return value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_as_orjson_reads(item) for item in value)
    if isinstance(value, dict):
        return all(_as_orjson_reads(k) and _as_orjson_reads(v) for k, v in value.items())
    return False


def _initialize_request(body: bytes) -> tuple[int | str, dict[str, Any]] | None:
    """(id, client capabilities) of a plain `initialize` request, else None."""
    try:
        message = json.loads(body, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError):
        return None
    if not _as_orjson_reads(message):
        return None  # the server (orjson) may refuse what `json` takes: it decides
    if not isinstance(message, dict) or set(message) - {"jsonrpc", "id", "method", "params"}:
        return None
    msg_id = message.get("id")
    if message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    if not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
        return None
    capabilities = plain_client_capabilities(message.get("params"))
    if capabilities is None:
        return None
    return msg_id, capabilities
