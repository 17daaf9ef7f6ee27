"""Streaming an assistant message as rendered markdown (rich), for the interactive chat.

The text of the current message is re-rendered in place (`rich.live.Live`, 10 fps) while it
streams; `end()` leaves the final rendering on screen. Only used on a terminal; rich is
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

__all__ = ["MarkdownStream", "render_diff"]


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

            self._console = Console(file=self._stream, highlight=False, soft_wrap=False)
        return self._console

    def add(self, text: str) -> None:
        from rich.markdown import Markdown

        self._text += text
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                Markdown(self._text),
                console=self.console,
                refresh_per_second=10,
                vertical_overflow="visible",
                transient=False,
            )
            self._live.start()
        else:
            self._live.update(Markdown(self._text))

    def end(self) -> None:
        if self._live is None:
            return
        from rich.markdown import Markdown

        self._live.update(Markdown(self._text), refresh=True)
        self._live.stop()
        self._live = None
        self._text = ""


def render_diff(stream: TextIO, diff_text: str) -> None:
    """Print a unified diff with syntax highlighting."""
    from rich.console import Console
    from rich.syntax import Syntax

    Console(file=stream, highlight=False).print(
        Syntax(diff_text, "diff", theme="ansi_dark", word_wrap=True)
    )
