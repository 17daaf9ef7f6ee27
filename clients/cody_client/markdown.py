"""Streaming an assistant message as rendered markdown (rich), for the interactive chat.

The message is rendered line by line: the whole text so far is rendered (at each newline
it receives, or every `STEP` characters) and the rendered lines not printed yet are
printed, all but the last one, which the next text may still change (a paragraph grows,
a soft line break joins the next line); `end()` prints the rest. Nothing printed is ever
redrawn, so the chat's input line can stay below the text while it streams
(inert.above_prompt), and long paragraphs still appear as they are written (wrapped at the
terminal's width). Only used on a terminal; rich is imported on first use.

Underscores outside code are shown as typed: in a coding agent's answers `__init__.py`,
`__pycache__/` and `_private` are names, not emphasis (CommonMark would make `__init__`
bold). `*` and `**` still emphasise.

rich writes its own escape sequences, so it gets only text made inert (rich itself drops BEL
but passes ESC on), and what it renders goes to the raw stream behind inert.py's gate (the
one in place when the lines are printed). Links are shown with their address (no OSC 8
hyperlink whose target the text hides).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from .inert import inert, raw_stream

if TYPE_CHECKING:
    from rich.console import Console

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
    STEP = 80
    """Characters of text after which a line is rendered even without a newline."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._console: Console | None = None
        self._text = ""
        self._shown = 0
        self._rendered_at = 0

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=raw_stream(self._stream), highlight=False, soft_wrap=False)
        return self._console

    def add(self, text: str) -> None:
        self._text += text
        if "\n" in text or len(self._text) - self._rendered_at >= self.STEP:
            self._show(final=False)

    def end(self) -> bool:
        """Print the rest of the message; False when nothing of it was printed."""
        if self._text.strip():
            self._show(final=True)
        printed = self._shown > 0
        self._text, self._shown, self._rendered_at = "", 0, 0
        return printed

    def _show(self, *, final: bool) -> None:
        self._rendered_at = len(self._text)
        lines = self._render()
        upto = len(lines) if final else len(lines) - 1
        if upto <= self._shown:
            return
        out = raw_stream(self._stream)  # above the chat's input line while one is up
        out.write("\n".join(lines[self._shown : upto]) + "\n")
        out.flush()
        self._shown = upto

    def _render(self) -> list[str]:
        from rich.markdown import Markdown

        console = self.console
        with console.capture() as capture:
            console.print(Markdown(literal_underscores(inert(self._text)), hyperlinks=False))
        return capture.get().rstrip("\n").split("\n")
