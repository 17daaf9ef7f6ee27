"""SIGTERM and SIGHUP during `cody-client exec`: what `timeout`, CI cancellation and a closed
terminal send.

During the turn the first signal cancels the turn (`session/cancel`): the daemon stops it
and answers `cancelled`, so the run ends as any cancelled turn does (`turn.completed`,
`stopReason: "cancelled"`, exit code 3). If the turn has not stopped `GRACE_S` later, or a
second signal comes, or the signal comes before the turn started, the run's task is
cancelled (the caller reports it: `error`, exit code 3). After the turn (the final event is
written) a signal changes nothing: the run is already finishing.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

__all__ = ["GRACE_S", "Termination"]

GRACE_S = 10.0
"""How long a cancelled turn may take to stop before the run gives up waiting."""

_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Termination:
    """Handles the signals for one `exec` run (see the module docstring)."""

    def __init__(self, task: asyncio.Task[object], *, grace_s: float = GRACE_S) -> None:
        self._task = task
        self._grace_s = grace_s
        self._loop = asyncio.get_running_loop()
        self._cancel_turn: Callable[[], None] | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._done = False
        self.received: str | None = None
        """The name of the first signal received (`SIGTERM`, `SIGHUP`), if any."""
        self.turn_was_running = False
        """The turn had started (when a signal ended the run: it did not stop in time)."""

    def install(self) -> None:
        for sig in _SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.add_signal_handler(sig, self._on_signal, sig)

    def uninstall(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        for sig in _SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.remove_signal_handler(sig)

    def turn_started(self, cancel_turn: Callable[[], None]) -> None:
        self._cancel_turn = cancel_turn
        self.turn_was_running = True

    def turn_ended(self) -> None:
        """The turn's result is in: from now on a signal changes nothing."""
        self._done = True
        self._cancel_turn = None
        if self._deadline is not None:
            self._deadline.cancel()

    def _on_signal(self, sig: signal.Signals) -> None:
        first = self.received is None
        if first:
            self.received = sig.name
        if self._done:
            return
        if first and self._cancel_turn is not None:
            self._cancel_turn()
            self._deadline = self._loop.call_later(self._grace_s, self._task.cancel)
            return
        self._task.cancel()
