"""An MCP tool's image through the real daemon and the real `server-everything` to a Chat
Completions model (the API takes no image in a `tool` message): the image follows the tool
messages as a user message's `image_url`, never as base64 text; a text-only model gets a
note instead, and never an image it would refuse.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_mcp_real_servers import server_toml
from tests.support import mock_chat
from tests.support.daemon import CodyEnv, Daemon, start_with_mock_key
from tests.support.real_mcp_servers import everything

pytestmark = pytest.mark.e2e


async def run(cody_env: CodyEnv, api: mock_chat.MockChatServer, model: str) -> None:
    daemon: Daemon = await start_with_mock_key(
        cody_env,
        'model_provider = "mock"\n[model_providers.mock]\n'
        f'base_url = "{api.base_url}"\nwire_api = "chat"\nenv_key = "MOCK_API_KEY"\n'
        f'default_model = "{model}"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        + server_toml("every", everything()),
    )
    try:
        sid = await daemon.new_session()
        await daemon.wait_mcp_ready("every")
        api.enqueue(mock_chat.tool_call("mcp__every__get-tiny-image", {}, call_id="tiny"))
        api.enqueue(mock_chat.text("A tiny logo."))
        assert (await daemon.prompt(sid, "show me"))["stopReason"] == "end_turn"
    finally:
        await daemon.close()


async def test_a_chat_completions_model_gets_the_tool_image_after_the_tool_messages(
    cody_env: CodyEnv,
) -> None:
    async with mock_chat.MockChatServer() as api:
        await run(cody_env, api, "mock-model")
    messages = api.requests[-1].body["messages"]
    [at] = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    assert messages[at]["tool_call_id"] == "tiny"
    assert "iVBOR" not in json.dumps(messages[at]), "no base64 in the tool message"
    follow = messages[at + 1]
    assert follow["role"] == "user"
    [url] = mock_chat.image_urls(api.requests[-1])
    assert url.startswith("data:image/png;base64,iVBOR")
    assert api.refused == []


async def test_a_text_only_chat_model_gets_a_note_instead_of_the_tool_image(
    cody_env: CodyEnv,
) -> None:
    async with mock_chat.MockChatServer() as api:
        api.text_only_models = {"deepseek-chat"}
        await run(cody_env, api, "deepseek-chat")
    sent = json.dumps(api.requests[-1].body["messages"])
    assert mock_chat.image_urls(api.requests[-1]) == []
    assert "iVBOR" not in sent, "no base64 as text either"
    assert "not shown: the current model (deepseek-chat) does not read images" in sent
    assert api.refused == []
