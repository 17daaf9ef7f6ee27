"""Streaming an assistant message as rendered markdown (rich), for the interactive chat.

Nothing printed is ever redrawn, so the chat's input line can stay below the text while it
streams (inert.above_prompt). The message is cut into blocks at blank lines outside code
fences: a block is printed, rendered, once the blank line after it arrives; the block still
being written shows its rendered lines as they become final (at each newline, or every
`STEP` characters: all but its last rendered line, which more text may still change; a
paragraph grows, a soft line break joins the next line), except inside an open code fence,
whose block waits for its closing fence (a code block's rendering pads its last line).
`end()` prints the rest. Long paragraphs thus appear as they are written, wrapped at the
terminal's width. Only used on a terminal; rich is imported on first use.

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

__all__ = ["MarkdownStream", "complete_blocks", "literal_underscores"]

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
    """Characters of text after which the open block is rendered even without a newline."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._console: Console | None = None
        self._text = ""
        """The block being written (what follows the last complete one)."""
        self._shown = 0
        """Rendered lines of that block already printed."""
        self._rendered_at = 0
        self._printed = False

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=raw_stream(self._stream), highlight=False, soft_wrap=False)
        return self._console

    def add(self, text: str) -> None:
        self._text += text
        done, rest = complete_blocks(self._text)
        if done.strip():
            self._print(self._render(done), final=True)
            self._text, self._rendered_at = rest, 0
        if ("\n" in text or len(self._text) - self._rendered_at >= self.STEP) and not (
            _open_fence(self._text)
        ):
            self._rendered_at = len(self._text)
            if self._text.strip():
                self._print(self._render(self._text), final=False)

    def end(self) -> bool:
        """Print the rest of the message; False when nothing of it was printed."""
        if self._text.strip():
            self._print(self._render(self._text), final=True)
        printed = self._printed
        self._text, self._shown, self._rendered_at, self._printed = "", 0, 0, False
        return printed

    def _print(self, lines: list[str], *, final: bool) -> None:
        """Print the block's rendered `lines` not printed yet (all of them when `final`, else
        all but the last)."""
        upto = len(lines) if final else len(lines) - 1
        if upto > self._shown:
            out = raw_stream(self._stream)  # above the chat's input line while one is up
            separator = "\n" if self._shown == 0 and self._printed else ""
            out.write(separator + "\n".join(lines[self._shown : upto]) + "\n")
            out.flush()
            self._printed = True
            self._shown = upto
        if final:
            self._shown = 0

    def _render(self, text: str) -> list[str]:
        from rich.markdown import Markdown

        console = self.console
        with console.capture() as capture:
            console.print(Markdown(literal_underscores(inert(text.strip("\n"))), hyperlinks=False))
        return capture.get().rstrip("\n").split("\n")


def complete_blocks(text: str) -> tuple[str, str]:
    """(`text` up to its last blank line outside a code fence, the rest)."""
    fence: str | None = None
    cut = 0
    offset = 0
    for line in text.splitlines(keepends=True):
        offset += len(line)
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
        elif marker:
            fence = marker.group(1)
        elif not line.strip() and line.endswith("\n"):
            cut = offset
    return text[:cut], text[cut:]


def _open_fence(text: str) -> bool:
    """Whether `text` ends inside a code fence."""
    fence: str | None = None
    for line in text.splitlines():
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
        elif marker:
            fence = marker.group(1)
    return fence is not None
