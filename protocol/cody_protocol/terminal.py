"""Live command output as a display-only terminal: the `_meta` keys Zed reads.

Zed (and codex-acp / the Claude ACP adapter, which write them) use three `_meta` keys on tool
call notifications, with snake_case fields, for a terminal the *agent* runs and the client
only displays (no `terminal/create`: the command never runs outside Cody's sandbox):

- on the `tool_call`: `terminal_info {terminal_id, cwd}` (the client creates the display),
  with `content: [{type: "terminal", terminalId}]`;
- on `tool_call_update`s: `terminal_output {terminal_id, data}`, only the new output;
- on the final `tool_call_update`: `terminal_exit {terminal_id, exit_code, signal}`.

A client opts in with `clientCapabilities._meta.terminal_output = true` (Zed does). Others get
the new output as text content in each throttled `tool_call_update` instead.
"""

from __future__ import annotations

from pydantic import ConfigDict

from ._base import WireModel

__all__ = [
    "TERMINAL_OUTPUT_CAPABILITY",
    "TerminalExitMeta",
    "TerminalInfoMeta",
    "TerminalOutputMeta",
]

TERMINAL_OUTPUT_CAPABILITY = "terminal_output"
"""The `clientCapabilities._meta` key a client sets to true to get the display terminal."""


class _SnakeCase(WireModel):
    """These keys are snake_case on the wire (the convention predates ACP's camelCase)."""

    model_config = ConfigDict(alias_generator=None)


class TerminalInfoMeta(_SnakeCase):
    terminal_id: str
    cwd: str | None = None


class TerminalOutputMeta(_SnakeCase):
    terminal_id: str
    data: str


class TerminalExitMeta(_SnakeCase):
    terminal_id: str
    exit_code: int | None = None
    signal: str | None = None
