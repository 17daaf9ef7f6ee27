"""Streaming an assistant message as rendered markdown (rich), for the interactive chat.

The text of the current message is re-rendered in place (`rich.live.Live`, 10 fps) while it
streams; `end()` leaves the final rendering on screen. Only used on a terminal; rich is
imported on first use.

Underscores outside code are shown as typed: in a coding agent's answers `__init__.py`,
`__pycache__/` and `_private` are names, not emphasis (CommonMark would make `__init__`
bold). `*` and `**` still emphasise.

rich writes its own escape sequences, so it gets the raw stream behind inert.py's gate and
only text made inert (rich itself drops BEL but passes ESC on). Links are shown with their
address (no OSC 8 hyperlink whose target the text hides), and rich does not take over
sys.stdout/sys.stderr while it draws (its proxy would write them past the gate).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from .inert import inert, raw_stream

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.markdown import Markdown

__all__ = ["MarkdownStream", "literal_underscores"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)|<[a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^<>\s]*>")


def literal_underscores(text: str) -> str:
    """`text` with every `_` outside code (fences, code spans, autolinks) escaped as `\\_`."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
            out.append(line)
            continue
        if marker:
            fence = marker.group(1)
            out.append(line)
            continue
        pieces: list[str] = []
        last = 0
        for span in _CODE_SPAN.finditer(line):
            pieces.append(_escape(line[last : span.start()]))
            pieces.append(span.group(0))
            last = span.end()
        pieces.append(_escape(line[last:]))
        out.append("".join(pieces))
    return "".join(out)


def _escape(text: str) -> str:
    return re.sub(r"(?<!\\)_", r"\\_", text)


class MarkdownStream:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._console: Console | None = None
        self._live: Live | None = None
        self._text = ""

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=raw_stream(self._stream), highlight=False, soft_wrap=False)
        return self._console

    def _rendering(self) -> Markdown:
        from rich.markdown import Markdown

        return Markdown(literal_underscores(inert(self._text)), hyperlinks=False)

    def add(self, text: str) -> None:
        self._text += text
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                self._rendering(),
                console=self.console,
                refresh_per_second=10,
                vertical_overflow="visible",
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        else:
            self._live.update(self._rendering())

    def end(self) -> bool:
        """Leave the final rendering on screen; False when nothing was being rendered."""
        if self._live is None:
            return False
        self._live.update(self._rendering(), refresh=True)
        self._live.stop()
        self._live = None
        self._text = ""
        return True
