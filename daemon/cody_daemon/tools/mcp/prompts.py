"""MCP prompts as slash commands: `/mcp:<server>:<prompt> [args]`.

A server's prompts (`prompts/list`) are advertised to editors with the daemon's own commands
(engine/slash.py); running one (`prompts/get`) gives the text the turn starts with.
Invariants:

- the command name is `mcp:<server>:<prompt>` with whitespace and `/` in either part
  replaced by `_`, so it is one word a client can offer;
- arguments are `name=value` words or positional words, in the prompt's declared order
  (quotes group words: `/mcp:s:p "New York" state=NY`); an unknown name, too many words or a
  missing required argument is a `PromptArgumentError` naming the prompt's arguments, and
  nothing is sent to the server;
- the prompt's messages become the turn's prompt: their text in order (marked with their
  role when roles are mixed), images as image blocks, embedded resources and links as
  resource blocks (the model reads them as any prompt's).

This module imports the `mcp` SDK's types only inside functions.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cody_protocol.content import ContentBlock, ImageContent, TextContent

from .results import embedded_block, link_block

if TYPE_CHECKING:
    from mcp_types import GetPromptResult, Prompt

__all__ = [
    "PREFIX",
    "McpPromptCommand",
    "PromptArgumentError",
    "command_name",
    "parse_arguments",
    "prompt_blocks",
]

PREFIX = "mcp:"
_UNSAFE = re.compile(r"[\s/]+")


class PromptArgumentError(ValueError):
    """The words after the command do not fit the prompt's arguments (the message says how)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpPromptCommand:
    name: str
    """`mcp:<server>:<prompt>` (see `command_name`)."""
    server: str
    prompt: str
    """The prompt's name on the server."""
    description: str
    hint: str | None
    arguments: tuple[tuple[str, bool], ...]
    """(name, required) in the declared order."""

    @classmethod
    def of(cls, server: str, prompt: Prompt) -> McpPromptCommand:
        arguments = tuple((a.name, bool(a.required)) for a in prompt.arguments or [])
        about = (prompt.description or prompt.title or "").strip() or f"The {prompt.name} prompt"
        hint = " ".join(name if required else f"[{name}]" for name, required in arguments)
        return cls(
            name=command_name(server, prompt.name),
            server=server,
            prompt=prompt.name,
            description=f"{about} (MCP prompt of {server})",
            hint=hint or None,
            arguments=arguments,
        )


def command_name(server: str, prompt: str) -> str:
    return f"{PREFIX}{_UNSAFE.sub('_', server)}:{_UNSAFE.sub('_', prompt)}"


def parse_arguments(command: McpPromptCommand, text: str) -> dict[str, str]:
    """The prompt's arguments from the words after the command (see the module docstring)."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise PromptArgumentError(f"cannot read the arguments: {exc}") from None
    names = [name for name, _ in command.arguments]
    values: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        name, equals, value = word.partition("=")
        if equals and name in names:
            values[name] = value
        elif equals and name.isidentifier():
            raise PromptArgumentError(
                f"/{command.name} has no argument {name!r}; {_usage(command)}"
            )
        else:
            positional.append(word)
    free = [name for name in names if name not in values]
    if len(positional) > len(free):
        raise PromptArgumentError(f"too many words for /{command.name}; {_usage(command)}")
    values.update(zip(free, positional, strict=False))
    missing = [name for name, required in command.arguments if required and name not in values]
    if missing:
        raise PromptArgumentError(f"/{command.name} needs {', '.join(missing)}; {_usage(command)}")
    return values


def _usage(command: McpPromptCommand) -> str:
    if not command.arguments:
        return "it takes no arguments"
    return f"its arguments: {command.hint} (as name=value words or in this order)"


def prompt_blocks(result: GetPromptResult) -> list[ContentBlock]:
    """The turn's prompt from the prompt's messages (see the module docstring)."""
    from mcp_types import EmbeddedResource as McpEmbedded
    from mcp_types import ImageContent as McpImage
    from mcp_types import ResourceLink as McpLink
    from mcp_types import TextContent as McpText

    mixed = len({message.role for message in result.messages}) > 1
    texts: list[str] = []
    others: list[ContentBlock] = []
    for message in result.messages:
        block = message.content
        if isinstance(block, McpText):
            texts.append(f"[{message.role}]\n{block.text}" if mixed else block.text)
        elif isinstance(block, McpImage):
            others.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, McpLink):
            others.append(link_block(block))
        elif isinstance(block, McpEmbedded):
            others.append(embedded_block(block))
        else:  # audio: not accepted in prompts
            texts.append(f"[{getattr(block, 'type', 'content')} left out: not accepted in prompts]")
    text = "\n\n".join(texts) or (result.description or "")
    return [TextContent(text=text), *others]
