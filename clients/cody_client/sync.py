"""A small blocking wrapper around `CodyClient` for scripts that don't use asyncio.

    from cody_client.sync import SyncCodyClient

    with SyncCodyClient(on_permission=lambda request: "allow_once") as client:
        session = client.new_session(".")
        result = session.prompt("list files", on_update=print)
        print(result.stop_reason)

The async client runs on a private event loop in a background thread; callbacks
(`on_permission`, `on_update`) run in worker threads, so they may block (e.g. `input()`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from cody_protocol.permission import RequestPermissionParams
from cody_protocol.prompt import PromptResult
from cody_protocol.session import SessionInfo
from cody_protocol.updates import SessionUpdate

from .client import ClientSession, CodyClient

__all__ = ["SyncCodyClient", "SyncSession"]

T = TypeVar("T")


class SyncSession:
    def __init__(self, owner: SyncCodyClient, session: ClientSession) -> None:
        self._owner = owner
        self.session = session

    @property
    def id(self) -> str:
        return self.session.id

    def prompt(
        self, text: str, *, on_update: Callable[[SessionUpdate], None] | None = None
    ) -> PromptResult:
        async def run() -> PromptResult:
            return await self.session.prompt(text, on_update=on_update)

        return self._owner._call(run())

    def cancel(self) -> None:
        self._owner._loop.call_soon_threadsafe(self.session.cancel)

    def set_config_option(self, config_id: str, value: str) -> None:
        self._owner._call(self.session.set_config_option(config_id, value))


class SyncCodyClient:
    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        on_permission: Callable[[RequestPermissionParams], str] | None = None,
    ) -> None:
        self._command = command
        self._env = env
        self._on_permission = on_permission
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="cody-sync", daemon=True
        )
        self._client: CodyClient | None = None
        self._context: contextlib.AbstractAsyncContextManager[CodyClient] | None = None

    def __enter__(self) -> SyncCodyClient:
        self._thread.start()
        self._context = CodyClient.spawn(self._command, env=self._env)
        self._client = self._call(self._context.__aenter__())
        if self._on_permission is not None:
            callback = self._on_permission

            async def decide(request: RequestPermissionParams) -> str:
                return await asyncio.to_thread(callback, request)

            self._client.on_permission = decide
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._context is not None:
                self._call(self._context.__aexit__(None, None, None))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    @property
    def client(self) -> CodyClient:
        if self._client is None:
            raise RuntimeError("use SyncCodyClient in a `with` block")
        return self._client

    def new_session(self, cwd: str, **settings: Any) -> SyncSession:
        return SyncSession(self, self._call(self.client.new_session(cwd, **settings)))

    def resume_session(self, session_id: str, cwd: str) -> SyncSession:
        return SyncSession(self, self._call(self.client.resume_session(session_id, cwd)))

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        return self._call(self.client.list_sessions(cwd))
