"""Text from elsewhere made inert for a terminal: the one gate of cody-client's output.

Nearly everything cody-client prints comes from something it does not control: the model
(text, thoughts, tool calls and titles), tools (command output, file contents, paths),
session and history files, the daemon's errors and log lines. A terminal acts on control
characters in such text: ESC starts sequences that move the cursor and erase (a command
shown as another one, issue 20.5), write the clipboard (OSC 52), set the window title
(OSC 0), make links (OSC 8); bidi controls reorder what is shown. None of it may reach the
terminal from such text.

The gate: `install()` (the first thing `cli.main` does) puts a `TerminalStream` in front of
`sys.stdout` and `sys.stderr`. It writes a plain `str` only after `inert()`, and a `Safe` as
it is. Only this module makes a `Safe`, and always around text that went through `inert()`
or `one_line()` first:

- `styled(sgr, text)`: the client's own colours (an SGR code of digits and `;`);
- `control(sequence)`: the client's own cursor controls (the spinner's `\\r`, erase line)
  and terminal modes (`\\x1b[?1004h`: focus reports);
- `notification(text)`: the bell and an OSC 9 desktop notification carrying `one_line(text)`;
- `json_document(text)`: JSON whose strings escape such characters as `\\uXXXX` (lossless).

While a prompt runs during a turn (the chat's input line: Enter steers, Tab queues),
`above_prompt(...)` points the gated streams at a writer that prints above the prompt
(prompt_toolkit's `run_in_terminal`): the text still passes the gate first, only whole lines
go up while the prompt is drawn, and everything is written in order.

`Safe + str`, `str + Safe` and `join()` make the `str` part inert; anything else (an
f-string, `%`, `str.join`) gives a plain `str`, which the stream makes inert whole: a renderer
that gets it wrong shows `␛[1m`, it never sends a sequence. Code that draws the screen itself
gets the raw stream: prompt_toolkit (through `buffer`; it shows control characters as `^[`
itself) and rich in markdown.py (given only inert text). tests/unit/test_inert.py fails when
any other module reaches past the gate.

`inert(text)`: no C0 control but `\\n` and `\\t`, no DEL, no C1 control, no bidi control
(U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), no line or paragraph separator
(U+2028, U+2029) and no lone surrogate is left; each is shown by a visible stand-in: the
control pictures U+2400-U+241F for C0 (`␛` for ESC, `␍` for a lone CR), `␡` for DEL,
`<U+XXXX>` for the others. `\\r\\n` becomes `\\n`. `one_line(text)` also shows `\\n` and `\\t`
(`␊`, `␉`): a title, a grant or a listing row stays one line and cannot fake another.
Both are idempotent.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TextIO, cast

__all__ = [
    "Safe",
    "TerminalStream",
    "above_prompt",
    "prompt_screen",
    "control",
    "guard",
    "inert",
    "install",
    "join",
    "json_document",
    "notification",
    "one_line",
    "raw_stream",
    "styled",
]

_UNSAFE = (
    r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    r"\ud800-\udfff"
)
"""Every character `inert` replaces (tab and newline are kept: they only move the cursor
forward or down)."""
_MULTI_LINE = re.compile(rf"\r\n|[{_UNSAFE}]")
_ONE_LINE = re.compile(rf"[\t\n{_UNSAFE}]")
_LINE_BREAKS = re.compile(r"[\t\n]")
_SGR = re.compile(r"[0-9;]+")
_CONTROL = re.compile(r"(?:\r|\x1b\[\??[0-9;]*[A-Za-z])+")
_IN_JSON = re.compile(rf"[{_UNSAFE}]")


class Safe(str):
    """Text fit for the terminal as it is. Made only by this module (see the docstring)."""

    __slots__ = ()

    def __add__(self, other: str) -> Safe:
        return Safe(str.__add__(self, inert(other)))

    def __radd__(self, other: str) -> Safe:
        return Safe(str.__add__(inert(other), self))


def _stand_in(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"<U+{code:04X}>"


def inert(text: str) -> Safe:
    """`text` with every character a terminal acts on shown instead (newlines and tabs kept)."""
    if isinstance(text, Safe):
        return text
    return Safe(_MULTI_LINE.sub(_stand_in, text))


def one_line(text: str) -> Safe:
    """`text` inert and on one line: newlines and tabs are shown (`␊`, `␉`) as well."""
    if isinstance(text, Safe):
        return Safe(_LINE_BREAKS.sub(_stand_in, text))
    return Safe(_ONE_LINE.sub(_stand_in, text))


def join(separator: str, parts: Iterable[str]) -> Safe:
    """`separator.join(parts)`, every plain part made inert first (styled parts kept)."""
    return Safe(inert(separator).join(inert(part) for part in parts))


def styled(sgr: str, text: str) -> Safe:
    """`text` (made inert) in the client's own colour or weight: `sgr` is `1`, `2`, `31`..."""
    if _SGR.fullmatch(sgr) is None:
        raise ValueError(f"not an SGR code: {sgr!r}")
    return Safe(f"\x1b[{sgr}m{inert(text)}\x1b[0m")


def control(sequence: str) -> Safe:
    """The client's own cursor control: carriage returns and CSI sequences only (private
    modes such as `\x1b[?1004h` included)."""
    if _CONTROL.fullmatch(sequence) is None:
        raise ValueError(f"not a cursor control: {sequence!r}")
    return Safe(sequence)


def notification(text: str) -> Safe:
    """The bell, then an OSC 9 desktop notification showing `text` on one line (iTerm2,
    kitty, WezTerm, Ghostty and Windows Terminal show it; tmux passes the bell on). `text`
    is inert, so it cannot end the sequence early or start another."""
    return Safe(f"\x07\x1b]9;{one_line(text)}\x07")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_document(text: str) -> Safe:
    """A JSON document (from a JSON encoder) with every character `inert` replaces inside its
    strings written as a `\\uXXXX` escape: the same JSON value, safe on a terminal. (Outside
    strings an encoder writes only ASCII punctuation, digits, letters and whitespace.)"""
    return Safe(_IN_JSON.sub(_json_escape, text))


class TerminalStream:
    """A text stream behind the gate: a plain `str` is written `inert`, a `Safe` as it is."""

    def __init__(self, unguarded: TextIO) -> None:
        self.unguarded = unguarded

    def write(self, text: str) -> int:
        return self.unguarded.write(inert(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.unguarded.flush()

    def isatty(self) -> bool:
        return self.unguarded.isatty()

    def fileno(self) -> int:
        return self.unguarded.fileno()

    def __getattr__(self, name: str) -> Any:
        # encoding, errors, buffer (prompt_toolkit writes its own screen there), closed...
        return getattr(self.unguarded, name)


def guard(stream: TextIO) -> TextIO:
    """`stream` behind the gate (itself when it already is)."""
    if isinstance(stream, TerminalStream):
        return cast(TextIO, stream)
    return cast(TextIO, TerminalStream(stream))


def raw_stream(stream: TextIO) -> TextIO:
    """The stream behind the gate, for a renderer that writes its own escapes (rich)."""
    return stream.unguarded if isinstance(stream, TerminalStream) else stream


def install() -> None:
    """Put the gate in front of `sys.stdout` and `sys.stderr` (idempotent)."""
    sys.stdout = guard(sys.stdout)
    sys.stderr = guard(sys.stderr)


class _AbovePrompt:
    """The screen above a running prompt_toolkit prompt, written from the event loop in the
    order written: while a prompt is up, whole lines go out through `run_in_terminal` (the
    prompt is erased, the lines written, the prompt drawn again); otherwise everything goes
    straight to the terminal. One task writes, so nothing overtakes anything."""

    BATCH_S = 0.02

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw
        self._chunks: list[str] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.get_running_loop().create_task(self._drain())

    def write(self, text: str) -> int:
        self._chunks.append(text)
        self._wake.set()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self._raw.isatty()

    def fileno(self) -> int:
        return self._raw.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, errors...
        return getattr(self._raw, name)

    def _write_raw(self, text: str) -> None:
        self._raw.write(text)
        self._raw.flush()

    async def _drain(self) -> None:
        from prompt_toolkit.application import get_app_or_none, run_in_terminal

        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._closing:
                await asyncio.sleep(self.BATCH_S)  # one redraw for a burst of writes
            text = "".join(self._chunks)
            self._chunks.clear()
            app = get_app_or_none()
            if app is not None and app.is_running and not self._closing:
                whole, newline, rest = text.rpartition("\n")
                if rest:
                    self._chunks.insert(0, rest)
                if newline:
                    await run_in_terminal(
                        lambda lines=whole + newline: self._write_raw(lines),  # type: ignore[misc]
                        in_executor=False,
                    )
            elif text:
                self._write_raw(text)
            if self._closing and not self._chunks:
                return

    async def aclose(self) -> None:
        self._closing = True
        self._wake.set()
        await self._task


@asynccontextmanager
async def above_prompt(*streams: TextIO) -> AsyncIterator[None]:
    """For the block, the gated `streams` print above the running prompt_toolkit prompt
    (see the module docstring); what they hold is all written when the block ends."""
    gated = [stream for stream in streams if isinstance(stream, TerminalStream)]
    if not gated:
        yield
        return
    before = [stream.unguarded for stream in gated]
    screen = _AbovePrompt(before[0])
    for stream in gated:
        stream.unguarded = cast(TextIO, screen)
    try:
        yield
    finally:
        for stream, original in zip(gated, before, strict=True):
            stream.unguarded = original
        await screen.aclose()


@contextmanager
def prompt_screen() -> Iterator[None]:
    """For the block, prompt_toolkit draws on the terminal behind the gate (it writes its own
    escapes and shows control characters of text as `^[`), so `above_prompt` can point the
    gated streams at its proxy without the proxy writing back into them."""
    from prompt_toolkit.application.current import create_app_session
    from prompt_toolkit.output import create_output

    with create_app_session(output=create_output(stdout=raw_stream(sys.stdout))):
        yield
