"""Answering approval requests in a terminal, or by a fixed rule when there is none."""

from __future__ import annotations

import sys
from typing import Literal

from cody_protocol.permission import RequestPermissionParams

from .inert import one_line
from .terminal import Renderer

__all__ = ["CHOICES", "ApprovalMode", "TerminalApprover", "parse_choice"]

ApprovalMode = Literal["ask", "allow", "deny"]

CHOICES: dict[str, str] = {
    "y": "allow_once",
    "yes": "allow_once",
    "a": "allow_always",
    "n": "reject_once",
    "no": "reject_once",
    "r": "reject_always",
    "c": "cancelled",
}


KEYS = ("y", "a", "n", "r", "c")
"""Single keys that answer at once in a terminal."""


def parse_choice(text: str) -> str | None:
    return CHOICES.get(text.strip().lower())


class TerminalApprover:
    """Shows each request once, then asks (TTY) or answers by `mode` (no TTY / headless)."""

    def __init__(
        self,
        renderer: Renderer,
        mode: ApprovalMode,
        *,
        auto_note: str | None = None,
        show_requests: bool = False,
    ) -> None:
        """`show_requests`: print the whole request even when a rule answers it (the demo)."""
        self.renderer = renderer
        self.mode = mode
        self.auto_note = auto_note
        self.show_requests = show_requests
        self.interactive = mode == "ask" and sys.stdin.isatty()
        self._told = False

    async def __call__(self, request: RequestPermissionParams) -> str:
        if self.interactive:
            self.renderer.show_approval(request)
            return await self._ask()
        title = one_line(request.tool_call.title)
        if self.show_requests:
            self.renderer.show_approval(request)
        if self.mode == "allow":
            # A rule answers: one line, not the whole approval box.
            self.renderer.line(self.auto_note or f"  allowed by --approve allow: {title}")
            return "allow_once"
        if self.mode == "deny":
            self.renderer.line(f"  rejected by --approve deny: {title}")
        else:
            hint = "" if self._told else " (--approve allow runs such calls without asking)"
            self._told = True
            self.renderer.line(f"  rejected, no terminal to ask: {title}{hint}")
        return "reject_once"

    async def _ask(self) -> str:
        """One key answers (y/a/n/r/c, no Enter needed); Ctrl-C or Ctrl-D cancels the turn."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

        bindings = KeyBindings()
        for key in KEYS:

            @bindings.add(key)
            def _answer(event: KeyPressEvent, key: str = key) -> None:
                event.current_buffer.insert_text(key)
                event.app.exit(result=key)

        @bindings.add("c-c")
        @bindings.add("c-d")
        def _cancel(event: KeyPressEvent) -> None:
            event.app.exit(result="c")

        session: PromptSession[str] = PromptSession(key_bindings=bindings)
        while True:
            try:
                # handle_sigint=False: prompt_toolkit would otherwise replace the turn's SIGINT
                # handler and remove it on return, leaving Ctrl-C dead for the rest of the turn.
                # Ctrl-C at this prompt arrives as a key press and cancels the turn.
                answer = await session.prompt_async("  choice [y/a/n/r/c]: ", handle_sigint=False)
            except (KeyboardInterrupt, EOFError):
                return "cancelled"
            choice = parse_choice(answer)
            if choice is not None:
                return choice
            self.renderer.line("  please press y, a, n, r or c")
