"""Compaction through the real daemon: 200 tool calls on each wire API with a small window.

The mock model answers every request with a tool call (50 per prompt, four prompts), and any
compaction request (it carries Cody's summary prompt) with a summary; it reports usage as the
request's size (about 4 characters per token), as a real API would. The daemon must compact on
its own before a request passes 90% of the window, keep every request under the window, keep
the live request, record the compactions, and still replay all of it on `session/load`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from cody_daemon.engine.compaction import SUMMARY_HEADER, SUMMARY_PROMPT

from tests.support import mock_anthropic, mock_chat, mock_responses
from tests.support.daemon import CodyEnv, Daemon

APIS: dict[str, Any] = {
    "responses": (mock_responses, mock_responses.MockResponsesServer),
    "chat": (mock_chat, mock_chat.MockChatServer),
    "anthropic": (mock_anthropic, mock_anthropic.MockAnthropicServer),
}
WINDOW = 12_000
CALLS_PER_PROMPT = 50
PROMPTS = 4
MARKER = SUMMARY_PROMPT[:30].encode()


class ScriptedModel:
    """Answers: a summary to a compaction request, else a tool call until the prompt's calls
    are done, then a short answer. Usage = the request's size / 4."""

    def __init__(self, module: Any, server: Any) -> None:
        self.module = module
        self.server = server
        self.calls_this_prompt = 0
        self.ids = itertools.count(1)
        self.summaries = 0

    def __call__(self, request: Any) -> Any:
        module = self.module
        usage = module.Usage(input=len(request.raw_body) // 4, output=30)
        if MARKER in request.raw_body:
            self.summaries += 1
            summary = f"Summary {self.summaries}: read notes.txt many times; keep going."
            return self.server.scripted(module.text(summary, chunks=2), usage=usage)
        if self.calls_this_prompt < CALLS_PER_PROMPT:
            self.calls_this_prompt += 1
            call = module.tool_call(
                "readFile", {"filePath": "notes.txt"}, call_id=f"toolu_{next(self.ids)}"
            )
            return self.server.scripted(module.text("Reading."), call, usage=usage)
        self.calls_this_prompt = 0
        return self.server.scripted(module.text("Batch done."), usage=usage)


def config(wire_api: str, base_url: str) -> str:
    return (
        'model_provider = "mock"\n'
        f"model_context_window = {WINDOW}\n"
        "max_tool_iterations = 300\n"
        "[model_providers.mock]\n"
        f'base_url = "{base_url}"\nwire_api = "{wire_api}"\nenv_key = "MOCK_API_KEY"\n'
        'default_model = "mock-model"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
    )


@pytest.mark.timeout(240)
@pytest.mark.parametrize("wire_api", list(APIS))
async def test_a_200_call_session_compacts_by_itself_and_load_replays_everything(
    cody_env: CodyEnv, wire_api: str
) -> None:
    module, server_class = APIS[wire_api]
    (cody_env.workspace / "notes.txt").write_text("a line of notes to read again\n" * 40)
    cody_env.env["MOCK_API_KEY"] = "test-key-not-secret"
    async with server_class() as api:
        api.responder = ScriptedModel(module, api)
        cody_env.write_config(config(wire_api, api.base_url))
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session()
            for n in range(1, PROMPTS + 1):
                result = await daemon.prompt(
                    sid, f"batch {n}: read notes.txt 50 times", timeout=120
                )
                assert result["stopReason"] == "end_turn", result
            manual = await daemon.request("_cody/session/compact", {"sessionId": sid})
            api.enqueue(module.text("Still here."))
            await daemon.prompt(sid, "what did you do?")
        finally:
            await daemon.close()

    assert api.refused == []
    summaries = [r for r in api.requests if MARKER in r.raw_body]
    work = [r for r in api.requests if MARKER not in r.raw_body]
    assert len(work) == PROMPTS * (CALLS_PER_PROMPT + 1) + 1
    # It compacted by itself, and no request it sent passed the window.
    notices = [
        u["_meta"]["cody"]["compaction"]
        for u in daemon.session_updates(sid, "session_info_update")
        if "_meta" in u
    ]
    auto = [n for n in notices if n["reason"] == "auto"]
    assert len(auto) >= 3 and len(summaries) == len(notices)
    assert all(n["tokensAfter"] < n["tokensBefore"] for n in auto)
    assert max(len(r.raw_body) // 4 for r in work) < WINDOW
    # After a compaction the model sees the summary and the live request, not the old items.
    late = json.dumps(work[-2].body)  # the last call of batch 4
    assert SUMMARY_HEADER[:40] in late and "batch 4: read notes.txt" in late
    assert "batch 1: read notes.txt" not in late
    assert manual["compacted"] is True and manual["keptItems"] == 0
    assert f"Summary {len(summaries)}" in json.dumps(work[-1].body)

    # The session file keeps everything and records the compactions...
    [path] = (cody_env.cody_home / "sessions").glob("*/*/*/*.jsonl")
    events = [json.loads(line) for line in Path(path).read_text().splitlines()]
    recorded = [e["payload"] for e in events if e["payload"].get("kind") == "compaction"]
    assert len(recorded) == len(notices)
    # ...and `session/load` in a new daemon replays the whole history.
    again = await Daemon.start(cody_env)
    try:
        await again.initialize()
        await again.request(
            "session/load",
            {"sessionId": sid, "cwd": str(cody_env.workspace), "mcpServers": []},
            timeout=60,
        )
        calls = again.session_updates(sid, "tool_call")
        users = again.session_updates(sid, "user_message_chunk")
    finally:
        await again.close()
    assert len(calls) == PROMPTS * CALLS_PER_PROMPT
    assert all(c["status"] == "completed" for c in calls)
    assert [u["content"]["text"].split(":")[0] for u in users][:PROMPTS] == [
        f"batch {n}" for n in range(1, PROMPTS + 1)
    ]


async def test_compact_on_demand_and_a_huge_tool_output_is_capped(cody_env: CodyEnv) -> None:
    (cody_env.workspace / "big.txt").write_text(("x" * 99 + "\n") * 1000)
    async with mock_responses.MockResponsesServer() as api:
        cody_env.env["MOCK_API_KEY"] = "test-key-not-secret"
        cody_env.write_config(
            config("responses", api.base_url).replace(
                f"model_context_window = {WINDOW}\n", "tool_output_token_limit = 1000\n"
            )
        )
        daemon = await Daemon.start(cody_env)
        try:
            await daemon.initialize()
            sid = await daemon.new_session()
            nothing = await daemon.request("_cody/session/compact", {"sessionId": sid})
            api.enqueue(
                mock_responses.tool_call(
                    "readFile", {"filePath": "big.txt", "limit": 1000}, call_id="c1"
                )
            )
            api.enqueue(mock_responses.text("It is all x."))
            await daemon.prompt(sid, "what is in big.txt?")
            api.enqueue(mock_responses.text("Summary: the user asked about big.txt; all x."))
            done = await daemon.request("_cody/session/compact", {"sessionId": sid})
            api.enqueue(mock_responses.text("Yes."))
            await daemon.prompt(sid, "still there?")
        finally:
            await daemon.close()
    assert nothing["compacted"] is False and "nothing" in nothing["reason"]
    output = next(
        i["output"] for i in api.requests[1].body["input"] if i["type"] == "function_call_output"
    )
    assert len(output) < 4_500 and "cut from the middle of this output" in output
    assert done["compacted"] is True and done["summarizedItems"] >= 3
    summary_request = api.requests[2].body["input"]
    assert summary_request[-1]["content"][0]["text"] == SUMMARY_PROMPT
    last = api.requests[3].body["input"]
    # Cody's environment-and-permissions item leads (its place was summarised), then the
    # summary and the new message
    assert last[0]["role"] == "developer" and "<permissions>" in last[0]["content"][0]["text"]
    assert last[1]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert [i["content"][0]["text"] for i in last[2:]] == ["still there?"]
    notices = daemon.session_updates(sid, "session_info_update")
    assert any(u.get("_meta", {}).get("cody", {}).get("compaction") for u in notices)


async def test_compact_in_the_chat_client(cody_env: CodyEnv) -> None:
    async with mock_responses.MockResponsesServer() as api:
        cody_env.use_mock_provider(api.base_url)
        api.enqueue(mock_responses.text("Hello there."))
        api.enqueue(mock_responses.text("Summary: the user said hello."))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cody_client",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=cody_env.env,
            cwd=cody_env.workspace,
        )
        out, err = await asyncio.wait_for(process.communicate(b"hello\n/compact\n"), 60)
    assert process.returncode == 0, err.decode()
    text = out.decode()
    assert "Hello there." in text
    assert "Compacted: 2 earlier items summarised" in text, text
    assert api.requests[1].body["input"][-1]["content"][0]["text"] == SUMMARY_PROMPT
