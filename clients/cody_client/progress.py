"""A small spinner shown on a terminal while Cody waits for the model."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TextIO

from .inert import control, styled

__all__ = ["Spinner"]

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Spinner:
    """`start()` shows `⠋ <label>` (TTY only); `stop()` erases it. Safe to call repeatedly."""

    def __init__(self, stream: TextIO, label: str = "waiting for the model…") -> None:
        self._stream = stream
        self._label = label
        self._enabled = stream.isatty()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._spin())

    @property
    def running(self) -> bool:
        return self._task is not None

    def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        self._task = None
        with contextlib.suppress(OSError, ValueError):
            self._stream.write(control("\r\x1b[2K"))
            self._stream.flush()

    async def _spin(self) -> None:
        index = 0
        while True:
            frame = _FRAMES[index % len(_FRAMES)]
            self._stream.write(control("\r") + styled("2", f"{frame} {self._label}"))
            self._stream.flush()
            index += 1
            await asyncio.sleep(0.1)
