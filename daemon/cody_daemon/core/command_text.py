"""How a command reads in an approval request: `$ ` before its first line, `> ` before each
further one (as a shell's continuation prompt).

Invariant: every line of the command starts with `$ ` or `> `, so a command holding a
newline cannot pass for the request's other lines (`cwd: ...`, a warning). The command is
split at `\\n` only; a client shows any other line break (CR, VT, FF, U+2028) escaped inside
its line (cody-client's inert.py, the editor plugins' own).
"""

from __future__ import annotations

__all__ = ["command_lines"]


def command_lines(command: str) -> list[str]:
    first, *rest = command.split("\n")
    return [f"$ {first}", *(f"> {line}" for line in rest)]
