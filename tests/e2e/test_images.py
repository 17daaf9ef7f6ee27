"""Images in prompts (issue 13.12), through the daemon to each wire API's local mock.

Shapes: Responses `input_image` with a data URL
(https://platform.openai.com/docs/guides/images-vision), Chat `image_url` parts
(https://platform.openai.com/docs/guides/images-vision?api-mode=chat), Anthropic `image`
blocks with a base64 source (https://docs.anthropic.com/en/docs/build-with-claude/vision).
ACP: `promptCapabilities.image` in `initialize`, `image` content blocks `{data, mimeType}`
(https://agentclientprotocol.com/protocol/content#image-content).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import mock_anthropic, mock_chat, mock_responses
from tests.support.daemon import CodyEnv, Daemon, expect_error

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def config(wire_api: str, base_url: str, model: str = "mock-model") -> str:
    return (
        'model_provider = "mock"\n'
        "[model_providers.mock]\n"
        f'base_url = "{base_url}"\nwire_api = "{wire_api}"\nenv_key = "MOCK_API_KEY"\n'
        f'default_model = "{model}"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
    )


async def start(
    cody_env: CodyEnv, wire_api: str, base_url: str, model: str = "mock-model"
) -> Daemon:
    cody_env.env["MOCK_API_KEY"] = "test-key-not-secret"
    cody_env.write_config(config(wire_api, base_url, model))
    daemon = await Daemon.start(cody_env)
    await daemon.initialize()
    return daemon


def image_prompt(sid: str, text: str, data: str = PNG, mime: str = "image/png") -> dict[str, Any]:
    return {
        "sessionId": sid,
        "prompt": [
            {"type": "text", "text": text},
            {"type": "image", "data": data, "mimeType": mime},
        ],
    }


def session_lines(cody_env: CodyEnv) -> str:
    return "".join(p.read_text() for p in Path(cody_env.cody_home).rglob("*.jsonl"))


async def test_responses_gets_input_image_persisted_and_replayed(cody_env: CodyEnv) -> None:
    async with mock_responses.MockResponsesServer() as api:
        daemon = await start(cody_env, "responses", api.base_url)
        try:
            init = await daemon.request(
                "initialize", {"protocolVersion": 1, "clientCapabilities": {}}
            )
            sid = await daemon.new_session()
            api.enqueue(mock_responses.text("A one-pixel image."))
            await daemon.request("session/prompt", image_prompt(sid, "what is this?"))
            api.enqueue(mock_responses.text("Still one pixel."))
            await daemon.prompt(sid, "and now?")
            await daemon.request("session/close", {"sessionId": sid})
            before = len(daemon.updates)
            await daemon.request("session/load", {"sessionId": sid, "cwd": str(cody_env.workspace)})
            replayed = [u["update"] for u in daemon.updates[before:]]
        finally:
            await daemon.close()
    assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
    first = api.requests[0].body["input"][-1]
    assert first["role"] == "user"
    assert first["content"] == [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
    ]
    assert mock_responses.input_images(api.requests[1]) == [f"data:image/png;base64,{PNG}"]
    chunks = [u for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    [image_id] = [u.get("messageId") for u in chunks if u["content"]["type"] == "image"]
    [text_id] = [u.get("messageId") for u in chunks if u["content"].get("text") == "what is this?"]
    assert image_id and image_id == text_id, "the image replays as part of its message"
    users = [u["content"] for u in chunks]
    assert {"type": "image", "data": PNG, "mimeType": "image/png"} in users
    assert users.index({"type": "text", "text": "what is this?"}) < users.index(
        {"type": "image", "data": PNG, "mimeType": "image/png"}
    )
    assert PNG in session_lines(cody_env), "the image is in the session file"


@pytest.mark.parametrize("wire_api", ["chat", "anthropic"])
async def test_chat_and_anthropic_get_their_image_shapes(cody_env: CodyEnv, wire_api: str) -> None:
    server = (
        mock_chat.MockChatServer() if wire_api == "chat" else mock_anthropic.MockAnthropicServer()
    )
    module: Any = mock_chat if wire_api == "chat" else mock_anthropic
    async with server as api:
        daemon = await start(cody_env, wire_api, api.base_url)
        try:
            sid = await daemon.new_session()
            api.enqueue(module.text("A pixel."))
            await daemon.request(
                "session/prompt", image_prompt(sid, "describe", mime="image/jpg", data=PNG)
            )
        finally:
            await daemon.close()
    if wire_api == "chat":
        assert mock_chat.image_urls(api.requests[0]) == [f"data:image/jpeg;base64,{PNG}"]
        user = api.requests[0].body["messages"][-1]
        assert user["content"][0] == {"type": "text", "text": "describe"}
    else:
        assert mock_anthropic.image_sources(api.requests[0]) == [
            {"type": "base64", "media_type": "image/jpeg", "data": PNG}
        ]
    assert api.refused == []


async def test_a_text_only_model_gets_a_clear_error_and_nothing_is_stored(
    offline_daemon: Daemon,
) -> None:
    daemon = offline_daemon
    init = await daemon.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    sid = await daemon.new_session()
    error = await expect_error(
        daemon.request("session/prompt", image_prompt(sid, "what is this?")), -32602
    )
    assert "The model offline (offline) does not accept images" in error.message
    assert error.data["errors"][0]["key"] == "prompt[1]"
    assert init["agentCapabilities"]["promptCapabilities"]["image"] is False
    assert "what is this?" not in session_lines(daemon.env), "nothing of it was stored"
    result = await daemon.prompt(sid, "list files")
    assert result["stopReason"] == "end_turn", "the session goes on"


async def test_bad_images_are_refused_before_any_model_call(cody_env: CodyEnv) -> None:
    big = base64.b64encode(b"\0" * (4 * 1024 * 1024)).decode()  # 5.6 MB of base64
    async with mock_anthropic.MockAnthropicServer() as api:
        daemon = await start(cody_env, "anthropic", api.base_url)
        try:
            sid = await daemon.new_session()
            bmp = await expect_error(
                daemon.request("session/prompt", image_prompt(sid, "x", mime="image/bmp")), -32602
            )
            junk = await expect_error(
                daemon.request("session/prompt", image_prompt(sid, "x", data="not base64!")),
                -32602,
            )
            large = await expect_error(
                daemon.request("session/prompt", image_prompt(sid, "x", data=big)), -32602
            )
        finally:
            await daemon.close()
    assert "'image/bmp' is not accepted; send PNG, JPEG, GIF or WebP" in bmp.message
    assert "not valid base64" in junk.message
    assert "Anthropic's API takes at most 5,242,880" in large.message
    assert api.requests == [], "refused before the API (which would refuse it every turn)"


async def test_after_switching_to_a_text_only_model_earlier_images_become_a_note(
    cody_env: CodyEnv,
) -> None:
    async with mock_chat.MockChatServer() as api:
        api.text_only_models = {"deepseek-chat"}
        daemon = await start(cody_env, "chat", api.base_url)
        try:
            sid = await daemon.new_session()
            api.enqueue(mock_chat.text("A pixel."))
            await daemon.request("session/prompt", image_prompt(sid, "look"))
            await daemon.request(
                "session/set_config_option",
                {"sessionId": sid, "configId": "model", "value": "deepseek-chat"},
            )
            refused = await expect_error(
                daemon.request("session/prompt", image_prompt(sid, "again")), -32602
            )
            api.enqueue(mock_chat.text("I cannot see it, but go on."))
            await daemon.prompt(sid, "what did I show you?")
        finally:
            await daemon.close()
    assert "deepseek-chat (mock) does not accept images" in refused.message
    assert api.refused == [], "no image ever reached the text-only model"
    sent = json.dumps(api.requests[-1].body["messages"])
    assert "the current model (deepseek-chat) does not read images" in sent
    assert PNG not in sent
