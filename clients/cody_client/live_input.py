"""The chat's input line while a turn runs: Enter steers it, Tab queues a prompt after it.

Codex's keys: typing while the model works and pressing Enter sends the message into the
running turn (`_cody/session/steer`: the model reads it at its next step); Tab queues it as
the next prompt instead (`session/prompt` with `_meta.cody.queue`); when completions are
shown, Tab moves through them as usual. Ctrl-C interrupts the turn (a second one quits),
as the SIGINT handler does when no prompt is up. Ctrl-D does nothing here.

While the line is up, the turn's output prints above it (inert.above_prompt on `streams`).
An approval (or any other prompt of the chat) needs the terminal: `paused()` takes the line
down, keeping what was typed (output then goes straight to the terminal again, in order),
and puts it back afterwards.

Invariants: at most one prompt_toolkit application runs at a time; `stop()` ends the line
and returns the text typed but not sent (the chat's next prompt starts with it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from .inert import above_prompt

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer
    from prompt_toolkit.key_binding import KeyBindings

__all__ = ["TurnInput"]

_PAUSE = object()
_STOP = object()


class TurnInput:
    def __init__(
        self,
        *,
        on_steer: Callable[[str], Coroutine[Any, Any, None]],
        on_queue: Callable[[str], Coroutine[Any, Any, None]],
        on_interrupt: Callable[[], None],
        toolbar: Callable[[], str],
        completer: Completer | None = None,
        bindings: KeyBindings | None = None,
        streams: Sequence[TextIO] = (),
    ) -> None:
        self._streams = tuple(streams)
        self._on_steer = on_steer
        self._on_queue = on_queue
        self._on_interrupt = on_interrupt
        self._toolbar = toolbar
        self._completer = completer
        self._extra = bindings
        self._session: Any = None
        self._resume = asyncio.Event()
        self._resume.set()
        self._stopped = False
        self._draft = ""
        self._app_done: asyncio.Event = asyncio.Event()
        self._app_done.set()
        self._sending: set[asyncio.Task[None]] = set()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _prompt_session(self) -> Any:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.filters import has_completions
        from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings

        bindings = KeyBindings()

        @bindings.add("enter")
        def _steer(event: KeyPressEvent) -> None:
            self._send(event, self._on_steer)

        @bindings.add("tab", filter=~has_completions)
        def _queue(event: KeyPressEvent) -> None:
            self._send(event, self._on_queue)

        @bindings.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @bindings.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            self._on_interrupt()

        @bindings.add("c-d")
        def _nothing(event: KeyPressEvent) -> None:
            pass

        merged = merge_key_bindings([bindings, self._extra]) if self._extra else bindings
        return PromptSession(
            bottom_toolbar=self._toolbar,
            key_bindings=merged,
            completer=self._completer,
            complete_while_typing=True,
            erase_when_done=True,
        )

    def _send(self, event: Any, action: Callable[[str], Coroutine[Any, Any, None]]) -> None:
        typed = event.current_buffer
        text = typed.text
        if not text.strip():
            return
        typed.reset(append_to_history=True)
        task = asyncio.get_running_loop().create_task(action(text))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def run(self) -> None:
        """Show the line until `stop()`; between `paused()` blocks it is down."""
        if self._session is None:
            self._session = self._prompt_session()
        while True:
            await self._resume.wait()
            if self.stopped:
                break
            self._app_done.clear()
            try:
                async with above_prompt(*self._streams):
                    result = await self._session.prompt_async(
                        "› ", default=self._draft, handle_sigint=False
                    )
            except (EOFError, KeyboardInterrupt):
                result = None
            finally:
                self._app_done.set()
            if result in (_PAUSE, _STOP):
                continue
            self._draft = ""

    async def _take_down(self, reason: object) -> None:
        """Exit the running prompt (also one still starting) and wait until it is gone."""
        while not self._app_done.is_set():
            app = getattr(self._session, "app", None)
            if app is not None and app.is_running and not app.future.done():
                self._draft = app.current_buffer.text
                app.exit(result=reason)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._app_done.wait(), 0.05)

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """The line is down (what was typed is kept) for the block."""
        self._resume.clear()
        await self._take_down(_PAUSE)
        try:
            yield
        finally:
            self._resume.set()

    async def stop(self) -> str:
        """End the line; the text typed and not sent."""
        self._stopped = True
        self._resume.set()
        await self._take_down(_STOP)
        if self._sending:
            await asyncio.wait(self._sending)
        return self._draft
