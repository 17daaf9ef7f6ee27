"""The chat's turns on a terminal: one at a time on screen, with the input line below them.

While a turn runs the input line stays up (live_input.py): Enter steers the turn
(`ClientSession.steer`; when the turn has just ended, -32011, the message is queued
instead), Tab queues a prompt (`session/prompt` with `_meta.cody.queue`, sent at once so the
daemon keeps the order). Queued prompts run here one after the other, each shown with its
text as it starts; `session/cancel` (Ctrl-C) ends the turn and the daemon answers every
queued prompt `cancelled`, which is said once per prompt dropped. An approval (or an MCP
server's question) takes the line down while it asks. At a turn's end (and at an approval) the terminal is notified when the
user is probably elsewhere (notifications.py).

Without a terminal (prompts read from a pipe) turns run one by one, as before: there is no
line to type into.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol.mcp import McpElicitParams, McpElicitResult
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.prompt import PromptResult
from cody_protocol.updates import SessionUpdate

from .errors import RemoteError, SessionBusy
from .headless import run_turn
from .inert import one_line
from .live_input import TurnInput
from .wording import for_terminal

if TYPE_CHECKING:
    from .chat import Chat
    from .session import PromptRun

__all__ = ["ChatTurns"]

Content = str | list[dict[str, Any]]


class ChatTurns:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.live: TurnInput | None = None
        self.draft = ""
        """Text typed during the last turn and not sent (the next prompt starts with it)."""
        self._queued: deque[tuple[PromptRun, str, _Held]] = deque()
        self._started = time.monotonic()

    # -- a turn and the prompts queued behind it ------------------------------------------

    async def run(self, content: Content, label: str) -> None:
        chat = self.chat
        if not chat.interactive:
            await self._plain(content)
            return
        run: PromptRun | None = chat.session.prompt(content, on_update=chat.renderer.on_update)
        while run is not None:
            result = await self._one(run)
            if result is not None:
                chat.renderer.turn_finished(result, model=chat.session.option("model"))
                chat.notifier.turn_ended(result.stop_reason, time.monotonic() - self._started)
            run = self._next(cancelled=result is not None and result.stop_reason == "cancelled")

    def _next(self, *, cancelled: bool) -> PromptRun | None:
        """The queued prompt to show next (after a cancel: the dropped ones are said)."""
        while self._queued:
            run, label, held = self._queued.popleft()
            if cancelled:
                self.chat.renderer.line(
                    self.chat.renderer.style.dim(f"(dropped the queued prompt: {one_line(label)})")
                )
                continue
            self.chat.renderer.line(self.chat.renderer.style.bold("› ") + one_line(label))
            held.release()
            return run
        return None

    async def _one(self, run: PromptRun) -> PromptResult | None:
        """Follow one run with the input line up; its result (None: it failed, said)."""
        chat = self.chat
        loop = asyncio.get_running_loop()
        run.start()
        task = asyncio.ensure_future(run)
        self._started = time.monotonic()
        presses = 0

        def interrupt() -> None:
            nonlocal presses
            presses += 1
            if presses == 1:
                chat.interrupted[:] = [True]
                chat.session.cancel()
                chat.renderer.line("^C cancelling the turn (press Ctrl-C again to quit)")
            else:
                task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, interrupt)
        live = TurnInput(
            on_steer=self._steer,
            on_queue=self._queue,
            on_interrupt=interrupt,
            toolbar=lambda: (
                "working · Enter steers · Tab queues · Ctrl-C interrupts · " + chat.toolbar()
            ),
            completer=chat.completer,
            bindings=chat.focus_bindings,
            streams=(sys.stdout, sys.stderr),
        )
        try:
            self.live = live
            showing = asyncio.ensure_future(live.run())
            try:
                await asyncio.wait({task})
            finally:
                self.draft = await live.stop()
                await asyncio.wait({showing})
                self.live = None
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGINT, chat.between_turns_interrupt)
        if task.cancelled():
            raise KeyboardInterrupt
        try:
            return task.result()
        except RemoteError as exc:
            chat.renderer.line(chat.renderer.style.red(f"error: {for_terminal(exc.message)}"))
            return None

    async def _plain(self, content: Content) -> None:
        chat = self.chat
        try:
            result = await run_turn(
                chat.session,
                content,
                chat.renderer.on_update,
                chat.spinner,
                interrupted=chat.interrupted,
            )
        except RemoteError as exc:
            chat.renderer.line(chat.renderer.style.red(f"error: {for_terminal(exc.message)}"))
            return
        chat.renderer.turn_finished(result, model=chat.session.option("model"))

    # -- the input line's keys ------------------------------------------------------------

    async def _steer(self, text: str) -> None:
        chat = self.chat
        content = chat.content_of(text)
        if content is None:
            return
        try:
            await chat.session.steer(content)
        except SessionBusy:  # the turn ended meanwhile: it becomes the next prompt
            await self._queue(text, content)
            return
        except RemoteError as exc:
            chat.renderer.line(chat.renderer.style.red(f"error: {for_terminal(exc.message)}"))
            return
        chat.renderer.line(
            chat.renderer.style.dim("(sent to the running turn: the model reads it next)")
        )

    async def _queue(self, text: str, content: Content | None = None) -> None:
        chat = self.chat
        content = content if content is not None else chat.content_of(text)
        if content is None:
            return
        held = _Held(chat.renderer.on_update)
        run = chat.session.prompt(content, on_update=held, queue=True)
        run.start()
        self._queued.append((run, text, held))
        chat.renderer.line(chat.renderer.style.dim(f"(queued: {one_line(text)})"))

    # -- approvals ------------------------------------------------------------------------

    async def approve(
        self, request: RequestPermissionParams, ask: Callable[[RequestPermissionParams], Any]
    ) -> Any:
        """Ask with the input line down (it comes back with what was typed)."""
        seconds = time.monotonic() - self._started
        async with self._input_down():
            self.chat.notifier.approval_requested(request.tool_call.title, seconds)
            return await ask(request)

    async def elicit(
        self, request: McpElicitParams, ask: Callable[[McpElicitParams], Awaitable[McpElicitResult]]
    ) -> McpElicitResult:
        """An MCP server's question (`_cody/mcp/elicit`), asked as an approval is: with the
        input line down, so one prompt has the keys and the question shows whole."""
        async with self._input_down():
            return await ask(request)

    @contextlib.asynccontextmanager
    async def _input_down(self) -> AsyncIterator[None]:
        live = self.live
        if live is None:
            yield
            return
        async with live.paused():
            yield


class _Held:
    """A queued turn's updates, held until the chat shows that turn (the one before it
    may still be finishing on screen), then passed on as they come."""

    def __init__(self, show: Callable[[SessionUpdate], None]) -> None:
        self._show = show
        self._held: list[SessionUpdate] | None = []

    def __call__(self, update: SessionUpdate) -> None:
        if self._held is None:
            self._show(update)
        else:
            self._held.append(update)

    def release(self) -> None:
        held, self._held = self._held or [], None
        for update in held:
            self._show(update)
