"""The async Python client for Cody: spawn (or attach to) a daemon, drive sessions.

    async with CodyClient.spawn() as client:
        client.on_permission = my_async_callback      # returns Allow(), Deny() or Cancel()
        session = await client.new_session(cwd="/path/to/repo")
        result = await session.prompt("list files", on_update=print, timeout=300)

Updates and approval requests arrive as the protocol's pydantic models; error answers as
`RemoteError` subclasses (cody_client.errors). An approval with no callback is answered
`reject_once` (never left hanging); an MCP server's question (`_cody/mcp/elicit`) with no
`on_elicitation` callback is declined.

Your callbacks' bugs are yours, and you see them: when `on_update` or `on_permission` raises
(or the latter returns something that is not a decision: cody_client.decisions) during a
prompt, the turn is cancelled (an approval is answered `cancelled`) and awaiting or
iterating the prompt raises that exception once the daemon has answered. The connection
stays usable. Sessions and turns: cody_client.session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from cody_protocol.commands import AvailableCommand, AvailableCommandsUpdate
from cody_protocol.extensions import (
    HookStatusNotification,
    LanguageServersResult,
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
from cody_protocol.mcp import McpElicitParams, McpElicitResult
from cody_protocol.permission import RequestPermissionParams
from cody_protocol.session import (
    ListSessionsResult,
    NewSessionResult,
    SessionInfo,
    SessionStateResult,
)
from cody_protocol.updates import SessionNotification, SessionUpdate

from . import __version__
from .connection import Connection, Framing
from .decisions import Decision, permission_answer
from .errors import RemoteError
from .process import DaemonProcess
from .session import ClientSession, PromptRun, PromptTimeout, UpdateCallback, absolute

if TYPE_CHECKING:
    from .warm import WarmDaemon

__all__ = [
    "ClientSession",
    "ElicitationCallback",
    "CodyClient",
    "PermissionCallback",
    "PromptRun",
    "PromptTimeout",
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


PermissionCallback = Callable[[RequestPermissionParams], Awaitable[Decision | str]]
"""Returns `Allow(...)`, `Deny(...)` or `Cancel()` (cody_client.decisions); an option id the
request offers (`allow_once`, ...) or `cancelled` is taken too, anything else raises."""


ElicitationCallback = Callable[[McpElicitParams], Awaitable[McpElicitResult]]
"""Answers an MCP server's question: `McpElicitResult(action="accept", content={...})`,
`"decline"` or `"cancel"`; a callback that raises declines."""


class CodyClient:
    """A connection to Cody's daemon: sessions, models, saved and other agents' history.

    Make one with `spawn()` (a daemon of its own) or `connect()` (streams you have); set
    `on_permission` to decide approvals (cody_client.decisions) and `on_elicitation` to
    answer MCP servers' questions (docs/mcp.md, "Elicitation").
    """

    def __init__(self, connection: Connection, process: DaemonProcess | None = None) -> None:
        self.connection = connection
        self.process = process
        self.warm: WarmDaemon | None = None
        """The warm daemon this client talks to (cody_client.warm); None: a spawned one, or
        streams the caller connected."""
        self.warm_skipped: str | None = None
        """Why a warm daemon was there but not used (cody_client.warm), for `doctor`."""
        self.on_permission: PermissionCallback | None = None
        self.on_hook_status: Callable[[HookStatusNotification], None] | None = None
        """Called when a session's hook failed, timed out or has a message for the user
        (`_cody/hook/status`)."""
        self.on_elicitation: ElicitationCallback | None = None
        self.initialize_result: InitializeResult | None = None
        self._listeners: dict[str, list[UpdateCallback]] = {}
        self._runs: dict[str, PromptRun] = {}
        self.available_commands: dict[str, list[AvailableCommand]] = {}
        """Each session's slash commands, as the daemon last advertised them
        (`available_commands_update`, sent after session/new, load, resume and fork)."""
        connection.on_notification("session/update", self._on_update)
        connection.on_notification("_cody/hook/status", self._on_hook_status)
        connection.on_request("session/request_permission", self._on_permission)
        connection.on_request("_cody/mcp/elicit", self._on_elicitation)

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
        """Close the connection (and a spawned daemon: `shutdown`, then `exit`)."""
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
        if isinstance(notification.update, AvailableCommandsUpdate):
            commands = notification.update.available_commands
            self.available_commands[notification.session_id] = commands
        for listener in list(self._listeners.get(notification.session_id, [])):
            try:
                listener(notification.update)
            except Exception:
                logger.exception("an update listener raised")

    def _on_hook_status(self, params: Any) -> None:
        if self.on_hook_status is None:
            return
        try:
            notification = HookStatusNotification.model_validate(params)
        except Exception:
            return
        try:
            self.on_hook_status(notification)
        except Exception:
            logger.exception("the hook status callback raised")

    async def _on_permission(self, params: Any) -> Any:
        request = RequestPermissionParams.model_validate(params)
        if self.on_permission is None:
            return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
        try:
            return permission_answer(await self.on_permission(request), request)
        except Exception as exc:  # the callback's bug, or not a decision: loudly
            run = self._runs.get(request.session_id)
            if run is None:
                raise  # answered as an error, which the daemon counts as a rejection
            run.fail(exc)
            return {"outcome": {"outcome": "cancelled"}}

    async def _on_elicitation(self, params: Any) -> Any:
        request = McpElicitParams.model_validate(params)
        answer = McpElicitResult(action="decline")
        if self.on_elicitation is not None:
            try:
                answer = await self.on_elicitation(request)
            except Exception:
                logger.exception("the elicitation callback raised: declined")
        return answer.wire()

    def listen(self, session_id: str, callback: UpdateCallback) -> Callable[[], None]:
        """Receive a session's updates outside prompts (e.g. the replay of session/load)."""
        listeners = self._listeners.setdefault(session_id, [])
        listeners.append(callback)
        return lambda: listeners.remove(callback)

    # -- requests -------------------------------------------------------------------------

    async def initialize(self) -> InitializeResult:
        """`initialize` (`spawn` and `connect` do it unless told not to)."""
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
        config: Mapping[str, Any] | None = None,
        ephemeral: bool = False,
        worktree: bool | str | None = None,
    ) -> ClientSession:
        """`session/new`; settings not given come from the daemon's configuration.

        `backend`: `native` (Cody's own agent loop), `codex` (the Codex CLI) or `claude`
        (Claude Code); the daemon's `backend` config key when not given. `writable_roots`:
        more directories the sandbox lets the session write (`--add-dir`). `config`: config
        keys for this session, shaped like `config.toml` (`{"max_tool_iterations": 5}`),
        validated as the file is; the named settings win over it. `ephemeral`: keep no
        session file (removed when the session closes). `worktree`: run the session in a new
        git worktree of the project (`True`, or its name; `session.meta.worktree` says where,
        and `close()` whether it was kept)."""
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
            "writableRoots": [absolute(root) for root in writable_roots]
            if writable_roots
            else None,
            "config": dict(config) if config else None,
            "ephemeral": True if ephemeral else None,
            "worktree": worktree or None,
        }
        params: dict[str, Any] = {"cwd": absolute(cwd), "mcpServers": list(mcp_servers)}
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
        params: dict[str, Any] = {"sessionId": session_id, "cwd": absolute(cwd), "mcpServers": []}
        if at_message is not None:
            params["atMessage"] = at_message
        raw = await self.connection.request("_cody/session/fork", params)
        result = NewSessionResult.model_validate(raw)
        return self._session(result.session_id, params["cwd"], result)

    async def permissions(self, cwd: str | None = None) -> PermissionsListResult:
        """`_cody/permissions/list`: the rules that apply in `cwd` (None: all of the user's)."""
        params = {"cwd": absolute(cwd)} if cwd is not None else {}
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

    async def language_servers(self, cwd: str, *, start: bool = False) -> LanguageServersResult:
        """`_cody/lsp/servers`: the language servers a session in `cwd` gets; with `start`,
        whether each one starts there (it is started and stopped again)."""
        return LanguageServersResult.model_validate(
            await self.connection.request("_cody/lsp/servers", {"cwd": cwd, "start": start})
        )

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        *,
        on_update: UpdateCallback | None = None,
        relocate: bool = False,
    ) -> ClientSession:
        """`session/load`: the history is replayed to `on_update` before this returns.

        The session runs in the directory it was created in; `relocate=True` continues it in
        `cwd` instead (its "allow for this session" grants are then dropped)."""
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
                "session/load", _load_params(session_id, cwd, relocate)
            )
        finally:
            stop()
        if errors:
            raise errors[0]
        return self._session(session_id, cwd, SessionStateResult.model_validate(raw))

    async def resume_session(
        self, session_id: str, cwd: str, *, relocate: bool = False
    ) -> ClientSession:
        """`session/resume`: as `load_session`, without the replay."""
        raw = await self.connection.request(
            "session/resume", _load_params(session_id, cwd, relocate)
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
        """`session/list`, every page: the saved sessions (of `cwd` when given), newest first."""
        params: dict[str, Any] = {}
        if cwd is not None:
            params["cwd"] = absolute(cwd)
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
        """`session/delete`: remove a saved session's file (not while it runs a turn)."""
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
            params["cwd"] = absolute(cwd)
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
        """`_cody/history/import`: a new, live Cody session holding that conversation, working
        in `cwd` (default: this process's current directory; never the directory the session
        file names, which `stats.source_cwd` reports)."""
        params = _history_ref(session_id, path, agent)
        params["cwd"] = absolute(cwd if cwd is not None else os.getcwd())
        settings = {"provider": provider, "model": model}
        given = {key: value for key, value in settings.items() if value is not None}
        if given:
            params["_meta"] = {"cody": given}
        result = HistoryImportResult.model_validate(
            await self.connection.request("_cody/history/import", params)
        )
        session = self._session(result.session_id, result.imported.cwd, result)
        return session, result.imported


def _load_params(session_id: str, cwd: str, relocate: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": session_id, "cwd": absolute(cwd), "mcpServers": []}
    if relocate:
        params["_meta"] = {"cody": {"relocate": True}}
    return params


def _history_ref(session_id: str | None, path: str | None, agent: str | None) -> dict[str, Any]:
    if (session_id is None) == (path is None):
        raise ValueError("give exactly one of session_id and path")
    params: dict[str, Any] = (
        {"sessionId": session_id} if session_id is not None else {"path": absolute(str(path))}
    )
    if agent is not None:
        params["agent"] = agent
    return params
