"""Slash commands: a prompt that starts with `/<name>` runs one of Cody's commands.

ACP clients learn the commands from `available_commands_update` (sent after `session/new`,
`session/load`, `session/resume` and a fork) and show them in their prompt box; the daemon runs
them when a prompt's first text block starts with `/<name>` (followed by a space, a newline or
nothing). Anything else that starts with a slash (`/usr/bin`, `/foo`) goes to the model as
ordinary text.

Two kinds:
- commands answered by the daemon itself, without a model call (`/compact` summarises with
  one): `/compact`, `/model`, `/approvals`, `/fork`, `/history`, `/undo`, `/rewind`
  (engine/slash_rewind.py). Their answer is agent text,
  the prompt ends `end_turn`, and nothing of them enters the model's history (settings
  changes are persisted as usual);
- commands that are a normal turn with a built-in prompt (`/init`, `/review`; the texts are
  `prompts/init.md` and `prompts/review.md`): the expanded prompt is the user message
  (stored, replayed, seen by the model), and every tool call goes through the usual
  approvals and sandbox.

Besides Cody's own, a session runs the custom commands and skills it found
(extensions/discovery.py): `custom` calls, expanded into a normal turn by
engine/custom_commands.py. A built-in always wins a name (discovery leaves such a file out,
with a warning).

Another kind comes from the session's MCP servers: each prompt a server offers is the command
`/mcp:<server>:<prompt> [args]` (tools/mcp/prompts.py), advertised with the others once the
server is ready (and again when its prompts change); running one asks the server for the
prompt and runs it as a normal turn (engine/mcp_session.py). A prompt that starts with
`/mcp:` is always taken for one: an unknown one is answered with the session's MCP prompts.

A command's mistake (an unknown model, a bad number) is answered as text, like the rest of
its output: a chat user reads it where they typed. Only a busy session or a failed model call
is a JSON-RPC error, as for any prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from cody_protocol.content import ContentBlock, TextContent

from ..extensions.commands import CustomCommand
from ..tools.mcp.prompts import PREFIX as MCP_PREFIX
from ..tools.mcp.prompts import McpPromptCommand
from .events import CommandsAvailable
from .prompt_files import prompt

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "BUILTIN_NAMES",
    "COMMANDS",
    "CommandCall",
    "McpCommandCall",
    "SlashCommand",
    "commands_event",
    "parse_command",
    "parse_mcp_command",
    "session_commands",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SlashCommand:
    name: str
    description: str
    hint: str | None = None
    """What may follow the name (shown by clients while the input is empty)."""
    kind: Literal["local", "turn", "custom"] = "local"
    """`local`: answered by the daemon; `turn`: a model turn with a built-in prompt;
    `custom`: a custom command or skill (`CommandCall.custom`)."""


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand(
        name="compact",
        description="Summarise the conversation so far to free context "
        "(the session file keeps everything)",
    ),
    SlashCommand(
        name="model",
        description="Show the providers and models, or switch: /model MODEL, "
        "/model PROVIDER, /model PROVIDER MODEL",
        hint="model, or provider and model",
    ),
    SlashCommand(
        name="approvals",
        description="Show or set how much Cody may do unasked: a mode (read-only, auto, "
        "full-access) or an approval policy (untrusted, on-request, on-failure, never)",
        hint="mode or approval policy",
    ),
    SlashCommand(
        name="fork",
        description="Continue in a copy of this session (/fork N: up to user message N, "
        "0 = the first)",
        hint="user message number",
    ),
    SlashCommand(
        name="history",
        description="Show this session's conversation again (/history N: the last N turns)",
        hint="number of turns",
    ),
    SlashCommand(
        name="undo",
        description="Undo the last turn: its file changes (also what commands changed) and "
        "its messages (a codex/claude session: its files)",
    ),
    SlashCommand(
        name="rewind",
        description="List the checkpoints, or go back to one: /rewind N [files|conversation|"
        "both] [force]",
        hint="checkpoint number, then files, conversation or both",
    ),
    SlashCommand(
        name="init",
        description="Write an AGENTS.md that tells coding agents how this project works",
        hint="optional instructions",
        kind="turn",
    ),
    SlashCommand(
        name="review",
        description="Review the working tree's uncommitted changes and report problems",
        hint="optional focus",
        kind="turn",
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandCall:
    command: SlashCommand
    argument: str
    """The text after the name (stripped; may be empty)."""
    rest: tuple[ContentBlock, ...] = ()
    """The prompt's other blocks (resources the user attached), kept for `turn` commands."""
    custom: CustomCommand | None = None
    """The file a `custom` call runs."""

    def turn_prompt(self) -> list[ContentBlock]:
        """The prompt a `turn` command runs: its built-in text, the user's words, the rest."""
        text = prompt(self.command.name)  # prompts/init.md, prompts/review.md
        if self.argument:
            text += f"\n\nThe user adds: {self.argument}"
        return [TextContent(text=text), *self.rest]


@dataclass(frozen=True, slots=True, kw_only=True)
class McpCommandCall:
    """`/mcp:<server>:<prompt> args`: an MCP prompt to run (resolved by the session)."""

    name: str
    """The command's name, `mcp:<server>:<prompt>`."""
    argument: str
    rest: tuple[ContentBlock, ...] = ()


_BY_NAME = {command.name: command for command in COMMANDS}
BUILTIN_NAMES: frozenset[str] = frozenset(_BY_NAME)
_NO_CUSTOM: Mapping[str, CustomCommand] = MappingProxyType({})


def _split(blocks: list[ContentBlock]) -> tuple[str, str] | None:
    """(name, argument) of a prompt starting with `/<name>`, else None."""
    if not blocks or not isinstance(blocks[0], TextContent):
        return None
    text = blocks[0].text.lstrip()
    if not text.startswith("/"):
        return None
    head, _, argument = text[1:].partition(" ")
    name, newline, after = head.partition("\n")
    if newline:
        argument = f"{after} {argument}" if argument else after
    return name, argument.strip()


def parse_command(
    blocks: list[ContentBlock], custom: Mapping[str, CustomCommand] = _NO_CUSTOM
) -> CommandCall | None:
    """The command a prompt runs (a built-in, else one of the session's `custom` ones), or
    None when it is an ordinary prompt."""
    split = _split(blocks)
    if split is None:
        return None
    name, argument = split
    command = _BY_NAME.get(name)
    found = custom.get(name) if command is None else None
    if found is not None:
        command = _custom_entry(found)
    if command is None:
        return None
    return CommandCall(command=command, argument=argument, rest=tuple(blocks[1:]), custom=found)


def parse_mcp_command(blocks: list[ContentBlock]) -> McpCommandCall | None:
    """The MCP prompt a prompt runs (`/mcp:...`), or None."""
    split = _split(blocks)
    if split is None or not split[0].startswith(MCP_PREFIX):
        return None
    return McpCommandCall(name=split[0], argument=split[1], rest=tuple(blocks[1:]))


def _custom_entry(custom: CustomCommand) -> SlashCommand:
    what = f"{custom.scope} skill" if custom.skill else custom.scope
    return SlashCommand(
        name=custom.name,
        description=f"{custom.description} ({what})",
        hint=custom.hint,
        kind="custom",
    )


def commands_event(
    custom: Mapping[str, CustomCommand] = _NO_CUSTOM, mcp: Sequence[McpPromptCommand] = ()
) -> CommandsAvailable:
    """What to advertise after a session is created, loaded, resumed or forked, and when its
    MCP servers' prompts change: Cody's commands, the session's custom commands and skills,
    then its MCP prompts."""
    entries = [*COMMANDS, *map(_custom_entry, custom.values())]
    own = [(c.name, c.description, c.hint) for c in entries]
    return CommandsAvailable(tuple([*own, *((c.name, c.description, c.hint) for c in mcp)]))


def session_commands(session: Session) -> CommandsAvailable:
    """`commands_event` for a session: its custom commands and the prompts of its MCP
    servers ready now."""
    mcp = session.mcp.prompt_commands() if session.mcp is not None else ()
    return commands_event(session.extensions.commands, mcp)
