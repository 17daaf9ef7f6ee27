"""Loading what the first session request needs while the client has nothing to say.

The daemon answers `initialize` without pydantic or the engine (docs/architecture.md,
"Starting fast"), so the first `session/new` (or `session/load`, `session/resume`) imports
them and builds their models: ~150 ms. Clients usually leave the daemon idle before that:
`cody-client exec` is still importing its own stack when the daemon is ready (~60 ms), and an
editor waits for its user to open a thread. `WarmUp` spends such idle time on those imports.

Invariants:
- It runs on the event loop's thread, one step at a time (an import or a model's schema,
  each at most ~20 ms here), and a step runs only when no message has arrived for `IDLE_S`:
  input postpones the next step, so a client that talks is never kept waiting by more than
  the one step in progress. `heard` is called as bytes arrive (transport.InputReader), from
  the event loop's I/O callback: in a loop turn, I/O callbacks run before the timers that
  are due, so a step due in the turn the bytes arrive sees them.
- A step only imports a module or builds a model's validator (pydantic's public
  `model_rebuild`); it never builds the engine, touches a file or runs a program. A step that
  fails ends the warm-up (logged); the request that needs the module then imports it and
  reports the failure as it would without a warm-up.
- Nothing only a turn needs is loaded (providers' HTTP stack, agent-CLI backends, MCP): the
  lists in tests/unit/test_lazy_imports.py hold with the warm-up on; `cody-daemon
  --no-warm-up` loads nothing ahead of need (to see what each request imports).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Final, Protocol

__all__ = ["IDLE_S", "STEPS", "Timers", "WarmUp"]

logger = logging.getLogger(__name__)

IDLE_S: Final = 0.003
"""Quiet time before a step: longer than the gap between a client's back-to-back messages."""

STEPS: Final[tuple[str, ...]] = (
    # pydantic, in pieces of <= ~20 ms
    "pydantic_core",
    "pydantic.main",
    "pydantic",
    # the wire models and the engine a session needs, dependencies first
    "cody_protocol._base",
    "cody_protocol.content",
    "cody_protocol.updates",
    "cody_protocol.session",
    "cody_protocol.prompt",
    "cody_protocol.initialize",
    "cody_daemon.config.loader",
    "cody_daemon.engine.events",
    "cody_daemon.providers.pool",
    "cody_daemon.tools.apply_patch",
    "cody_daemon.tools.exec",
    "cody_daemon.tools.web",
    "cody_daemon.tools.registry",
    "cody_daemon.engine.compaction",
    "cody_daemon.engine.manager",
    "cody_daemon.rpc.link",
    # validators built on first use (`defer_build`)
    "cody_daemon.config.model:CodyConfig",
    "cody_protocol.session:NewSessionParams",
    "cody_protocol.session:NewSessionResult",
    "cody_protocol.initialize:ClientCapabilities",
    "cody_protocol.commands:AvailableCommandsUpdate",
    "cody_protocol.prompt:PromptParams",
    "cody_protocol.prompt:PromptResult",
)
"""`module` imports it; `module:Model` builds that model's validator and serializer."""


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """The clock and timers the warm-up runs on: the event loop (`asyncio` loops have both
    methods); a test passes a manual clock (tests/support/clock.py) to run steps exactly
    when it advances time, whatever the machine's load."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], None], /) -> Cancellable: ...


class WarmUp:
    """Runs `STEPS` in the idle time of one event loop (see the module invariants)."""

    def __init__(
        self,
        loop: Timers,
        steps: tuple[str, ...] = STEPS,
        run: Callable[[str], None] | None = None,
    ) -> None:
        """`loop`: the event loop (or any `Timers`); `run` performs one step (tests pass
        their own)."""
        self._loop = loop
        self._run = run or _run
        self._steps = list(reversed(steps))
        self._last_heard = loop.time()
        self._timer: Cancellable | None = None

    @property
    def done(self) -> bool:
        return not self._steps

    def start(self) -> None:
        self._schedule(IDLE_S)

    def heard(self) -> None:
        """Input arrived: the next step waits until the client has been quiet again."""
        self._last_heard = self._loop.time()

    def stop(self) -> None:
        self._steps.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self, delay: float) -> None:
        self._timer = self._loop.call_later(delay, self._step) if self._steps else None

    def _step(self) -> None:
        quiet_for = self._loop.time() - self._last_heard
        if quiet_for < IDLE_S:
            self._schedule(IDLE_S - quiet_for)
            return
        step = self._steps.pop()
        started = self._loop.time()
        try:
            self._run(step)
        except Exception as exc:  # the request that needs it reports it, as without a warm-up
            logger.info("warm-up stopped at %s: %s", step, exc.__class__.__name__)
            self.stop()
            return
        logger.debug("warm-up: %s in %.1f ms", step, (self._loop.time() - started) * 1000)
        self._schedule(0)


def _run(step: str) -> None:
    """`__import__` rather than importlib: the `import` statement's path, which
    `-X importtime` reports (tests/unit/test_lazy_imports.py reads it)."""
    module_name, _, model_name = step.partition(":")
    __import__(module_name)
    module = sys.modules[module_name]
    if model_name:
        getattr(module, model_name).model_rebuild()
