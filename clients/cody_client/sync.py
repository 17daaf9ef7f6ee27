"""A blocking wrapper around `CodyClient` for scripts that don't use asyncio.

    from cody_client import Allow, SyncCodyClient

    with SyncCodyClient(on_permission=lambda request: Allow()) as client:
        session = client.new_session(".")
        result = session.prompt("list files", on_update=print, timeout=300)
        print(result.stop_reason)
        fork = session.fork(at_message=0)

The async client runs on a private event loop in a background thread. `on_permission` runs
in a worker thread, so it may block (e.g. `input()`); `on_update` runs on the client's
thread between updates: keep it quick.

Invariants: every public method of `CodyClient` and `ClientSession` has a blocking twin here
(`SyncCodyClient`, `SyncSession`; tests/e2e/test_client_api.py keeps the lists equal, except
what only makes sense with asyncio); a call interrupted in the calling thread (Ctrl-C) is
cancelled on the loop too, so an interrupted prompt stops its turn in the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from cody_protocol.extensions import (
    CompactSessionResult,
    LanguageServersResult,
    ModelsListResult,
    PermissionRuleInfo,
    PermissionsListResult,
)
from cody_protocol.history import (
    HistoryImportStats,
    HistoryReadResult,
    HistorySessionInfo,
    UnifiedMessage,
)
from cody_protocol.initialize import InitializeResult
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.prompt import DryRunReport, PromptResult
from cody_protocol.session import CodySessionResultMeta, SessionConfigOption, SessionInfo
from cody_protocol.updates import SessionUpdate

from .client import ClientSession, CodyClient
from .decisions import Decision

__all__ = ["SyncCodyClient", "SyncSession"]

T = TypeVar("T")
UpdateCallback = Callable[[SessionUpdate], None]


class SyncSession:
    """A live session; the blocking twin of `ClientSession` (same methods, same meaning)."""

    def __init__(self, owner: SyncCodyClient, session: ClientSession) -> None:
        self._owner = owner
        self.session = session
        """The async session underneath."""

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def cwd(self) -> str:
        return self.session.cwd

    @property
    def config_options(self) -> list[SessionConfigOption]:
        return self.session.config_options

    @property
    def mode_id(self) -> str | None:
        return self.session.mode_id

    @property
    def meta(self) -> CodySessionResultMeta | None:
        return self.session.meta

    def option(self, option_id: str) -> str | None:
        return self.session.option(option_id)

    def prompt(
        self,
        prompt: str | list[dict[str, Any]],
        *,
        on_update: UpdateCallback | None = None,
        timeout: float | None = None,
    ) -> PromptResult:
        """Run one turn and return the daemon's answer (`PromptTimeout` after `timeout`
        seconds: the turn is cancelled in the daemon)."""

        async def run() -> PromptResult:
            return await self.session.prompt(prompt, on_update=on_update, timeout=timeout)

        return self._owner._call(run())

    def cancel(self) -> None:
        """`session/cancel` (from any thread): the running prompt ends `cancelled`."""
        self._owner._loop.call_soon_threadsafe(self.session.cancel)

    def settled(self) -> None:
        self._owner._call(self.session.settled())

    def dry_run(self, prompt: str) -> DryRunReport:
        return self._owner._call(self.session.dry_run(prompt))

    def set_mode(self, mode_id: str) -> None:
        self._owner._call(self.session.set_mode(mode_id))

    def set_config_option(self, config_id: str, value: str) -> list[SessionConfigOption]:
        return self._owner._call(self.session.set_config_option(config_id, value))

    def compact(self, *, on_update: UpdateCallback | None = None) -> CompactSessionResult:
        return self._owner._call(self.session.compact(on_update=on_update))

    def fork(self, *, at_message: int | None = None, cwd: str | None = None) -> SyncSession:
        forked = self._owner._call(self.session.fork(at_message=at_message, cwd=cwd))
        return SyncSession(self._owner, forked)

    def history(self, *, include_original: bool = False) -> list[UnifiedMessage]:
        return self._owner._call(self.session.history(include_original=include_original))

    def close(self) -> None:
        self._owner._call(self.session.close())


class SyncCodyClient:
    """A daemon and a connection to it; the blocking twin of `CodyClient.spawn(...)`.

    `on_permission(request)` returns `Allow(...)`, `Deny(...)` or `Cancel()`
    (cody_client.decisions); without it every approval is rejected.
    """

    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_permission: Callable[[RequestPermissionParams], Decision | str] | None = None,
        on_stderr: Callable[[str], None] | None = None,
    ) -> None:
        self._command = command
        self._env = env
        self._cwd = cwd
        self._on_permission = on_permission
        self._on_stderr = on_stderr
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="cody-sync", daemon=True
        )
        self._client: CodyClient | None = None
        self._context: contextlib.AbstractAsyncContextManager[CodyClient] | None = None

    def __enter__(self) -> SyncCodyClient:
        self._thread.start()
        self._context = CodyClient.spawn(
            self._command, env=self._env, cwd=self._cwd, on_stderr=self._on_stderr
        )
        self._client = self._call(self._context.__aenter__())
        if self._on_permission is not None:
            callback = self._on_permission

            async def decide(request: RequestPermissionParams) -> Decision | str:
                return await asyncio.to_thread(callback, request)

            self._client.on_permission = decide
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the daemon and stop the client's thread (what leaving the `with` does)."""
        if not self._thread.is_alive():
            return
        try:
            if self._context is not None:
                context, self._context = self._context, None
                self._call(context.__aexit__(None, None, None))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            # Interrupted here (Ctrl-C): cancel it on the loop too (a prompt then cancels its
            # turn in the daemon), and wait for that, so nothing keeps running unseen.
            if not future.done():
                self._loop.call_soon_threadsafe(future.cancel)
                with contextlib.suppress(BaseException):
                    future.result(timeout=10)
            raise

    @property
    def client(self) -> CodyClient:
        """The async client underneath."""
        if self._client is None:
            raise RuntimeError("use SyncCodyClient in a `with` block")
        return self._client

    @property
    def initialize_result(self) -> InitializeResult | None:
        return self.client.initialize_result

    def new_session(self, cwd: str, **settings: Any) -> SyncSession:
        """`session/new`; `settings` as `CodyClient.new_session` takes them."""
        return SyncSession(self, self._call(self.client.new_session(cwd, **settings)))

    def fork_session(
        self, session_id: str, cwd: str, *, at_message: int | None = None
    ) -> SyncSession:
        forked = self._call(self.client.fork_session(session_id, cwd, at_message=at_message))
        return SyncSession(self, forked)

    def load_session(
        self, session_id: str, cwd: str, *, on_update: UpdateCallback | None = None
    ) -> SyncSession:
        loaded = self._call(self.client.load_session(session_id, cwd, on_update=on_update))
        return SyncSession(self, loaded)

    def resume_session(self, session_id: str, cwd: str) -> SyncSession:
        return SyncSession(self, self._call(self.client.resume_session(session_id, cwd)))

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        return self._call(self.client.list_sessions(cwd))

    def resolve_session_id(self, text: str) -> str:
        return self._call(self.client.resolve_session_id(text))

    def delete_session(self, session_id: str) -> None:
        self._call(self.client.delete_session(session_id))

    def permissions(self, cwd: str | None = None) -> PermissionsListResult:
        return self._call(self.client.permissions(cwd))

    def remove_permission(self, rule: PermissionRuleInfo) -> bool:
        return self._call(self.client.remove_permission(rule))

    def models(self) -> ModelsListResult:
        return self._call(self.client.models())

    def language_servers(self, cwd: str, *, start: bool = False) -> LanguageServersResult:
        return self._call(self.client.language_servers(cwd, start=start))

    def history_list(
        self, *, agent: str | None = None, cwd: str | None = None
    ) -> list[HistorySessionInfo]:
        return self._call(self.client.history_list(agent=agent, cwd=cwd))

    def history_read(self, session_id: str | None = None, **options: Any) -> HistoryReadResult:
        """`_cody/history/read`; `options` as `CodyClient.history_read` takes them."""
        return self._call(self.client.history_read(session_id, **options))

    def history_messages(
        self, session_id: str | None = None, **options: Any
    ) -> Iterator[UnifiedMessage]:
        """Every message of a session, fetched page by page as you iterate."""
        messages = self.client.history_messages(session_id, **options)

        async def step() -> UnifiedMessage:
            return await anext(messages)

        while True:
            try:
                yield self._call(step())
            except StopAsyncIteration:
                return

    def session_history(
        self, session_id: str, *, include_original: bool = False
    ) -> list[UnifiedMessage]:
        return self._call(
            self.client.session_history(session_id, include_original=include_original)
        )

    def import_history(
        self, session_id: str | None = None, **options: Any
    ) -> tuple[SyncSession, HistoryImportStats]:
        """`_cody/history/import`; `options` as `CodyClient.import_history` takes them."""
        session, stats = self._call(self.client.import_history(session_id, **options))
        return SyncSession(self, session), stats
