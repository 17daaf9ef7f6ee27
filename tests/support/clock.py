"""A manual clock with timers, for code that takes an event loop's `time`/`call_later`
(rpc/warm_up.py `Timers`): time moves only when the test calls `advance`, so what runs when
does not depend on the machine's load."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

__all__ = ["ManualClock"]


class _Timer:
    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._due: list[tuple[float, int, _Timer]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], None], /) -> _Timer:
        timer = _Timer(callback)
        heapq.heappush(self._due, (self.now + max(delay, 0.0), next(self._order), timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move time forward, running every timer that falls due on the way (in order, at
        its own time; timers they set that fall due in the interval run too)."""
        until = self.now + seconds
        while self._due and self._due[0][0] <= until:
            when, _, timer = heapq.heappop(self._due)
            self.now = max(self.now, when)
            if not timer.cancelled:
                timer.callback()
        self.now = until
