"""One agent CLI as a line-JSON peer: requests matched to their answers by id, everything else
queued in order, and one failure for everything waiting when the CLI dies or babbles.

Both backends speak newline-delimited JSON with their CLI (backends/process.py runs it): the
Codex app-server JSON-RPC (`{"id": 3, "result": ...}` answers `{"id": 3, "method": ...}`) and
Claude Code's stream-json control protocol (`{"type": "control_response", "response":
{"request_id": "cody_3", ...}}` answers a `control_request`). What differs is only how an
answer names its request (`answer_id`) and how a request is worded, which each backend gives.

Invariants:
- every stdout message the CLI prints is either the answer to one pending request (its future
  gets the whole message) or goes to the inbox, in the order printed; an answer nobody waits
  for (a request already timed out) is dropped;
- when the CLI exits or prints a line that is not a JSON object, the peer is dead from then on:
  every pending request fails with `CliEnded` carrying the classified error (failures.py), the
  inbox yields it after the messages queued before, and a new request fails at once;
- `close()` kills the CLI and its whole process tree (process.py) and fails what still waits
  (cancelled); a closed peer is never reused: the backend makes a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from ..errors import ProviderError
from .failures import classify, cli_exited, cli_garbage
from .info import BackendKind
from .process import JsonLineProcess

__all__ = ["AnswerId", "CliEnded", "JsonLinePeer", "Message", "view"]

T = TypeVar("T")

Message = dict[str, Any]
"""One JSON object the CLI printed (the backend reads it through its typed views)."""
AnswerId = Callable[[Message], Hashable | None]
"""The id of the request `message` answers, or None when it answers none."""


def view(kind: type[T], value: object) -> T:
    """`value` read as the message type `kind` (a TypedDict of codex_protocol.py or
    claude_protocol.py), or as an empty one when it is not a JSON object: the CLI's output is
    read through typed views, and still defensively (`.get`)."""
    return cast(T, value if isinstance(value, dict) else {})


class CliEnded(Exception):
    """The CLI died or printed garbage; `error` is what the turn fails with (-32010)."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(error.message)
        self.error = error


class JsonLinePeer:
    def __init__(
        self,
        kind: BackendKind,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        answer_id: AnswerId,
    ) -> None:
        self.kind = kind
        self._answer_id = answer_id
        self._proc = JsonLineProcess(
            argv,
            cwd=cwd,
            env=env,
            on_message=self._on_message,
            on_garbage=lambda sample: self._fail(cli_garbage(kind, sample)),
            on_exit=lambda code: self._fail(cli_exited(kind, code, self._proc.stderr_tail)),
        )
        self._pending: dict[Hashable, asyncio.Future[Message]] = {}
        self._inbox: asyncio.Queue[Message | CliEnded] = asyncio.Queue()
        self._ids = 0
        self.dead: ProviderError | None = None
        """Why the CLI can no longer be talked to (None while it can)."""

    @property
    def argv(self) -> list[str]:
        return self._proc.argv

    @property
    def alive(self) -> bool:
        return self._proc.running and self.dead is None

    async def start(self) -> None:
        """Spawn the CLI; a CLI that cannot be started is a classified `ProviderError`."""
        try:
            await self._proc.start()
        except OSError as exc:
            raise classify(self.kind, f"cannot start {self.argv[0]}: {exc.strerror}") from None

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    # -- what the CLI prints ---------------------------------------------------------------

    def _on_message(self, message: Message) -> None:
        request_id = self._answer_id(message)
        if request_id is None:
            self._inbox.put_nowait(message)
            return
        future = self._pending.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result(message)

    def _fail(self, error: ProviderError) -> None:
        if self.dead is None:
            self.dead = error
        for future in self._pending.values():
            if not future.done():
                future.set_exception(CliEnded(error))
        self._pending.clear()
        self._inbox.put_nowait(CliEnded(error))

    async def next_message(self) -> Message:
        """The next message that answers no request; `CliEnded` once the CLI is gone."""
        item = await self._inbox.get()
        if isinstance(item, CliEnded):
            raise item
        return item

    async def drain_until(
        self, done: Callable[[Message], bool], refuse: Callable[[Message], None]
    ) -> None:
        """Read messages until one is `done`; each one in between goes to `refuse` (the CLI's
        own requests are answered with a refusal there, so nothing waits on Cody)."""
        while not done(message := await self.next_message()):
            refuse(message)

    # -- what Cody sends -------------------------------------------------------------------

    def send(self, message: Message) -> None:
        """Write one line (a dead pipe is not an error here: the exit is reported)."""
        self._proc.send(message)

    async def drain(self) -> None:
        await self._proc.drain()

    async def request(
        self, request_id: Hashable, message: Message, *, timeout_s: float, what: str
    ) -> Message:
        """Send `message` and wait for the message that answers `request_id`.

        `CliEnded` when the CLI dies first (or was dead already); a `ProviderError` naming
        `what` when no answer comes within `timeout_s`."""
        if self.dead is not None:
            raise CliEnded(self.dead)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.send(message)
        await self.drain()
        try:
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise classify(self.kind, f"no answer to {what} within {timeout_s:g} s") from None
        finally:
            self._pending.pop(request_id, None)

    # -- the end ---------------------------------------------------------------------------

    async def interrupt(
        self,
        ask: Callable[[], Awaitable[object]],
        turn_over: Callable[[Message], bool],
        refuse: Callable[[Message], None],
        *,
        grace_s: float,
    ) -> None:
        """Ask the CLI to stop its turn (`ask`) and wait up to `grace_s` for the turn's end;
        whatever goes wrong here is left to `close()`, which kills the CLI anyway."""
        if not self.alive:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._interrupted(ask, turn_over, refuse), grace_s)

    async def _interrupted(
        self,
        ask: Callable[[], Awaitable[object]],
        turn_over: Callable[[Message], bool],
        refuse: Callable[[Message], None],
    ) -> None:
        await ask()
        await self.drain_until(turn_over, refuse)

    async def close(self, *, gracefully: bool = False) -> None:
        """End the CLI and everything it started; `gracefully` first closes its input and
        gives it 2 s to exit by itself (it then saves its conversation)."""
        if gracefully and self._proc.running:
            await self._proc.close_stdin()
            await self._proc.wait(2.0)
        await self._proc.kill()
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
