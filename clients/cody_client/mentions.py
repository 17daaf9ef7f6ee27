"""`@path` completion in the chat's input line: the daemon's file search, offered as you type.

After an `@` the word typed so far is sent to `_cody/files/search` (the model's `fileSearch`:
fuzzy, ignore rules, `.git` skipped; daemon engine/file_mentions.py) and the best paths are
offered; choosing one writes `@path ` (a space inside a path as `\\ `). What a mention sends
along with the prompt is attachments.py's. Paths are shown inert (prompt_toolkit itself
shows control characters as `^X`; bidi controls would still reach the terminal).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Iterable
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from .inert import one_line

if TYPE_CHECKING:
    from .session import ClientSession

__all__ = ["MentionCompleter"]

_WORD = re.compile(r"(?:^|(?<=\s))@((?:[^\s\\]|\\ )*)$")
LIMIT = 12


class MentionCompleter(Completer):
    """Completes the `@word` before the cursor with the session's files."""

    def __init__(self, session: Callable[[], ClientSession]) -> None:
        self._session = session
        """The chat's current session (it changes with /resume and /fork)."""

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        return []  # only asynchronously: the paths come from the daemon

    async def get_completions_async(
        self, document: Document, complete_event: CompleteEvent
    ) -> AsyncGenerator[Completion, None]:
        match = _WORD.search(document.text_before_cursor)
        if match is None:
            return
        query = match.group(1).replace("\\ ", " ")
        session = self._session()
        try:
            raw = await session.client.connection.request(
                "_cody/files/search", {"sessionId": session.id, "query": query, "limit": LIMIT}
            )
        except Exception:
            return  # no completion is better than a broken prompt
        for path in raw.get("paths", []) if isinstance(raw, dict) else []:
            if not isinstance(path, str):
                continue
            yield Completion(
                "@" + path.replace(" ", "\\ ") + " ",
                start_position=-len(match.group(0)),
                display=one_line(path),
            )
