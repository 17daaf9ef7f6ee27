"""The threads that scan session files: `_cody/history/*` and `session/list`.

Reading other agents' sessions (and Cody's) is file I/O and parsing that can take long on
a large or hostile file. It runs here, in a pool of its own with `WORKERS` threads, never in
the event loop's default pool: that one runs the file tools and the session file's fsync,
which a burst of history requests must not hold up (issue 20.9). Further scans wait their
turn in this pool's queue; a cancelled request's scan finishes in its thread and is dropped.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

__all__ = ["WORKERS", "ScanPool"]

WORKERS: Final = 2
"""Scans at once (each reads one file at a time; bounded reads, core/safe_read.py)."""

T = TypeVar("T")


class ScanPool:
    def __init__(self, workers: int = WORKERS) -> None:
        self._workers = workers
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[..., T], /, *args: object) -> T:
        """`fn(*args)` in one of the pool's threads."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="cody-scan")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    def shutdown(self) -> None:
        """Stop taking scans; queued ones are dropped, running ones end in their thread."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
