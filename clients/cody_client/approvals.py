"""Answering approval requests in a terminal, or by a fixed rule when there is none.

One key answers in a terminal: `y` allow once, `a` allow for the session, `p` always allow in
this project (only when the request offers it: the daemon then saves the rules its name
shows), `n` reject, `r` reject for the session, `c` cancel the turn.
"""

from __future__ import annotations

import sys
from typing import Literal

from cody_protocol.permission import ALLOW_PROJECT, RequestPermissionParams

from .inert import one_line
from .terminal import Renderer

__all__ = ["CHOICES", "ApprovalMode", "TerminalApprover", "offered_keys", "parse_choice"]

ApprovalMode = Literal["ask", "allow", "project", "deny"]

CHOICES: dict[str, str] = {
    "y": "allow_once",
    "yes": "allow_once",
    "a": "allow_always",
    "p": ALLOW_PROJECT,
    "n": "reject_once",
    "no": "reject_once",
    "r": "reject_always",
    "c": "cancelled",
}


KEYS = ("y", "a", "p", "n", "r", "c")
"""Single keys that answer at once in a terminal."""


def offers_project(request: RequestPermissionParams) -> bool:
    return any(option.option_id == ALLOW_PROJECT for option in request.options)


def offered_keys(request: RequestPermissionParams) -> tuple[str, ...]:
    """The keys that answer this request (`p` only when `allow_project` is offered)."""
    return tuple(key for key in KEYS if key != "p" or offers_project(request))


def parse_choice(text: str, keys: tuple[str, ...] = KEYS) -> str | None:
    text = text.strip().lower()
    if text[:1] not in keys:
        return None
    return CHOICES.get(text)


def automatic_answer(mode: ApprovalMode, request: RequestPermissionParams) -> str:
    """`--approve allow|project|deny`: `project` saves the offered rule, else allows once."""
    if mode == "project":
        return ALLOW_PROJECT if offers_project(request) else "allow_once"
    return "allow_once" if mode == "allow" else "reject_once"


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
            return await self._ask(offered_keys(request))
        title = one_line(request.tool_call.title)
        if self.show_requests:
            self.renderer.show_approval(request)
        if self.mode in ("allow", "project"):
            # A rule answers: one line, not the whole approval box.
            answer = automatic_answer(self.mode, request)
            note = self.auto_note or f"  allowed by --approve {self.mode}: {title}"
            if answer == ALLOW_PROJECT:
                note += " (rule saved for the project)"
            self.renderer.line(note)
            return answer
        if self.mode == "deny":
            self.renderer.line(f"  rejected by --approve deny: {title}")
        else:
            hint = "" if self._told else " (--approve allow runs such calls without asking)"
            self._told = True
            self.renderer.line(f"  rejected, no terminal to ask: {title}{hint}")
        return "reject_once"

    async def _ask(self, keys: tuple[str, ...]) -> str:
        """One key answers (y/a/p/n/r/c, no Enter needed); Ctrl-C or Ctrl-D cancels the turn."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

        bindings = KeyBindings()
        for key in keys:

            @bindings.add(key)
            def _answer(event: KeyPressEvent, key: str = key) -> None:
                event.current_buffer.insert_text(key)
                event.app.exit(result=key)

        @bindings.add("c-c")
        @bindings.add("c-d")
        def _cancel(event: KeyPressEvent) -> None:
            event.app.exit(result="c")

        listed = "/".join(keys)
        session: PromptSession[str] = PromptSession(key_bindings=bindings)
        while True:
            try:
                # handle_sigint=False: prompt_toolkit would otherwise replace the turn's SIGINT
                # handler and remove it on return, leaving Ctrl-C dead for the rest of the turn.
                # Ctrl-C at this prompt arrives as a key press and cancels the turn.
                answer = await session.prompt_async(f"  choice [{listed}]: ", handle_sigint=False)
            except (KeyboardInterrupt, EOFError):
                return "cancelled"
            choice = parse_choice(answer, keys)
            if choice is not None:
                return choice
            self.renderer.line(f"  please press {', '.join(keys[:-1])} or {keys[-1]}")
