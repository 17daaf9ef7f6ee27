"""The cyclic garbage collector while the daemon starts.

Start-up (imports, pydantic model classes, the first `initialize`) allocates objects that live
as long as the process; cyclic collections over them are wasted work (~10 ms of the
spawn -> `initialize` answer, bench/README.md "Startup"). `pause` stops the collector before
the stack is imported; `resume` moves everything allocated so far to the permanent generation
(`gc.freeze`) and restarts it. Reference counting frees everything else meanwhile.

Invariant: `resume` takes effect once, after the first `initialize` answer or at the latest
`RESUME_AFTER_S` after the event loop starts (or after the first read of stdin begins,
rpc/first_answer.py), whichever comes first, so a long-lived daemon
always collects cycles.
"""

from __future__ import annotations

import gc

__all__ = ["RESUME_AFTER_S", "pause", "resume"]

RESUME_AFTER_S = 2.0


def pause() -> None:
    gc.disable()


def resume() -> None:
    """Freeze what start-up allocated and collect again (nothing when not paused)."""
    if gc.isenabled():
        return
    gc.freeze()
    gc.enable()
