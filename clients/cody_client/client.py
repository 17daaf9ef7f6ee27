"""The async Python client for Cody: spawn (or attach to) a daemon, drive sessions.

    async with CodyClient.spawn() as client:
        client.on_permission = my_async_callback      # returns an option id or "cancelled"
        session = await client.new_session(cwd="/path/to/repo")
        result = await session.prompt("list files", on_update=print)

Updates and approval requests arrive as the protocol's pydantic models. An approval with no
callback is answered `reject_once` (never left hanging).

Your callbacks' bugs are yours, and you see them: when `on_update` or `on_permission` raises
during a prompt, the turn is cancelled (an approval is answered `cancelled`) and awaiting or
iterating the prompt raises that exception once the daemon has answered. The connection
stays usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from cody_protocol.extensions import (
    CompactSessionResult,
    ModelsListResult,
    PermissionRuleInfo,
    PermissionsListResult,
    PermissionsRemoveParams,
)
from cody_protocol.history import (
    HistoryImportResult,
    HistoryImportStats,
    HistoryListResult,
    HistoryReadResult,
    HistorySessionInfo,
    UnifiedMessage,
)
from cody_protocol.initialize import InitializeResult
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.prompt import DryRunReport, PromptResult
from cody_protocol.session import (
    CodySessionResultMeta,
    ListSessionsResult,
    NewSessionResult,
    SessionConfigOption,
    SessionInfo,
    SessionStateResult,
)
from cody_protocol.updates import SessionNotification, SessionUpdate

from . import __version__
from .connection import Connection, Framing, RemoteError
from .process import DaemonProcess

if TYPE_CHECKING:
    from .warm import WarmDaemon

__all__ = [
    "ClientSession",
    "CodyClient",
    "PermissionCallback",
    "PromptRun",
    "RemoteError",
    "SessionLookupError",
    "UpdateCallback",
]

logger = logging.getLogger(__name__)

_SessionPage = TypeVar("_SessionPage", ListSessionsResult, HistoryListResult)

FULL_ID_LENGTH = 36
"""Session ids are UUIDs (36 characters); anything shorter is taken as a prefix."""


class SessionLookupError(LookupError):
    """A session id prefix matched no saved session, or several (`candidates`)."""

    def __init__(self, message: str, candidates: list[SessionInfo]) -> None:
        super().__init__(message)
        self.message = message
        self.candidates = candidates


PermissionCallback = Callable[[RequestPermissionParams], Awaitable[str]]
"""Returns an option id (`allow_once`, `allow_always`, `allow_project` where offered,
`reject_once`, `reject_always`) or
`cancelled` to stop the turn."""
UpdateCallback = Callable[[SessionUpdate], None]


@dataclass(eq=False)
class ClientSession:
    client: CodyClient
    id: str
    cwd: str
    config_options: list[SessionConfigOption] = field(default_factory=list)
    mode_id: str | None = None
    meta: CodySessionResultMeta | None = None
    """Provider, model, session file and configuration warnings, as the daemon reported."""

    def option(self, option_id: str) -> str | None:
        for option in self.config_options:
            if option.id == option_id:
                return option.current_value
        return None

    def prompt(
        self, prompt: str | list[dict[str, Any]], *, on_update: UpdateCallback | None = None
    ) -> PromptRun:
        """Run one turn. Await the result, or iterate the updates as they stream:

        result = await session.prompt("fix the test")
        async for update in (run := session.prompt("fix the test")):
            ...
        result = run.result
        """
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else prompt
        return PromptRun(self, blocks, on_update)

    def cancel(self) -> None:
        self.client.connection.notify("session/cancel", {"sessionId": self.id})

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

    async def close(self) -> None:
        await self.client.connection.request("session/close", {"sessionId": self.id})


def _absolute(path: str) -> str:
    return os.path.abspath(path)


class PromptRun:
    """One running turn: awaitable (-> PromptResult) and async-iterable (-> SessionUpdate)."""

    def __init__(
        self, session: ClientSession, blocks: list[dict[str, Any]], on_update: UpdateCallback | None
    ) -> None:
        self._session = session
        self._blocks = blocks
        self._on_update = on_update
        self._queue: asyncio.Queue[SessionUpdate | None] = asyncio.Queue()
        self._task: asyncio.Task[PromptResult] | None = None
        self._callback_error: BaseException | None = None
        self.result: PromptResult | None = None
        """The daemon's answer, also when a callback's exception is raised instead."""

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
        try:
            raw = await client.connection.request(
                "session/prompt", {"sessionId": session.id, "prompt": self._blocks}
            )
        finally:
            listeners.remove(deliver)
            if client._runs.get(session.id) is self:
                del client._runs[session.id]
            self._queue.put_nowait(None)
        self.result = PromptResult.model_validate(raw)
        if self._callback_error is not None:
            raise self._callback_error
        return self.result

    def __await__(self) -> Generator[Any, None, PromptResult]:
        return self._start().__await__()

    def __aiter__(self) -> AsyncIterator[SessionUpdate]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[SessionUpdate]:
        task = self._start()
        while True:
            update = await self._queue.get()
            if update is None:
                break
            yield update
        await task  # re-raises RemoteError / ConnectionClosed

    def cancel(self) -> None:
        """Ask the daemon to stop the turn (`session/cancel`); the run then ends `cancelled`."""
        self._session.cancel()


class CodyClient:
    def __init__(self, connection: Connection, process: DaemonProcess | None = None) -> None:
        self.connection = connection
        self.process = process
        self.warm: WarmDaemon | None = None
        """The warm daemon this client talks to (cody_client.warm); None: a spawned one, or
        streams the caller connected."""
        self.on_permission: PermissionCallback | None = None
        self.initialize_result: InitializeResult | None = None
        self._listeners: dict[str, list[UpdateCallback]] = {}
        self._runs: dict[str, PromptRun] = {}
        connection.on_notification("session/update", self._on_update)
        connection.on_request("session/request_permission", self._on_permission)

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(
        cls,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        framing: Framing = "lsp",
        on_stderr: Callable[[str], None] | None = None,
        initialize: bool = True,
        process: DaemonProcess | None = None,
    ) -> AsyncIterator[CodyClient]:
        """Start a daemon (or take `process`, one already started) and talk to it; the
        daemon is closed on exit either way."""
        if process is None:
            process = await DaemonProcess.spawn(
                command,
                env=env if env is not None else os.environ,
                cwd=cwd,
                framing=framing,
                on_stderr=on_stderr,
            )
        client = cls(process.connection, process)
        try:
            if initialize:
                await client.initialize()
            yield client
        finally:
            await client.aclose()

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        framing: Framing = "lsp",
        initialize: bool = True,
    ) -> AsyncIterator[CodyClient]:
        """Talk to a daemon over streams you already have (a socket, a pipe you spawned)."""
        connection = Connection(reader, writer, framing=framing)
        connection.start()
        client = cls(connection)
        try:
            if initialize:
                await client.initialize()
            yield client
        finally:
            await client.aclose()

    async def aclose(self) -> None:
        if self.process is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.connection.request("shutdown"), 5)
            await self.process.close()
        else:
            await self.connection.aclose()

    # -- dispatch -------------------------------------------------------------------------

    def _on_update(self, params: Any) -> None:
        try:
            notification = SessionNotification.model_validate(params)
        except Exception:
            return  # an update kind this client does not know: ignore it
        for listener in list(self._listeners.get(notification.session_id, [])):
            try:
                listener(notification.update)
            except Exception:
                logger.exception("an update listener raised")

    async def _on_permission(self, params: Any) -> Any:
        request = RequestPermissionParams.model_validate(params)
        decision = "reject_once"
        if self.on_permission is not None:
            try:
                decision = await self.on_permission(request)
            except Exception as exc:
                run = self._runs.get(request.session_id)
                if run is None:
                    raise  # answered as an error, which the daemon counts as a rejection
                run.fail(exc)
                decision = "cancelled"
        if decision == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": decision}}

    def listen(self, session_id: str, callback: UpdateCallback) -> Callable[[], None]:
        """Receive a session's updates outside prompts (e.g. the replay of session/load)."""
        listeners = self._listeners.setdefault(session_id, [])
        listeners.append(callback)
        return lambda: listeners.remove(callback)

    # -- requests -------------------------------------------------------------------------

    async def initialize(self) -> InitializeResult:
        raw = await self.connection.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
                "clientInfo": {
                    "name": "cody-client",
                    "title": "Cody client",
                    "version": __version__,
                },
            },
        )
        self.initialize_result = InitializeResult.model_validate(raw)
        return self.initialize_result

    async def new_session(
        self,
        cwd: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        approval_policy: str | None = None,
        sandbox_mode: str | None = None,
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = None,
        allowed_tools: Sequence[str] | None = None,
        phase: str | None = None,
        backend: str | None = None,
        writable_roots: Sequence[str] | None = None,
        mcp_servers: Sequence[Mapping[str, Any]] = (),
    ) -> ClientSession:
        """`session/new`; settings not given come from the daemon's configuration.

        `backend`: `native` (Cody's own agent loop), `codex` (the Codex CLI) or `claude`
        (Claude Code); the daemon's `backend` config key when not given. `writable_roots`:
        more directories the sandbox lets the session write (`--add-dir`)."""
        meta = {
            "provider": provider,
            "model": model,
            "approvalPolicy": approval_policy,
            "sandboxMode": sandbox_mode,
            "reasoningEffort": reasoning_effort,
            "reasoningSummary": reasoning_summary,
            "allowedTools": list(allowed_tools) if allowed_tools is not None else None,
            "phase": phase,
            "backend": backend,
            "writableRoots": [_absolute(root) for root in writable_roots]
            if writable_roots
            else None,
        }
        params: dict[str, Any] = {"cwd": _absolute(cwd), "mcpServers": list(mcp_servers)}
        given = {key: value for key, value in meta.items() if value is not None}
        if given:
            params["_meta"] = {"cody": given}
        result = NewSessionResult.model_validate(
            await self.connection.request("session/new", params)
        )
        return self._session(result.session_id, params["cwd"], result)

    async def fork_session(
        self, session_id: str, cwd: str, *, at_message: int | None = None
    ) -> ClientSession:
        """`_cody/session/fork`: a new session with the history up to user message `at_message`."""
        params: dict[str, Any] = {"sessionId": session_id, "cwd": _absolute(cwd), "mcpServers": []}
        if at_message is not None:
            params["atMessage"] = at_message
        raw = await self.connection.request("_cody/session/fork", params)
        result = NewSessionResult.model_validate(raw)
        return self._session(result.session_id, params["cwd"], result)

    async def permissions(self, cwd: str | None = None) -> PermissionsListResult:
        """`_cody/permissions/list`: the rules that apply in `cwd` (None: all of the user's)."""
        params = {"cwd": _absolute(cwd)} if cwd is not None else {}
        raw = await self.connection.request("_cody/permissions/list", params)
        return PermissionsListResult.model_validate(raw)

    async def remove_permission(self, rule: PermissionRuleInfo) -> bool:
        """`_cody/permissions/remove`: remove a rule (as listed) from the user config."""
        params = PermissionsRemoveParams(
            rule=rule.rule, decision=rule.decision, source=rule.source, project=rule.project
        ).wire()
        raw = await self.connection.request("_cody/permissions/remove", params)
        return bool(raw.get("removed")) if isinstance(raw, dict) else False

    async def models(self) -> ModelsListResult:
        """`_cody/models/list`: every provider, whether it can be used, and its models."""
        return ModelsListResult.model_validate(
            await self.connection.request("_cody/models/list", {})
        )

    async def load_session(
        self, session_id: str, cwd: str, *, on_update: UpdateCallback | None = None
    ) -> ClientSession:
        """`session/load`: the history is replayed to `on_update` before this returns."""
        errors: list[Exception] = []

        def deliver(update: SessionUpdate) -> None:
            if on_update is not None and not errors:
                try:
                    on_update(update)
                except Exception as exc:
                    errors.append(exc)

        stop = self.listen(session_id, deliver)
        try:
            raw = await self.connection.request(
                "session/load",
                {"sessionId": session_id, "cwd": _absolute(cwd), "mcpServers": []},
            )
        finally:
            stop()
        if errors:
            raise errors[0]
        return self._session(session_id, cwd, SessionStateResult.model_validate(raw))

    async def resume_session(self, session_id: str, cwd: str) -> ClientSession:
        raw = await self.connection.request(
            "session/resume",
            {"sessionId": session_id, "cwd": _absolute(cwd), "mcpServers": []},
        )
        return self._session(session_id, cwd, SessionStateResult.model_validate(raw))

    def _session(
        self, session_id: str, cwd: str, result: NewSessionResult | SessionStateResult
    ) -> ClientSession:
        meta = result.meta.cody if result.meta is not None else None
        return ClientSession(
            client=self,
            id=session_id,
            cwd=cwd,
            config_options=list(result.config_options),
            mode_id=result.modes.current_mode_id,
            meta=meta,
        )

    async def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        params: dict[str, Any] = {}
        if cwd is not None:
            params["cwd"] = _absolute(cwd)
        pages = await self._every_page("session/list", params, ListSessionsResult)
        return [session for page in pages for session in page.sessions]

    async def resolve_session_id(self, text: str) -> str:
        """A saved session's id from its full id or a unique prefix (as `git` does for commits).

        Raises SessionLookupError naming the candidates when the prefix matches none or several.
        """
        text = text.strip()
        if len(text) == FULL_ID_LENGTH:
            return text
        matches = [s for s in await self.list_sessions() if s.session_id.startswith(text)]
        if len(matches) == 1:
            return matches[0].session_id
        if not matches:
            raise SessionLookupError(f"No saved session id starts with {text!r}.", [])
        raise SessionLookupError(
            f"{len(matches)} saved sessions start with {text!r}; give more characters.", matches
        )

    async def delete_session(self, session_id: str) -> None:
        await self.connection.request("session/delete", {"sessionId": session_id})

    # -- unified history: Codex, Claude Code and Cody sessions (docs/history.md) ---------

    async def history_list(
        self, *, agent: str | None = None, cwd: str | None = None
    ) -> list[HistorySessionInfo]:
        """`_cody/history/list`, every page: the sessions on this machine, newest first."""
        params: dict[str, Any] = {}
        if agent is not None:
            params["agent"] = agent
        if cwd is not None:
            params["cwd"] = _absolute(cwd)
        pages = await self._every_page("_cody/history/list", params, HistoryListResult)
        return [session for page in pages for session in page.sessions]

    async def _every_page(
        self, method: str, params: dict[str, Any], page_type: type[_SessionPage]
    ) -> list[_SessionPage]:
        """Every page of a cursor-paged session list (`cursor` in, `nextCursor` out), in order."""
        pages: list[_SessionPage] = []
        cursor: str | None = None
        while True:
            page_params = params if cursor is None else {**params, "cursor": cursor}
            page = page_type.model_validate(await self.connection.request(method, page_params))
            pages.append(page)
            if page.next_cursor is None:
                return pages
            cursor = page.next_cursor

    async def history_read(
        self,
        session_id: str | None = None,
        *,
        path: str | None = None,
        agent: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        include_original: bool = True,
    ) -> HistoryReadResult:
        """`_cody/history/read`: one page of a session (by id, or any file by path)."""
        params = _history_ref(session_id, path, agent)
        params["includeOriginal"] = include_original
        if cursor is not None:
            params["cursor"] = cursor
        if limit is not None:
            params["limit"] = limit
        return HistoryReadResult.model_validate(
            await self.connection.request("_cody/history/read", params)
        )

    async def history_messages(
        self,
        session_id: str | None = None,
        *,
        path: str | None = None,
        agent: str | None = None,
        page_size: int = 200,
        include_original: bool = False,
    ) -> AsyncIterator[UnifiedMessage]:
        """Every message of a session, fetched page by page as you iterate."""
        cursor: str | None = None
        while True:
            page = await self.history_read(
                session_id,
                path=path,
                agent=agent,
                cursor=cursor,
                limit=page_size,
                include_original=include_original,
            )
            for message in page.messages:
                yield message
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def session_history(
        self, session_id: str, *, include_original: bool = False
    ) -> list[UnifiedMessage]:
        """`_cody/session/history`: a Cody session's whole history as unified messages."""
        raw = await self.connection.request(
            "_cody/session/history",
            {"sessionId": session_id, "includeOriginal": include_original},
        )
        return HistoryReadResult.model_validate(raw).messages

    async def import_history(
        self,
        session_id: str | None = None,
        *,
        path: str | None = None,
        agent: str | None = None,
        cwd: str | None = None,
        provider: str | None = None,
        model: str | None = None,
    ) -> tuple[ClientSession, HistoryImportStats]:
        """`_cody/history/import`: a new, live Cody session holding that conversation."""
        params = _history_ref(session_id, path, agent)
        if cwd is not None:
            params["cwd"] = _absolute(cwd)
        settings = {"provider": provider, "model": model}
        given = {key: value for key, value in settings.items() if value is not None}
        if given:
            params["_meta"] = {"cody": given}
        result = HistoryImportResult.model_validate(
            await self.connection.request("_cody/history/import", params)
        )
        session = self._session(result.session_id, result.imported.cwd, result)
        return session, result.imported


def _history_ref(session_id: str | None, path: str | None, agent: str | None) -> dict[str, Any]:
    if (session_id is None) == (path is None):
        raise ValueError("give exactly one of session_id and path")
    params: dict[str, Any] = (
        {"sessionId": session_id} if session_id is not None else {"path": _absolute(str(path))}
    )
    if agent is not None:
        params["agent"] = agent
    return params
