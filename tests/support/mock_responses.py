"""A scripted mock of the OpenAI Responses API, for unit and end-to-end tests.

Event sequence and shapes follow https://platform.openai.com/docs/api-reference/responses-streaming
and error bodies follow https://platform.openai.com/docs/guides/error-codes
(`{"error": {"message", "type", "param", "code"}}`).

A real HTTP/1.1 server on 127.0.0.1 (OS-assigned port), plain asyncio. Every answer carries
`Connection: close`; event streams use chunked transfer encoding, so a scripted cut is a
really truncated body. Run it in the test's loop (`async with MockResponsesServer() as srv`)
or on its own loop in a thread (`with MockResponsesServer.in_thread() as srv`) when the code
under test is driven from another loop or process. It stops on exit; nothing outlives it.

Scripting is a FIFO queue, one entry per expected request:

    srv.enqueue(reasoning("thinking", encrypted="enc-1"), text("Hello world", chunks=3),
                tool_call("exec", {"command": ["echo", "hi"]}, call_id="call_1"),
                usage=Usage(input=100, output=20, cached=10, reasoning=5))
    srv.enqueue_error(429, headers={"Retry-After": "1"})
    srv.enqueue(text("slow", chunks=4), delay_s=0.05, cut_after=5)

Every request is recorded in `srv.requests` (path, lower-cased headers, parsed JSON body,
arrival time); `srv.assert_complete()` fails when a scripted response was never requested. A request with nothing left in the queue gets HTTP 500 "mock: no scripted
response left", unless `srv.responder` is set: then `responder(request)` returns the script
(build it with `srv.scripted(...)`, same arguments as `enqueue`).

Refusals a real API makes are checked before the script is consumed (`_refusal`), as the
real servers refuse before doing any work:
- `srv.unverified_org = True`: a request asking for `reasoning.summary` gets OpenAI's 400
  "Your organization must be verified to generate reasoning summaries" (exact body as
  reported, e.g. github.com/continuedev/continue/issues/9854, and in
  https://platform.openai.com/docs/guides/reasoning#reasoning-summaries);
- `srv.chatgpt_backend = True`: a request without `instructions` gets the ChatGPT backend's
  400 `{"detail": "Instructions are required"}` (github.com/PwnKit-Labs/pwnkit/pull/330);
- a `reasoning.effort` a listed model does not accept (`MODEL_EFFORTS`) gets the API's 400
  "Unsupported value" (param `reasoning.effort`, code `unsupported_value`).
- an `input_image` whose `image_url` is not a string (an object, as Chat's shape) gets the
  400 "Invalid type for 'input[i].content[j].image_url': expected an image URL, but got an
  object instead." (code `invalid_type`; the body as reported in
  https://community.openai.com/t/reponses-api-does-not-support-image-content/1268992).
  Images are `input_image` parts with a `data:` URL or an https URL
  (https://platform.openai.com/docs/guides/images-vision); `input_images(request)` lists them.
- `srv.litellm_unsupported = {"prompt_cache_key", ...}`: LiteLLM's proxy in front of a model
  that does not take those parameters. A request carrying any of them gets the proxy's 400:
  `litellm.UnsupportedParamsError: <provider> does not support parameters: {'<name>': <value>},
  for model=... To drop these, set `litellm.drop_params=True` ...` (the message built by
  `ResponsesAPIRequestUtils._check_valid_arg` in BerriAI/litellm litellm/responses/utils.py,
  prefixed by `UnsupportedParamsError` in litellm/exceptions.py, status forced to 400), in the
  proxy's body `{"error": {"message", "type": "None", "param": "None", "code": "400"}}`
  (`ProxyException` in litellm/proxy/_types.py; `param` is the string "None"). Seen in the
  wild as github.com/BerriAI/litellm/issues/19225 (prompt_cache_key sent to Bedrock).
- a structured output format sent with `strict: true` whose schema breaks OpenAI's strict
  rules (an object without `additionalProperties: false`, or not listing every property in
  `required`) gets the 400 "Invalid schema for response_format '<name>': In context=(...),
  'additionalProperties' is required to be supplied and to be false." (code
  `invalid_json_schema`; https://platform.openai.com/docs/guides/structured-outputs
  "Supported schemas"; `strict_schema_problem`). The Chat mock applies it to
  `response_format` too.
`srv.fail_for(seconds, status)` answers every request with that 5xx until the time is up (a
burst of server errors, as the providers' own 5xx/529 incidents).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, ClassVar, Literal, Self

from .loopback import LoopbackServer, read_request_head

__all__ = [
    "End",
    "MockResponsesServer",
    "Output",
    "RecordedRequest",
    "Usage",
    "build_events",
    "completed",
    "failed",
    "incomplete",
    "input_images",
    "no_terminal",
    "reasoning",
    "refusal",
    "strict_schema_problem",
    "text",
    "tool_call",
]

# -- scripted output -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    input: int = 0
    output: int = 0
    cached: int = 0
    reasoning: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input,
            "input_tokens_details": {"cached_tokens": self.cached},
            "output_tokens": self.output,
            "output_tokens_details": {"reasoning_tokens": self.reasoning},
            "total_tokens": self.input + self.output,
        }


@dataclass(frozen=True, slots=True)
class Output:
    """One output item: `kind` message/refusal/reasoning/function_call."""

    kind: Literal["message", "refusal", "reasoning", "function_call"]
    text: str
    chunks: int = 1
    id: str | None = None
    encrypted: str | None = None
    name: str = ""
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class End:
    """How the stream ends; `kind="none"` ends the HTTP body cleanly with no terminal event."""

    kind: Literal["completed", "incomplete", "failed", "none"] = "completed"
    reason: str = "max_output_tokens"
    code: str = "server_error"
    message: str = "The server had an error while processing your request."


def text(value: str, *, chunks: int = 1, id: str | None = None) -> Output:
    return Output("message", value, chunks, id)


def refusal(value: str, *, chunks: int = 1, id: str | None = None) -> Output:
    return Output("refusal", value, chunks, id)


def reasoning(
    summary: str, *, encrypted: str | None = None, chunks: int = 1, id: str | None = None
) -> Output:
    return Output("reasoning", summary, chunks, id, encrypted=encrypted)


def tool_call(
    name: str,
    arguments: Mapping[str, Any] | str,
    *,
    call_id: str = "",
    chunks: int = 1,
    id: str | None = None,
) -> Output:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Output("function_call", args, chunks, id, name=name, call_id=call_id)


def completed() -> End:
    return End("completed")


def incomplete(reason: str = "max_output_tokens") -> End:
    return End("incomplete", reason=reason)


def failed(code: str = "server_error", message: str | None = None) -> End:
    return End("failed", code=code, message=message or End().message)


def no_terminal() -> End:
    return End("none")


def _split(value: str, n: int) -> list[str]:
    n = max(1, min(n, len(value))) if value else 1
    size, extra = divmod(len(value), n)
    pieces, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        pieces.append(value[start:end])
        start = end
    return pieces


def _item_events(out: Output, index: int, item_id: str, ev: _Emit) -> dict[str, Any]:
    """Emit the events of one output item; return the finished item."""
    where = {"item_id": item_id, "output_index": index}
    if out.kind in ("message", "refusal"):
        # Text parts are `output_text` with `text`; refusals are `refusal` parts with `refusal`.
        kind, key = ("output_text", "text") if out.kind == "message" else ("refusal", "refusal")
        extra: dict[str, Any] = {"logprobs": []} if kind == "output_text" else {}
        item = {"id": item_id, "type": "message", "role": "assistant"}
        ev(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "content": []},
        )
        where |= {"content_index": 0}
        empty: dict[str, Any] = {"type": kind, key: ""}
        if kind == "output_text":
            empty["annotations"] = []
        ev("response.content_part.added", **where, part=empty)
        for piece in _split(out.text, out.chunks):
            ev(f"response.{kind}.delta", **where, delta=piece, **extra)
        ev(f"response.{kind}.done", **where, **{key: out.text}, **extra)
        part = {**empty, key: out.text}
        ev("response.content_part.done", **where, part=part)
        done = {**item, "status": "completed", "content": [part]}
    elif out.kind == "reasoning":
        ev(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        summary = []
        if out.text:
            where |= {"summary_index": 0}
            ev(
                "response.reasoning_summary_part.added",
                **where,
                part={"type": "summary_text", "text": ""},
            )
            for piece in _split(out.text, out.chunks):
                ev("response.reasoning_summary_text.delta", **where, delta=piece)
            ev("response.reasoning_summary_text.done", **where, text=out.text)
            summary = [{"type": "summary_text", "text": out.text}]
            ev("response.reasoning_summary_part.done", **where, part=summary[0])
        done = {"id": item_id, "type": "reasoning", "summary": summary}
        if out.encrypted is not None:
            done["encrypted_content"] = out.encrypted
    else:
        call = {
            "id": item_id,
            "type": "function_call",
            "call_id": out.call_id or f"call_{item_id}",
            "name": out.name,
        }
        ev(
            "response.output_item.added",
            output_index=index,
            item={**call, "status": "in_progress", "arguments": ""},
        )
        for piece in _split(out.text, out.chunks):
            ev("response.function_call_arguments.delta", **where, delta=piece)
        ev("response.function_call_arguments.done", **where, name=out.name, arguments=out.text)
        done = {**call, "status": "completed", "arguments": out.text}
    ev("response.output_item.done", output_index=index, item=done)
    return done


_Emit = Callable[..., None]


def build_events(
    outputs: tuple[Output, ...], *, usage: Usage, end: End, response_id: str, model: str
) -> list[dict[str, Any]]:
    """The full official event sequence for one scripted response."""
    events: list[dict[str, Any]] = []
    seq = itertools.count()

    def ev(etype: str, **fields: Any) -> None:
        events.append({"type": etype, "sequence_number": next(seq), **fields})

    base = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "error": None,
        "incomplete_details": None,
    }
    start = {**base, "status": "in_progress", "output": [], "usage": None}
    ev("response.created", response=start)
    ev("response.in_progress", response=start)
    prefix = {"message": "msg", "refusal": "msg", "reasoning": "rs", "function_call": "fc"}
    done = [
        _item_events(o, i, o.id or f"{prefix[o.kind]}_mock_{i}", ev) for i, o in enumerate(outputs)
    ]
    final = {**base, "output": done, "usage": usage.to_json()}
    terminal: dict[str, dict[str, Any]] = {
        "completed": {"status": "completed"},
        "incomplete": {"status": "incomplete", "incomplete_details": {"reason": end.reason}},
        "failed": {
            "status": "failed",
            "usage": None,
            "error": {"code": end.code, "message": end.message},
        },
    }
    if end.kind != "none":
        ev(f"response.{end.kind}", response={**final, **terminal[end.kind]})
    return events


# -- server ----------------------------------------------------------------------------------


@dataclass(slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: Any
    """Parsed JSON (None when the body was empty or not JSON)."""
    raw_body: bytes
    client_disconnected: bool = False
    """The client closed the connection before the scripted response was fully sent."""
    received_at: float = field(default_factory=time.monotonic)
    """`time.monotonic()` when the request had been read."""


@dataclass(frozen=True, slots=True)
class _Stream:
    outputs: tuple[Output, ...] = ()
    usage: Usage = Usage()
    end: End = End()
    events: list[Any] | None = None
    """Exact events to send (whatever `_frame` of the server class accepts)."""
    delay_s: float = 0.0
    pauses: Mapping[int, float] = field(default_factory=dict)
    cut_after: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    headers_delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class _Error:
    status: int
    body: bytes
    headers: Mapping[str, str]
    headers_delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class _Disconnect:
    pass


_DEFAULT_ERRORS: dict[int, tuple[str, str, str | None]] = {  # (message, type, code)
    400: ("Invalid request.", "invalid_request_error", None),
    401: (
        "Incorrect API key provided: sk-mock-****1234.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    403: ("You are not allowed to use this model.", "invalid_request_error", None),
    429: ("Rate limit reached. Please try again in 1s.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def _error_body(
    message: str, type: str, code: str | None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


UNVERIFIED_SUMMARY_MESSAGE = (
    "Your organization must be verified to generate reasoning summaries. Please go to: "
    "https://platform.openai.com/settings/organization/general and click on Verify "
    "Organization. If you just verified, it can take up to 15 minutes for access to propagate."
)
MODEL_EFFORTS: dict[str, tuple[str, ...]] = {
    # As in daemon/cody_daemon/providers/models.toml (sources there).
    "gpt-5.5": ("none", "low", "medium", "high", "xhigh"),
    "gpt-5.4": ("none", "low", "medium", "high", "xhigh"),
    "gpt-5.3-codex": ("low", "medium", "high", "xhigh"),
}


def litellm_unsupported_params(params: Mapping[str, Any], model: str) -> dict[str, Any]:
    """LiteLLM proxy's 400 body for parameters its model does not take (module docstring)."""
    message = (
        f"litellm.UnsupportedParamsError: anthropic does not support parameters: {params!r}, "
        f"for model={model}. To drop these, set `litellm.drop_params=True` or for proxy:\n\n"
        "`litellm_settings:\n drop_params: true`\n"
    )
    return {"error": {"message": message, "type": "None", "param": "None", "code": "400"}}


@dataclass(frozen=True, slots=True)
class Refusal:
    """An HTTP error a real API answers before doing any work."""

    status: int
    body: dict[str, Any]


def _input_image_parts(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(`input[i].content[j]`, part) for every `input_image` part of a Responses request."""
    found: list[tuple[str, dict[str, Any]]] = []
    items = body.get("input")
    for i, item in enumerate(items if isinstance(items, list) else []):
        content = item.get("content") if isinstance(item, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            if isinstance(part, dict) and part.get("type") == "input_image":
                found.append((f"input[{i}].content[{j}]", part))
    return found


def strict_schema_problem(schema: Any, context: tuple[str, ...] = ()) -> str | None:
    """What OpenAI's strict structured output refuses in `schema` (first problem), or None."""
    if isinstance(schema, list):
        for item in schema:
            problem = strict_schema_problem(item, context)
            if problem:
                return problem
        return None
    if not isinstance(schema, dict):
        return None
    kinds = schema.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
    where = f"In context=({', '.join(repr(c) for c in context)}{',' if len(context) == 1 else ''})"
    if is_object or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            return f"{where}, 'additionalProperties' is required to be supplied and to be false."
        missing = [
            key
            for key in schema.get("properties") or {}
            if key not in (schema.get("required") or [])
        ]
        if missing:
            return (
                f"{where}, 'required' is required to be supplied and to be an array including "
                f"every key in properties. Missing '{missing[0]}'."
            )
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for name, sub in value.items():
                problem = strict_schema_problem(sub, (*context, key, name))
                if problem:
                    return problem
        elif key in ("items", "anyOf", "allOf", "oneOf", "prefixItems"):
            problem = strict_schema_problem(value, (*context, key))
            if problem:
                return problem
    return None


def strict_format_refusal(fmt: Any, param: str) -> Refusal | None:
    """OpenAI's 400 for a strict `json_schema` format whose schema strict mode refuses."""
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not fmt.get("strict"):
        return None
    problem = strict_schema_problem(fmt.get("schema"))
    if problem is None:
        return None
    message = f"Invalid schema for response_format '{fmt.get('name')}': {problem}"
    return Refusal(400, _error_body(message, "invalid_request_error", "invalid_json_schema", param))


def input_images(request: RecordedRequest) -> list[str]:
    """The `image_url` of every `input_image` the request sent, in order."""
    body = request.body if isinstance(request.body, dict) else {}
    return [str(part.get("image_url")) for _, part in _input_image_parts(body)]


class MockResponsesServer(LoopbackServer):
    """See the module docstring. `base_url` is what a provider's `base_url` should be.

    Subclasses for other APIs (tests/support/mock_chat.py, mock_anthropic.py) override
    `ROUTE`, `_build_events`, `_frame` and `_error_json`; scripting, recording and the HTTP
    plumbing are shared.
    """

    ROUTE: ClassVar[str] = "/responses"
    """Path suffix of the one POST route served."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[RecordedRequest], _Stream | _Error] | None = None
        """Answers a request when the queue is empty (see the module docstring)."""
        self.unverified_org = False
        self.chatgpt_backend = False
        self.litellm_unsupported: set[str] = set()
        """Top-level parameters a LiteLLM proxy refuses for its model (module docstring)."""
        self.refused: list[Refusal] = []
        """Every refusal sent, in order."""
        self.unused_ok = False
        """Scripted responses may be left unused (see `assert_complete`)."""
        self._fail_until = 0.0
        self._fail_status = 503
        self._script: deque[_Stream | _Error | _Disconnect] = deque()
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pending(self) -> int:
        """Scripted responses not yet consumed."""
        return len(self._script)

    def assert_complete(self) -> None:
        """Every scripted response was requested: a test that scripts more than the code
        asks for tests less than it says. The e2e `model` fixture calls it after each test
        that passed (tests/e2e/conftest.py) unless the test set `unused_ok`."""
        assert not self._script, (
            f"{len(self._script)} scripted response(s) never requested "
            f"({len(self.requests)} request(s) made); if a test leaves them on purpose "
            "(a cancelled turn), set `model.unused_ok = True`"
        )

    # scripting (thread-safe: deque appends are atomic)

    def enqueue(
        self,
        *outputs: Output,
        usage: Usage | None = None,
        end: End | None = None,
        delay_s: float = 0.0,
        pauses: Mapping[int, float] | None = None,
        cut_after: int | None = None,
        headers: Mapping[str, str] | None = None,
        headers_delay_s: float = 0.0,
    ) -> None:
        """Script one streamed response. `delay_s` is slept before every event but the first,
        `pauses[i]` additionally before event i; `cut_after=n` drops the connection after n
        events (no terminal event, truncated chunked body)."""
        self._script.append(
            _Stream(
                outputs=outputs,
                usage=usage or Usage(),
                end=end or End(),
                delay_s=delay_s,
                pauses=pauses or {},
                cut_after=cut_after,
                headers=headers or {},
                headers_delay_s=headers_delay_s,
            )
        )

    def scripted(
        self,
        *outputs: Output,
        usage: Usage | None = None,
        end: End | None = None,
        delay_s: float = 0.0,
    ) -> _Stream:
        """A script like `enqueue` builds, for `responder` to return."""
        return _Stream(outputs=outputs, usage=usage or Usage(), end=end or End(), delay_s=delay_s)

    def fail_for(self, seconds: float, status: int = 503) -> None:
        """Answer every request with HTTP `status` for the next `seconds` (a 5xx burst)."""
        self._fail_until = time.monotonic() + seconds
        self._fail_status = status

    def enqueue_events(
        self,
        events: list[dict[str, Any]],
        *,
        delay_s: float = 0.0,
        cut_after: int | None = None,
    ) -> None:
        """Script a stream of exactly these events (`sequence_number` added when missing)."""
        numbered = [
            {**e, "sequence_number": e.get("sequence_number", i)} for i, e in enumerate(events)
        ]
        self._script.append(_Stream(events=numbered, delay_s=delay_s, cut_after=cut_after))

    def enqueue_error(
        self,
        status: int,
        body: Mapping[str, Any] | str | bytes | None = None,
        *,
        message: str | None = None,
        code: str | None = None,
        type: str | None = None,
        headers: Mapping[str, str] | None = None,
        headers_delay_s: float = 0.0,
    ) -> None:
        """Script an HTTP error; without `body`, one in the API's shape (`_error_json`) is built."""
        if body is None:
            body = self._error_json(status, message, type, code)
        raw = body.encode() if isinstance(body, str) else body
        if not isinstance(raw, bytes):
            raw = json.dumps(raw).encode()
        self._script.append(_Error(status, raw, headers or {}, headers_delay_s))

    def enqueue_disconnect(self) -> None:
        """Script a connection closed right after the request, before any response byte."""
        self._script.append(_Disconnect())

    async def wait_disconnected(self, index: int = -1, timeout_s: float = 2.0) -> bool:
        """Poll until request `index` saw the client hang up early; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.requests and self.requests[index].client_disconnected:
                return True
            await asyncio.sleep(0.01)
        return False

    # lifecycle

    @classmethod
    @contextmanager
    def in_thread(cls) -> Iterator[Self]:
        """Run a server on its own event loop in a daemon thread for the `with` block."""
        server = cls()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"mock-{cls.__name__}", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=5)
            yield server
        finally:
            with suppress(Exception):
                asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()

    # HTTP

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await _read_request(reader)
        if request is not None:
            self.requests.append(request)
            await self._respond(request, reader, writer)

    async def _respond(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if request.method != "POST" or not request.path.split("?")[0].endswith(self.ROUTE):
            missing = f"mock: no route {request.method} {request.path}"
            body = self._error_json(404, missing, "invalid_request_error", None)
            return await _send(writer, 404, json.dumps(body).encode(), {})
        if time.monotonic() < self._fail_until:
            body = self._error_json(self._fail_status, None, None, None)
            return await _send(writer, self._fail_status, json.dumps(body).encode(), {})
        refusal = self._refusal(request)
        if refusal is not None:
            self.refused.append(refusal)
            return await _send(writer, refusal.status, json.dumps(refusal.body).encode(), {})
        script: _Stream | _Error | _Disconnect | None = (
            self._script.popleft() if self._script else None
        )
        if script is None and self.responder is not None:
            script = self.responder(request)
        if script is None:
            empty = "mock: no scripted response left"
            body = self._error_json(500, empty, "server_error", "mock_empty")
            return await _send(writer, 500, json.dumps(body).encode(), {})
        if isinstance(script, _Disconnect):
            return
        await asyncio.sleep(script.headers_delay_s)
        if isinstance(script, _Error):
            return await _send(writer, script.status, script.body, script.headers)
        events = script.events
        if events is None:
            events = self._build_events(script, request)
        await self._stream(request, script, events, reader, writer)

    def _refusal(self, request: RecordedRequest) -> Refusal | None:
        """The 400 a real Responses API sends for this request, if any (module docstring)."""
        body = request.body if isinstance(request.body, dict) else {}
        if self.chatgpt_backend and not body.get("instructions"):
            return Refusal(400, {"detail": "Instructions are required"})
        unsupported = {k: body[k] for k in sorted(self.litellm_unsupported) if k in body}
        if unsupported:
            return Refusal(400, litellm_unsupported_params(unsupported, str(body.get("model"))))
        for where, part in _input_image_parts(body):
            if not isinstance(part.get("image_url"), str):
                got = type(part.get("image_url")).__name__.replace("dict", "object")
                return Refusal(
                    400,
                    _error_body(
                        f"Invalid type for '{where}.image_url': expected an image URL, but got "
                        f"an {got} instead.",
                        "invalid_request_error",
                        "invalid_type",
                        f"{where}.image_url",
                    ),
                )
        text_format = body.get("text") if isinstance(body.get("text"), dict) else {}
        strict = strict_format_refusal(text_format.get("format"), "text.format.schema")
        if strict is not None:
            return strict
        reasoning = body.get("reasoning")
        if not isinstance(reasoning, dict):
            return None
        if self.unverified_org and reasoning.get("summary") not in (None, "none"):
            return Refusal(
                400,
                _error_body(
                    UNVERIFIED_SUMMARY_MESSAGE,
                    "invalid_request_error",
                    "unsupported_value",
                    "reasoning.summary",
                ),
            )
        allowed = MODEL_EFFORTS.get(str(body.get("model")))
        effort = reasoning.get("effort")
        if allowed is not None and effort is not None and effort not in allowed:
            listed = ", ".join(f"'{value}'" for value in allowed)
            return Refusal(
                400,
                _error_body(
                    f"Unsupported value: 'reasoning.effort' does not support '{effort}' with "
                    f"this model. Supported values are: {listed}.",
                    "invalid_request_error",
                    "unsupported_value",
                    "reasoning.effort",
                ),
            )
        return None

    def _build_events(self, script: _Stream, request: RecordedRequest) -> list[Any]:
        """The events of a scripted (not `enqueue_events`) response."""
        model = request.body.get("model", "mock") if isinstance(request.body, dict) else "mock"
        return build_events(
            script.outputs,
            usage=script.usage,
            end=script.end,
            response_id=f"resp_mock_{next(self._ids)}",
            model=str(model),
        )

    def _error_json(
        self, status: int, message: str | None, type: str | None, code: str | None
    ) -> dict[str, Any]:
        """An error body in this API's shape; what is None comes from the status defaults."""
        d_msg, d_type, d_code = _DEFAULT_ERRORS.get(status, ("Mock error.", "api_error", None))
        return _error_body(message or d_msg, type or d_type, code or d_code)

    def _frame(self, event: Any) -> bytes:
        """One SSE frame for `event`."""
        return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()

    async def _stream(
        self,
        request: RecordedRequest,
        script: _Stream,
        events: list[Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
        )
        head += "".join(f"{k}: {v}\r\n" for k, v in script.headers.items()) + "\r\n"
        hangup = asyncio.ensure_future(reader.read(1))  # b"" once the client closes
        try:
            writer.write(head.encode())
            for i, event in enumerate(events):
                if script.cut_after is not None and i >= script.cut_after:
                    return
                wait = (script.delay_s if i else 0.0) + script.pauses.get(i, 0.0)
                if wait:
                    await asyncio.wait({hangup}, timeout=wait)
                if hangup.done():
                    request.client_disconnected = True
                    return
                frame = self._frame(event)
                writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                await writer.drain()
            if script.cut_after is None or script.cut_after > len(events):  # else: cut
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except ConnectionError:
            request.client_disconnected = True
        finally:
            hangup.cancel()


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    try:
        method, path, headers = await read_request_head(reader)
    except asyncio.IncompleteReadError:
        return None
    raw = b""
    if "content-length" in headers:
        raw = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            raw += await reader.readexactly(size)
            await reader.readexactly(2)
        await reader.readuntil(b"\r\n")
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    return RecordedRequest(method, path, headers, body, raw)


async def _send(
    writer: asyncio.StreamWriter, status: int, body: bytes, headers: Mapping[str, str]
) -> None:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    )
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
