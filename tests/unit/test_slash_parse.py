"""Which prompts run a slash command (engine/slash.py)."""

from __future__ import annotations

import pytest
from cody_daemon.engine.slash import parse_command
from cody_protocol.content import ContentBlock, ResourceLink, TextContent


def first(text: str) -> list[ContentBlock]:
    return [TextContent(text=text)]


@pytest.mark.parametrize(
    ("prompt", "name", "argument"),
    [
        ("/compact", "compact", ""),
        ("  /model  gpt-5.4 ", "model", "gpt-5.4"),
        ("/model openai gpt-5.4", "model", "openai gpt-5.4"),
        ("/review\nfocus on the parser", "review", "focus on the parser"),
        ("/init", "init", ""),
    ],
)
def test_commands_and_their_arguments(prompt: str, name: str, argument: str) -> None:
    call = parse_command(first(prompt))
    assert call is not None
    assert (call.command.name, call.argument) == (name, argument)


@pytest.mark.parametrize(
    "prompt", ["/foo", "/usr/bin/env", "/compacted", "please /compact", "", "/ model"]
)
def test_other_prompts_go_to_the_model(prompt: str) -> None:
    assert parse_command(first(prompt)) is None


def test_a_turn_command_keeps_the_attached_resources_and_the_user_s_words() -> None:
    link = ResourceLink(uri="file:///w/a.py", name="a.py")
    call = parse_command([TextContent(text="/review the error paths"), link])
    assert call is not None
    prompt = call.turn_prompt()
    assert isinstance(prompt[0], TextContent)
    assert prompt[0].text.startswith("/review: review the uncommitted changes")
    assert prompt[0].text.endswith("The user adds: the error paths")
    assert prompt[1:] == [link]


def test_a_prompt_starting_with_a_resource_is_not_a_command() -> None:
    assert parse_command([ResourceLink(uri="file:///a", name="a"), *first("/compact")]) is None
