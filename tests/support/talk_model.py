"""A mock model for the editor plugins' tests (Neovim, VS Code), steered by what the user
writes, so a test outside Python can script a turn from its own side:

- `slow <path>`: the model runs `exec` with a command that lasts until `<path>` exists (the
  test creates it when it has done what it wanted during the turn);
- any other message: the answer `ok: <the message>` (its text as the model received it,
  files sent along included), so the test can read in the chat what reached the model.
The message is the last user message of the request (a steered one included); a request
whose last input is a tool result is answered `tool done`.

`serve_talk_model()` runs it (a Responses API mock, on its own thread) and gives the
`config.toml` text that makes it a daemon's provider (`model_provider = "talk"`, key in
`MOCK_API_KEY`; no approvals, no sandbox: the command just runs).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .mock_responses import MockResponsesServer, RecordedRequest, _Stream, text, tool_call

__all__ = ["CONFIG", "serve_talk_model"]

CONFIG = """\
model_provider = "talk"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.talk]
name = "Talk"
base_url = "{base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"
default_model = "mock-model"
request_max_retries = 0
stream_max_retries = 0
"""


def _last_user_text(items: list[Any]) -> str | None:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            return "".join(
                part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict)
            )
    return None


def respond(server: MockResponsesServer, request: RecordedRequest) -> _Stream:
    body = request.body if isinstance(request.body, dict) else {}
    items = body.get("input") or []
    if items and isinstance(items[-1], dict) and items[-1].get("type") == "function_call_output":
        return server.scripted(text("tool done"))
    message = _last_user_text(items) or ""
    if message.startswith("slow "):
        gate = message.removeprefix("slow ").strip()
        command = f"while [ ! -e {shlex.quote(gate)} ]; do sleep 0.02; done; echo slow-done"
        return server.scripted(tool_call("exec", {"command": command}))
    return server.scripted(text(f"ok: {message}", chunks=2))


@contextmanager
def serve_talk_model() -> Iterator[tuple[MockResponsesServer, str]]:
    with MockResponsesServer.in_thread() as server:
        server.responder = lambda request: respond(server, request)
        yield server, CONFIG.format(base_url=server.base_url)
