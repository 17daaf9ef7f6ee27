"""The chat's input line: slash-command completion and lines that fit the terminal.

- `SlashCompleter` completes the first word of a line that starts with `/`: the terminal's own
  commands and the ones the daemon advertises (`available_commands_update`). A name the daemon
  sends is offered only when it is a plain word (letters, digits, `-_.:`), and its description
  goes through `one_line`, so an advertised command cannot put a control sequence on screen.
- `fit` joins status parts with ` · ` within a width, dropping whole parts from the end (the
  first, cut with `…` if even it is too wide), so a bar never ends in half a word.
- While a turn runs, the live input line (live_input.py) has the terminal: keys typed then
  are edited there, never echoed raw.

Imported only by an interactive chat (prompt_toolkit is never loaded by `exec`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from .inert import one_line

__all__ = ["SlashCompleter", "fit", "terminal_width"]

_PLAIN_NAME = re.compile(r"/[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


class SlashCompleter(Completer):
    """Completes `/name` at the start of the input from `commands()`: (name, description)."""

    def __init__(self, commands: Callable[[], Iterable[tuple[str, str]]]) -> None:
        self._commands = commands

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        typed = document.text_before_cursor
        if not typed.startswith("/") or any(ch.isspace() for ch in typed):
            return
        seen: set[str] = set()
        for name, description in self._commands():
            if name in seen or not _PLAIN_NAME.fullmatch(name) or not name.startswith(typed):
                continue
            seen.add(name)
            yield Completion(
                name, start_position=-len(typed), display_meta=one_line(description)[:60]
            )


def fit(parts: list[str], width: int, separator: str = " · ") -> str:
    """`parts` joined, as many whole ones from the start as fit in `width` columns."""
    shown: list[str] = []
    for part in parts:
        if len(separator.join([*shown, part])) > width:
            break
        shown.append(part)
    if shown:
        return separator.join(shown)
    first = parts[0] if parts else ""
    return first if len(first) <= width else first[: max(width - 1, 0)] + "…"


def terminal_width(default: int = 80) -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return default
