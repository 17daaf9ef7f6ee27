"""Slash commands: ACP's `available_commands_update` (docs/protocol.md "Slash commands").

The daemon advertises its commands after `session/new`, `session/load` and `session/resume`;
a prompt whose first text block starts with `/<name>` runs that command (an unknown `/word`
goes to the model as ordinary text).
"""

from __future__ import annotations

from typing import Literal

from ._base import WireModel

__all__ = ["AvailableCommand", "AvailableCommandInput", "AvailableCommandsUpdate"]


class AvailableCommandInput(WireModel):
    """ACP's unstructured input: all text typed after the command name."""

    hint: str


class AvailableCommand(WireModel):
    name: str
    """The command's name, without the slash."""
    description: str
    input: AvailableCommandInput | None = None


class AvailableCommandsUpdate(WireModel):
    session_update: Literal["available_commands_update"] = "available_commands_update"
    available_commands: list[AvailableCommand]
