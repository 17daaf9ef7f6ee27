"""Telling a user in another window that Cody needs them: the bell and an OSC 9 notification.

The chat calls `TerminalNotifier` when a turn ends and when an approval waits (Codex's
`tui.notifications`: `agent-turn-complete`, `approval-requested`). It notifies when the
terminal window is not focused, or, for a turn's end, when the turn took longer than
`LONG_TURN_S` (the user has probably looked away). Focus comes from the terminal's focus
reports (`\\x1b[?1004h`: the terminal sends `\\x1b[I` / `\\x1b[O`), which the chat's prompts
read as two otherwise unused keys (`enable_focus_reports`); a terminal without them counts
as focused. `--no-notify` turns it all off.

What is sent is inert.notification's: BEL, then `\\x1b]9;<text>\\x07` with the text on one
line and inert (a session title cannot end the sequence or start another).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .inert import control, notification

if TYPE_CHECKING:
    from prompt_toolkit.key_binding import KeyBindings

__all__ = ["LONG_TURN_S", "TerminalNotifier", "enable_focus_reports"]

LONG_TURN_S = 5.0
"""A turn at least this long ends with a notification even in a focused window."""

_FOCUS_IN, _FOCUS_OUT = "\x1b[I", "\x1b[O"


def enable_focus_reports(bindings: KeyBindings, notifier: TerminalNotifier) -> None:
    """Make prompt_toolkit read the terminal's focus reports (as keys F19 and F20, which
    no keyboard sends) and keep `notifier.focused` up to date from `bindings`."""
    from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
    from prompt_toolkit.key_binding import KeyPressEvent
    from prompt_toolkit.keys import Keys

    ANSI_SEQUENCES[_FOCUS_IN] = Keys.F19
    ANSI_SEQUENCES[_FOCUS_OUT] = Keys.F20

    @bindings.add(Keys.F19, eager=True)
    def _focus_in(event: KeyPressEvent) -> None:
        notifier.focused = True

    @bindings.add(Keys.F20, eager=True)
    def _focus_out(event: KeyPressEvent) -> None:
        notifier.focused = False


class TerminalNotifier:
    def __init__(self, stream: TextIO, *, enabled: bool = True) -> None:
        self._stream = stream
        self.enabled = enabled and stream.isatty()
        self.focused = True
        self.sent: list[str] = []
        """What was notified (for a status line and tests)."""

    def start(self) -> None:
        """Ask the terminal for focus reports."""
        if self.enabled:
            self._write(control("\x1b[?1004h"))

    def stop(self) -> None:
        if self.enabled:
            self._write(control("\x1b[?1004l"))

    def turn_ended(self, stop_reason: str, seconds: float) -> None:
        """A turn of `seconds` ended."""
        if self.enabled and (not self.focused or seconds >= LONG_TURN_S):
            self._notify(f"Cody: turn ended ({stop_reason})")

    def approval_requested(self, title: str, seconds: float) -> None:
        """An approval waits, `seconds` into its turn."""
        if self.enabled and (not self.focused or seconds >= LONG_TURN_S):
            self._notify(f"Cody needs your approval: {title}")

    def _notify(self, text: str) -> None:
        self.sent.append(text)
        self._write(notification(text))

    def _write(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()
