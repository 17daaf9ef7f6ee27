"""What an MCP result becomes for the model and the client, which tools ask, prompt commands'
arguments, and which tool images a model gets (no servers: pure functions)."""

from __future__ import annotations

import base64
import json

import pytest
from cody_daemon.core.history import FunctionCallOutputItem, ImagePart
from cody_daemon.core.image_rules import (
    SESSION_MAX_IMAGES,
    admit_history_images,
)
from cody_daemon.engine.tool_images import admit_tool_images
from cody_daemon.tools.mcp.prompts import (
    McpPromptCommand,
    PromptArgumentError,
    command_name,
    parse_arguments,
    prompt_blocks,
)
from cody_daemon.tools.mcp.results import elide_binary, render_result
from cody_daemon.tools.mcp.tool import approval_of
from cody_protocol.content import ImageContent, TextContent
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ToolAnnotations,
)
from mcp_types import ImageContent as McpImage
from mcp_types import (
    TextContent as McpText,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40).decode()


def test_an_image_only_result_with_mirroring_structured_content_sends_no_base64_text() -> None:
    """Regression (read_media_file): `structuredContent` mirroring an image block was sent
    as JSON, 40,122 characters of base64 in the model's text."""
    result = CallToolResult(
        content=[McpImage(type="image", data=PNG, mime_type="image/png")],
        structured_content={"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]},
    )
    rendered = render_result(result)
    assert PNG[:40] not in rendered.text
    assert rendered.text.startswith("[image 1: image/png, 10,248 bytes]")
    assert json.loads(rendered.text.splitlines()[1]) == {
        "content": [
            {"type": "image", "data": "[binary data elided: 10,248 bytes]", "mimeType": "image/png"}
        ]
    }
    assert [part.image_url for part in rendered.images] == [f"data:image/png;base64,{PNG}"]
    shown = [c.content for c in rendered.content]
    assert shown[1] == ImageContent(data=PNG, mime_type="image/png")


def test_text_wins_over_structured_content_and_other_blocks_are_notes() -> None:
    result = CallToolResult(
        content=[
            McpText(type="text", text='{"temperature": 33}'),
            AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            McpImage(type="image", data="PHN2Zz4=", mime_type="image/svg+xml"),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///a.gz", blob="AAAA", mime_type="x/gz"),
            ),
        ],
        structured_content={"temperature": 33},
    )
    rendered = render_result(result)
    assert rendered.text.splitlines() == [
        '{"temperature": 33}',
        "[audio: audio/wav, 3 bytes]",
        "[image: image/svg+xml, 5 bytes; a type models do not read]",
        "[resource file:///a.gz: x/gz, 3 bytes]",
    ]
    assert rendered.images == [], "an SVG is not an image any model API takes"


def test_binary_values_are_elided_but_hashes_and_text_stay() -> None:
    digest = "ab" * 32
    value = {
        "blob": PNG,
        "url": f"data:image/png;base64,{PNG}",
        "sha256": digest,
        "words": "a sentence " * 40,
        "nested": [{"raw": PNG}],
    }
    elided = elide_binary(value)
    assert elided["blob"] == elided["url"] == "[binary data elided: 10,248 bytes]"
    assert elided["nested"] == [{"raw": "[binary data elided: 10,248 bytes]"}]
    assert elided["sha256"] == digest and elided["words"] == value["words"]


@pytest.mark.parametrize(
    ("configured", "trust", "hints", "expected"),
    [
        (None, True, {"read_only_hint": True}, (False, True)),
        (None, True, {"read_only_hint": True, "destructive_hint": False}, (False, True)),
        (None, True, {"read_only_hint": True, "destructive_hint": True}, (True, False)),
        (None, True, {"read_only_hint": False}, (True, False)),
        (None, True, None, (True, False)),
        (None, False, {"read_only_hint": True}, (True, False)),
        (True, True, {"read_only_hint": True}, (True, False)),
        (False, True, {"read_only_hint": False}, (False, False)),
    ],
)
def test_which_tools_ask(
    configured: bool | None,
    trust: bool,
    hints: dict[str, bool] | None,
    expected: tuple[bool, bool],
) -> None:
    annotations = ToolAnnotations(**hints) if hints is not None else None
    approval = approval_of(configured, trust, annotations)
    assert (approval.requires_approval, approval.read_only) == expected


def weather() -> McpPromptCommand:
    return McpPromptCommand.of(
        "every server",
        Prompt(
            name="weather/now",
            description="Ask about the weather",
            arguments=[
                PromptArgument(name="city", required=True),
                PromptArgument(name="state"),
            ],
        ),
    )


def test_prompt_commands_are_one_word_and_take_named_or_positional_arguments() -> None:
    command = weather()
    assert (
        command.name
        == "mcp:every_server:weather_now"
        == command_name("every server", "weather/now")
    )
    assert command.hint == "city [state]"
    assert parse_arguments(command, '"New York" NY') == {"city": "New York", "state": "NY"}
    assert parse_arguments(command, "state=CA Fresno") == {"city": "Fresno", "state": "CA"}
    assert parse_arguments(command, "city=a=b") == {"city": "a=b"}
    for bad, why in (
        ("", "needs city"),
        ("a b c", "too many words"),
        ("town=Paris", "no argument 'town'"),
        ('"unclosed', "cannot read"),
    ):
        with pytest.raises(PromptArgumentError, match=why):
            parse_arguments(command, bad)


def test_prompt_messages_become_the_turns_prompt() -> None:
    result = GetPromptResult(
        messages=[
            PromptMessage(role="user", content=McpText(type="text", text="Hello")),
            PromptMessage(role="assistant", content=McpText(type="text", text="Hi, what?")),
            PromptMessage(
                role="user", content=McpImage(type="image", data=PNG, mime_type="image/png")
            ),
        ]
    )
    blocks = prompt_blocks(result)
    assert blocks[0] == TextContent(text="[user]\nHello\n\n[assistant]\nHi, what?")
    assert blocks[1] == ImageContent(data=PNG, mime_type="image/png")


def output_with_images(count: int, data: str = PNG) -> FunctionCallOutputItem:
    images = [ImagePart(image_url=f"data:image/png;base64,{data}") for _ in range(count)]
    return FunctionCallOutputItem(call_id="c", output="shots", images=images)


def test_a_text_only_model_gets_a_note_instead_of_tool_images() -> None:
    item = admit_tool_images(output_with_images(2), [], accepts_images=False, model="text-1")
    assert item.images is None
    assert item.output.endswith(
        "[the 2 images above not shown: the current model (text-1) does not read images]"
    )


def test_tool_images_keep_within_the_image_rules() -> None:
    big = "A" * (6 * 1024 * 1024)  # base64 over Anthropic's 5 MB per image
    item = admit_tool_images(output_with_images(1, big), [], accepts_images=True, model="m")
    assert item.images is None and "[image 1 left out:" in item.output
    full = [output_with_images(1) for _ in range(SESSION_MAX_IMAGES)]
    item = admit_tool_images(output_with_images(1), full, accepts_images=True, model="m")
    assert item.images is None and f"more than {SESSION_MAX_IMAGES} images" in item.output


def test_a_loaded_history_keeps_tool_images_only_within_the_rules() -> None:
    items = [output_with_images(1) for _ in range(SESSION_MAX_IMAGES + 2)]
    broken = FunctionCallOutputItem(
        call_id="x", output="bad", images=[ImagePart(image_url="data:image/png;base64,%%%")]
    )
    history = [*items, broken]
    assert admit_history_images(history) == 3
    kept = sum(len(item.images or ()) for item in history)
    assert kept == SESSION_MAX_IMAGES
    assert "not valid base64" in history[-1].output


def test_a_servers_log_line_is_one_line_capped_and_without_its_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from cody_daemon.tools.mcp.server_log import MAX_CHARS, ServerLog
    from cody_daemon.tools.mcp.specs import McpServerSpec, McpStdio

    spec = McpServerSpec(
        name="gh", transport=McpStdio(command="x", env={"GITHUB_TOKEN": "ghp_secretvalue123"})
    )
    server_log = ServerLog(spec)
    with caplog.at_level(logging.INFO, logger="cody_daemon.mcp.gh"):
        server_log.write("error", "auth\x1b[31m", "using ghp_secretvalue123\nnext line")
        server_log.write("debug", None, "not at info")
        server_log.write("warning", None, {"blob": "y" * 5000})
    first, second = (record.getMessage() for record in caplog.records)
    assert first == "MCP server gh (auth\\x1b[31m): using [REDACTED]\\x0anext line"
    assert caplog.records[0].levelno == logging.ERROR
    assert len(second) < MAX_CHARS + 100 and "more characters" in second
    assert server_log.mcp_level() == "warning", "the daemon's default level"
