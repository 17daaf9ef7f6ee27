"""The per-call time limit the engine puts around every `tool.run` (see tools/base.py).

Invariants:
- The call runs as its own task. Past its limit it is cancelled and the call fails with a
  ToolError saying "timed out after N s" and where to change N; the turn goes on. Time spent
  waiting for the user's answer to an MCP server's question (`paused`) is not counted.
- When the turn itself is cancelled, the call is cancelled too, and the turn waits for it
  to clean up (kill its processes) before the cancellation goes on.
- Either way the wait for a cancelled call is bounded by `STOP_GRACE_S`: a tool that ignores
  cancellation is abandoned (and logged), never waited for forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..tools.base import ToolError

__all__ = ["STOP_GRACE_S", "run_with_time_limit"]

log = logging.getLogger(__name__)

T = TypeVar("T")

STOP_GRACE_S = 15.0
"""How long a cancelled call may take to clean up before it is abandoned."""


async def run_with_time_limit(
    call: Coroutine[Any, Any, T],
    limit_s: float,
    *,
    tool: str,
    setting: str,
    paused: Callable[[], float] | None = None,
) -> T:
    """Await `call`, failing it with a ToolError after `limit_s` seconds (see module doc).

    `tool` and `setting` (where the limit is configured) go into the error message.
    `paused()`: seconds spent waiting for the user so far (an MCP server's question): time
    that passes there while the call runs is added to its limit.
    """
    task = asyncio.ensure_future(call)
    loop = asyncio.get_running_loop()
    paused_at_start = paused() if paused is not None else 0.0
    deadline = loop.time() + limit_s
    try:
        while True:
            extra = (paused() - paused_at_start) if paused is not None else 0.0
            remaining = deadline + extra - loop.time()
            if remaining <= 0:
                break
            done, _ = await asyncio.wait({task}, timeout=remaining)
            if task in done:
                return task.result()
    except asyncio.CancelledError:
        await _stop(task, tool)
        raise
    await _stop(task, tool)
    raise ToolError(
        f"{tool} timed out after {limit_s:g} s and was stopped; if it needs longer, raise "
        f"{setting}",
        raw_output={"timedOut": True, "timeoutS": limit_s},
    )


async def _stop(task: asyncio.Future[Any], tool: str) -> None:
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=STOP_GRACE_S)
    if task in done:
        if not task.cancelled():
            task.exception()  # retrieved: a late failure is not logged as "never retrieved"
        return
    log.warning(
        "tool %s did not stop within %g s of being cancelled; abandoned", tool, STOP_GRACE_S
    )
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
