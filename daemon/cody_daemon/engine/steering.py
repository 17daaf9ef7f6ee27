"""Messages that join a running turn (`_cody/session/steer`), and prompts queued behind it.

A native turn owns one `SteerInbox` while it runs (`Session.steering`). The turn takes what
arrived at its safe points (engine/turn.py): before each model call (so after the current
tool results), and at once while the model streams with no tool call yet (that stream is
ended and the next call sees the message). Each message taken becomes a user message of the
history, recorded in the session file with `steered: true` and echoed to the client.

`PromptQueue` holds the prompts sent with `_meta.cody.queue` while a turn runs: each waits
for the turn before it, in order.

Invariants:
- an inbox is closed, synchronously, when its turn decides to end (or ends any other way);
  `add` on a closed inbox raises `NoTurnRunning`, so a steer is either taken by the turn or
  refused, never dropped: the client then sends it as a prompt;
- what a cancelled or failed turn had not taken yet is still recorded (the turn's last
  act), so an accepted steer always reaches the history;
- a queued prompt is released only after the turn before it has answered: its release is
  scheduled with `call_soon` from that turn's cleanup, which runs before the answer's own
  callbacks are scheduled (rpc: pygls writes the answer from the handler task's done
  callback), so the earlier answer is on the wire before the next turn sends anything;
- `cancel_all` answers every waiting prompt `cancelled`, and `session/cancel` calls it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sized
from dataclasses import dataclass
from typing import Any, Literal

from ..core.history import ImagePart, MessageItem, user_message
from ..errors import NoTurnRunning
from ..ids import new_id

__all__ = [
    "STEERED",
    "PromptQueue",
    "Steer",
    "SteerInbox",
    "steered_message",
    "until_steered",
]

STEERED = "steered"
"""How a model call ended when a steered message ended its stream."""


@dataclass(frozen=True, slots=True)
class Steer:
    """One message for the running turn (already checked: images, audio)."""

    text: str
    images: tuple[ImagePart, ...] = ()
    client_content: list[dict[str, Any]] | None = None


def steered_message(steer: Steer) -> MessageItem:
    """The history item of a steered message (`steered: true` in the session file)."""
    item = user_message(new_id("msg_"), steer.text, steer.images)
    item.client_content = steer.client_content
    item.steered = True
    return item


class SteerInbox:
    """What arrived for one running turn and was not taken yet (see the module docstring)."""

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self._items: list[Steer] = []
        self._arrived = asyncio.Event()
        self.closed = False

    def add(self, steer: Steer) -> None:
        if self.closed:
            raise NoTurnRunning("The turn ended before the message could join it.")
        self._items.append(steer)
        self._arrived.set()

    @property
    def pending(self) -> bool:
        return bool(self._items)

    def take(self) -> list[Steer]:
        items, self._items = self._items, []
        self._arrived.clear()
        return items

    async def wait(self) -> None:
        """Return once a message is waiting."""
        await self._arrived.wait()

    def close(self) -> None:
        self.closed = True


async def until_steered(stream: asyncio.Future[str], inbox: SteerInbox, calls: Sized) -> str:
    """How the model call `stream` ended (its stop reason); `STEERED` when a message arrived
    in `inbox` while no tool call had (`calls` empty): the stream is then closed (cancelled;
    what it streamed so far is kept by its owner). With a tool call pending the steer waits
    for its result. Cancelling the caller cancels the stream."""
    steer = asyncio.ensure_future(inbox.wait())
    either: set[asyncio.Future[Any]] = {stream, steer}
    try:
        done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if stream in done or len(calls):
            return await stream
        stream.cancel()
        await asyncio.wait({stream})
        return STEERED if stream.cancelled() else stream.result()
    except BaseException:
        stream.cancel()
        await asyncio.wait({stream})
        raise
    finally:
        steer.cancel()


Release = Literal["run", "cancelled"]


@dataclass(eq=False, slots=True)
class _Waiter:
    future: asyncio.Future[None]
    cancelled: bool = False


class PromptQueue:
    """Prompts waiting for the running turn of one session, oldest first. A prompt stays in
    the line until it has resumed (so nothing can slip in between its release and its
    turn), and `cancel_all` reaches it until then too."""

    def __init__(self) -> None:
        self._waiting: deque[_Waiter] = deque()

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def __len__(self) -> int:
        return len(self._waiting)

    async def wait(self) -> Release:
        """Wait for this prompt's turn: `run`, or `cancelled` (session/cancel, close)."""
        waiter = _Waiter(asyncio.get_running_loop().create_future())
        self._waiting.append(waiter)
        try:
            await waiter.future
        except asyncio.CancelledError:  # the request itself was cancelled: leave the line
            released = waiter.future.done() and not waiter.future.cancelled()
            self._waiting.remove(waiter)
            if released and not waiter.cancelled:
                self.release_soon()  # its turn had come: pass it on
            raise
        self._waiting.remove(waiter)
        return "cancelled" if waiter.cancelled else "run"

    def release_soon(self) -> None:
        """Let the next prompt run, after the answers now being sent (module docstring)."""
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._release)

    def _release(self) -> None:
        if any(w.future.done() and not w.cancelled for w in self._waiting):
            return  # one was released and has not started yet: it releases the next
        for waiter in self._waiting:
            if not waiter.future.done():
                waiter.future.set_result(None)
                return

    def cancel_all(self) -> int:
        """Answer every waiting prompt `cancelled`; how many there were."""
        for waiter in self._waiting:
            waiter.cancelled = True
            if not waiter.future.done():
                waiter.future.set_result(None)
        return len(self._waiting)
