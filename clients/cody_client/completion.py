"""Tab completion of slash commands in the chat's prompt (prompt_toolkit).

Only a word that starts the input with `/` and has no space yet is completed; the candidates
(the terminal's commands, the daemon's, the session's custom commands and skills) are read
each time, so a resumed session's commands are offered at once. Descriptions are shown inert
(extensions_view.short) by prompt_toolkit's own menu.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

__all__ = ["SlashCompleter"]


class SlashCompleter(Completer):
    def __init__(self, candidates: Callable[[], list[tuple[str, str]]]) -> None:
        self.candidates = candidates

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        typed = document.text_before_cursor
        if not typed.startswith("/") or any(char.isspace() for char in typed):
            return
        seen: set[str] = set()
        for name, description in self.candidates():
            if name.startswith(typed) and name not in seen:
                seen.add(name)
                yield Completion(name, start_position=-len(typed), display_meta=description)
