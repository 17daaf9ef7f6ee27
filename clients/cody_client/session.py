"""A live session of the client library (`ClientSession`) and its running turns (`PromptRun`).

Invariants:
- a turn the caller stops waiting for is stopped in the daemon too: when the awaiting task
  is cancelled (`asyncio.wait_for`, `asyncio.timeout`, `task.cancel()`, a cancelled `async
  for`), `session/cancel` is sent at once, and the session's next prompt (or compaction)
  first waits for the daemon's answer to the abandoned one, so it never meets "session busy";
- `prompt(..., timeout=)` cancels the turn when the time is up, waits for the daemon to stop
  it (at most `CANCEL_GRACE_S`), then raises `PromptTimeout` holding the daemon's answer;
- when a callback of the caller's raises, the turn is cancelled (an approval is answered
  `cancelled`) and awaiting or iterating the prompt raises that exception once the daemon has
  answered; the connection and the session stay usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cody_protocol.extensions import CompactSessionResult
from cody_protocol.history import UnifiedMessage
from cody_protocol.prompt import DryRunReport, PromptResult
from cody_protocol.session import CodySessionResultMeta, SessionConfigOption
from cody_protocol.updates import SessionUpdate

from .errors import RemoteError

if TYPE_CHECKING:
    from .client import CodyClient

__all__ = ["CANCEL_GRACE_S", "ClientSession", "PromptRun", "PromptTimeout", "UpdateCallback"]

UpdateCallback = Callable[[SessionUpdate], None]

CANCEL_GRACE_S = 30.0
"""How long a timed-out prompt waits for the daemon to confirm the turn stopped."""


class PromptTimeout(TimeoutError):
    """`prompt(..., timeout=)` ran out: the turn was cancelled in the daemon. `result` is the
    daemon's answer (`stop_reason == "cancelled"`), None if it did not come in time."""

    def __init__(self, timeout: float, result: PromptResult | None) -> None:
        super().__init__(f"the turn did not end within {timeout:g} s and was cancelled")
        self.timeout = timeout
        self.result = result


@dataclass(eq=False)
class ClientSession:
    """A live session of the daemon's; made by `CodyClient.new_session` (or load, resume,
    fork, import). `config_options`, `mode_id` and `meta` are as the daemon last said."""

    client: CodyClient
    id: str
    cwd: str
    config_options: list[SessionConfigOption] = field(default_factory=list)
    mode_id: str | None = None
    meta: CodySessionResultMeta | None = None
    """Provider, model, session file and configuration warnings, as the daemon reported."""
    _abandoned: asyncio.Future[Any] | None = field(default=None, init=False, repr=False)
    """The `session/prompt` of a turn whose caller stopped waiting (see the module docstring)."""

    def option(self, option_id: str) -> str | None:
        for option in self.config_options:
            if option.id == option_id:
                return option.current_value
        return None

    def prompt(
        self,
        prompt: str | list[dict[str, Any]],
        *,
        on_update: UpdateCallback | None = None,
        timeout: float | None = None,
    ) -> PromptRun:
        """Run one turn. Await the result, or iterate the updates as they stream:

        result = await session.prompt("fix the test", timeout=120)
        async for update in (run := session.prompt("fix the test")):
            ...
        result = run.result

        `timeout` (seconds): cancel the turn when it runs longer, and raise `PromptTimeout`.
        Cancelling the awaiting task (e.g. `asyncio.wait_for`) cancels the turn too.
        """
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else prompt
        return PromptRun(self, blocks, on_update, timeout)

    def cancel(self) -> None:
        """`session/cancel`: stop the running turn (its prompt then ends `cancelled`)."""
        self.client.connection.notify("session/cancel", {"sessionId": self.id})

    async def settled(self) -> None:
        """Wait until the daemon has answered a turn whose caller stopped waiting for it."""
        abandoned, self._abandoned = self._abandoned, None
        if abandoned is not None and not abandoned.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(abandoned), CANCEL_GRACE_S)

    async def dry_run(self, prompt: str) -> DryRunReport:
        """What `prompt` would run (the agent CLI's command line, flags, allowlist); runs nothing."""
        raw = await self.client.connection.request(
            "session/prompt",
            {
                "sessionId": self.id,
                "prompt": [{"type": "text", "text": prompt}],
                "_meta": {"cody": {"dryRun": True}},
            },
        )
        result = PromptResult.model_validate(raw)
        report = result.meta.cody.dry_run if result.meta is not None else None
        if report is None:
            raise RemoteError(-32603, "the daemon answered a dry run without a report")
        return report

    async def set_mode(self, mode_id: str) -> None:
        """`session/set_mode`: `ask`, `auto`, `read-only` or `full-access`."""
        await self.client.connection.request(
            "session/set_mode", {"sessionId": self.id, "modeId": mode_id}
        )
        self.mode_id = mode_id

    async def set_config_option(self, config_id: str, value: str) -> list[SessionConfigOption]:
        """`session/set_config_option` (e.g. `model`, `approval_policy`); the new options."""
        raw = await self.client.connection.request(
            "session/set_config_option",
            {"sessionId": self.id, "configId": config_id, "value": value},
        )
        self.config_options = [
            SessionConfigOption.model_validate(option) for option in raw["configOptions"]
        ]
        return self.config_options

    async def compact(self, *, on_update: UpdateCallback | None = None) -> CompactSessionResult:
        """`_cody/session/compact`: summarise the conversation so far, so the model sees the
        summary plus the latest request from now on (the session file keeps everything).
        The daemon's notice (a session_info_update) is passed to `on_update`."""
        await self.settled()
        listeners = self.client._listeners.setdefault(self.id, [])
        if on_update is not None:
            listeners.append(on_update)
        try:
            raw = await self.client.connection.request(
                "_cody/session/compact", {"sessionId": self.id}
            )
        finally:
            if on_update is not None:
                listeners.remove(on_update)
        return CompactSessionResult.model_validate(raw)

    async def fork(self, *, at_message: int | None = None, cwd: str | None = None) -> ClientSession:
        """`_cody/session/fork`: a new session with this one's history up to user message
        `at_message` (all of it when None), working in `cwd` (default: this one's)."""
        return await self.client.fork_session(self.id, cwd or self.cwd, at_message=at_message)

    async def history(self, *, include_original: bool = False) -> list[UnifiedMessage]:
        """`_cody/session/history`: this session's whole conversation as unified messages."""
        return await self.client.session_history(self.id, include_original=include_original)

    async def close(self) -> None:
        """`session/close`: the daemon saves and closes the session (a running turn is
        cancelled); `CodyClient.resume_session` makes it live again."""
        await self.client.connection.request("session/close", {"sessionId": self.id})


class PromptRun:
    """One running turn: awaitable (-> PromptResult) and async-iterable (-> SessionUpdate)."""

    def __init__(
        self,
        session: ClientSession,
        blocks: list[dict[str, Any]],
        on_update: UpdateCallback | None,
        timeout: float | None = None,
    ) -> None:
        self._session = session
        self._blocks = blocks
        self._on_update = on_update
        self._timeout = timeout
        self._queue: asyncio.Queue[SessionUpdate | None] = asyncio.Queue()
        self._task: asyncio.Task[PromptResult] | None = None
        self._callback_error: BaseException | None = None
        self._result: PromptResult | None = None

    @property
    def done(self) -> bool:
        """Whether the daemon has answered (then `result` holds its answer)."""
        return self._result is not None

    @property
    def result(self) -> PromptResult:
        """The daemon's answer, also when a callback's exception (or `PromptTimeout`) is
        raised instead. Raises RuntimeError before the turn has ended."""
        if self._result is None:
            raise RuntimeError("the turn has not ended: await the run (or iterate it) first")
        return self._result

    def _start(self) -> asyncio.Task[PromptResult]:
        if self._task is None:
            self._task = asyncio.create_task(self._run())
        return self._task

    def fail(self, error: BaseException) -> None:
        """A callback of the caller raised: cancel the turn; the prompt raises `error` at its end."""
        if self._callback_error is None:
            self._callback_error = error
            self._session.cancel()

    async def _run(self) -> PromptResult:
        session = self._session
        client = session.client
        await session.settled()

        def deliver(update: SessionUpdate) -> None:
            self._queue.put_nowait(update)
            if self._on_update is not None:
                try:
                    self._on_update(update)
                except Exception as exc:
                    self.fail(exc)

        listeners = client._listeners.setdefault(session.id, [])
        listeners.append(deliver)
        client._runs[session.id] = self
        request = asyncio.ensure_future(
            client.connection.request(
                "session/prompt", {"sessionId": session.id, "prompt": self._blocks}
            )
        )
        timed_out = False
        try:
            try:
                raw = await asyncio.wait_for(asyncio.shield(request), self._timeout)
            except TimeoutError:
                if request.done():
                    raise  # not our timeout: the request itself failed so
                timed_out = True
                session.cancel()
                try:
                    raw = await asyncio.wait_for(asyncio.shield(request), CANCEL_GRACE_S)
                except TimeoutError:
                    session._abandoned = request
                    raise PromptTimeout(self._timeout or 0.0, None) from None
        except asyncio.CancelledError:
            if not request.done():  # the caller stopped waiting: stop the turn in the daemon
                session.cancel()
                session._abandoned = request
            raise
        finally:
            listeners.remove(deliver)
            if client._runs.get(session.id) is self:
                del client._runs[session.id]
            self._queue.put_nowait(None)
        self._result = PromptResult.model_validate(raw)
        if self._callback_error is not None:
            raise self._callback_error
        if timed_out:
            raise PromptTimeout(self._timeout or 0.0, self._result)
        return self._result

    def __await__(self) -> Generator[Any, None, PromptResult]:
        return self._start().__await__()

    def __aiter__(self) -> AsyncIterator[SessionUpdate]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[SessionUpdate]:
        task = self._start()
        try:
            while True:
                update = await self._queue.get()
                if update is None:
                    break
                yield update
        except asyncio.CancelledError:
            task.cancel()  # the iterating task was cancelled: so is the turn
            raise
        await task  # re-raises RemoteError / ConnectionClosed / PromptTimeout

    def cancel(self) -> None:
        """Ask the daemon to stop the turn (`session/cancel`); the run then ends `cancelled`."""
        self._session.cancel()


def absolute(path: str) -> str:
    return os.path.abspath(path)
