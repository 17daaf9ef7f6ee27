"""The handlers: params validated with the protocol models, engine called, results dumped.

One handler per method the daemon serves (`cody_protocol.methods.METHODS`, the one table of
methods): `register_handlers` refuses to start with one missing or one too many.

Every handler is async (pygls runs it as a task, so `$/cancelRequest` can cancel it) and
maps errors at this boundary (rpc/errors.py): a handler never leaks a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cody_protocol import methods
from pygls.server import JsonRPCServer

from .. import startup_gc
from . import wire_models
from .errors import RpcError, invalid_params_from_validation, to_rpc_error
from .initialize_wire import plain_client_capabilities

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..app import DaemonApp
    from ..engine.session import Session

__all__ = ["register_handlers"]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound="BaseModel")
Handler = Callable[[Any], Awaitable[Any]]


def parse(model: type[M], params: Any) -> M:
    from pydantic import ValidationError

    if params is None:
        params = {}
    if not isinstance(params, dict):
        message = "Invalid params: params must be a JSON object"
        raise RpcError(-32602, message, {"details": message})
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise invalid_params_from_validation(exc, model) from None


def _guard(name: str, fn: Handler) -> Handler:
    async def handler(params: Any) -> Any:
        try:
            result = await fn(params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = to_rpc_error(exc)
            logger.info("%s failed: %s (%s)", name, error.code, exc.__class__.__name__)
            raise error from None
        if wire_models.is_model(result):
            return wire_models.dump(result)
        return result

    handler.__name__ = name.replace("/", "_")
    return handler


def _after_response(action: Callable[[], None]) -> None:
    """Run `action` right after the current request's response is written.

    pygls runs each request handler as a task and writes the response from that task's done
    callback, added before the handler starts; a callback added here runs after it, in order.
    Nothing runs when the handler fails or is cancelled."""
    task = asyncio.current_task()
    if task is None:
        action()
        return

    def done(finished: asyncio.Task[Any]) -> None:
        if not finished.cancelled() and finished.exception() is None:
            action()

    task.add_done_callback(done)


def _session_state(app: DaemonApp, session: Session) -> dict[str, Any]:
    from cody_protocol.session import CodySessionResultMeta, ProjectDoc, SessionResultMeta

    from ..engine.settings import build_modes

    return {
        "modes": build_modes(session.settings),
        "configOptions": app.manager.config_options(session),
        "_meta": SessionResultMeta(
            cody=CodySessionResultMeta(
                provider=(
                    session.settings.provider
                    if session.settings.backend == "native"
                    else session.settings.backend
                ),
                model=session.settings.model,
                backend=session.settings.backend,
                session_file=str(session.file.path),
                warnings=session.settings.warnings,
                project_docs=[ProjectDoc.model_validate(doc) for doc in session.project_docs],
            )
        ),
    }


def register_handlers(server: JsonRPCServer, app: DaemonApp) -> None:
    """The method table. The engine (`app.manager`, `app.link`) and the modules a session
    needs are reached when a handler first runs, never here: `initialize` needs neither."""

    def advertise_commands(session_id: str) -> None:
        """After this request's response: the session's slash commands (a client learns the
        session id from the response, so the update must follow it)."""
        from ..engine.slash import commands_event

        _after_response(lambda: app.link.emit(session_id, commands_event()))

    async def initialize(params: Any) -> Any:
        capabilities = plain_client_capabilities(params)
        if capabilities is None:  # coerced or refused by the model (rpc/initialize_wire.py)
            from cody_protocol.initialize import InitializeParams

            capabilities = parse(InitializeParams, params).client_capabilities.wire()
        app.set_client_capabilities(capabilities)
        _after_response(startup_gc.resume)
        return app.initialize_result()

    async def authenticate(params: Any) -> Any:
        from cody_protocol.initialize import AuthenticateParams

        from ..engine.auth import authenticate as engine_authenticate

        parsed = parse(AuthenticateParams, params)
        provider_id = await engine_authenticate(app.user_catalog(), parsed.method_id, app.env)
        app.manager.logged_out.discard(provider_id)
        return {}

    async def logout(params: Any) -> Any:
        from cody_protocol.initialize import CodyLogoutMeta, LogoutMeta, LogoutResult

        ended = await app.manager.logout(app.user_catalog())
        return LogoutResult(meta=LogoutMeta(cody=CodyLogoutMeta(logged_out=ended)))

    async def shutdown(params: Any) -> Any:
        await app.shutdown()
        return None

    async def session_new(params: Any) -> Any:
        from cody_protocol.session import NewSessionParams, NewSessionResult

        parsed = parse(NewSessionParams, params)
        meta = parsed.meta.cody if parsed.meta is not None else None
        session = await app.manager.new_session(parsed.cwd, meta, parsed.mcp_servers)
        advertise_commands(session.id)
        return NewSessionResult.model_validate(
            {"sessionId": session.id, **_session_state(app, session)}
        )

    async def session_load(params: Any) -> Any:
        from cody_protocol.session import LoadSessionParams, SessionStateResult

        parsed = parse(LoadSessionParams, params)
        session = await app.manager.open_session(
            parsed.session_id,
            app.link,
            replay=True,
            mcp_servers=parsed.mcp_servers,
            relocate_to=parsed.cwd if parsed.relocate else None,
        )
        advertise_commands(session.id)
        return SessionStateResult.model_validate(_session_state(app, session))

    async def session_resume(params: Any) -> Any:
        from cody_protocol.session import LoadSessionParams, SessionStateResult

        parsed = parse(LoadSessionParams, params)
        session = await app.manager.open_session(
            parsed.session_id,
            None,
            replay=False,
            mcp_servers=parsed.mcp_servers,
            relocate_to=parsed.cwd if parsed.relocate else None,
        )
        advertise_commands(session.id)
        return SessionStateResult.model_validate(_session_state(app, session))

    async def session_list(params: Any) -> Any:
        from cody_protocol.session import ListSessionsParams, ListSessionsResult

        parsed = parse(ListSessionsParams, params)
        sessions, cursor = await app.manager.list_sessions(parsed.cwd, parsed.cursor)
        return ListSessionsResult(sessions=sessions, next_cursor=cursor)

    async def session_close(params: Any) -> Any:
        from cody_protocol.session import SessionIdParams

        parsed = parse(SessionIdParams, params)
        await app.manager.close(parsed.session_id)
        return {}

    async def session_delete(params: Any) -> Any:
        from cody_protocol.session import SessionIdParams

        parsed = parse(SessionIdParams, params)
        await app.manager.delete(parsed.session_id)
        return {}

    async def session_prompt(params: Any) -> Any:
        from cody_protocol.prompt import (
            CodyPromptMeta,
            PromptMeta,
            PromptParams,
            PromptResult,
            TokenUsage,
            TurnCost,
            TurnUsage,
        )

        parsed = parse(PromptParams, params)
        if parsed.meta is not None and parsed.meta.cody is not None and parsed.meta.cody.dry_run:
            report = await app.manager.dry_run(parsed.session_id, parsed.prompt)
            zero = TokenUsage()
            return PromptResult(
                stop_reason="end_turn",
                meta=PromptMeta(
                    cody=CodyPromptMeta(
                        turn_id="dry-run",
                        usage=TurnUsage(last=zero, turn=zero, total=zero),
                        dry_run=report,
                    )
                ),
            )
        outcome = await app.manager.prompt(parsed.session_id, parsed.prompt, app.link)
        return PromptResult(
            stop_reason=outcome.stop_reason,  # type: ignore[arg-type]
            usage=outcome.turn,
            meta=PromptMeta(
                cody=CodyPromptMeta(
                    turn_id=outcome.turn_id,
                    usage=TurnUsage(last=outcome.last, turn=outcome.turn, total=outcome.total),
                    cost=(
                        TurnCost(last=outcome.cost[0], turn=outcome.cost[1], total=outcome.cost[2])
                        if outcome.cost is not None
                        else None
                    ),
                )
            ),
        )

    async def session_cancel(params: Any) -> None:
        from cody_protocol.prompt import CancelParams

        try:
            parsed = parse(CancelParams, params)
        except RpcError:
            logger.info("ignoring session/cancel with invalid params")
            return
        app.manager.cancel(parsed.session_id)

    async def session_set_mode(params: Any) -> Any:
        from cody_protocol.session import SetModeParams

        parsed = parse(SetModeParams, params)
        app.manager.set_mode(parsed.session_id, parsed.mode_id, app.link)
        return {}

    async def session_set_config_option(params: Any) -> Any:
        from cody_protocol.session import SetConfigOptionParams, SetConfigOptionResult

        parsed = parse(SetConfigOptionParams, params)
        options = app.manager.set_config_option(
            parsed.session_id, parsed.config_id, parsed.value, app.link
        )
        return SetConfigOptionResult(config_options=options)

    async def session_fork(params: Any) -> Any:
        from cody_protocol.session import ForkSessionParams, ForkSessionResult

        parsed = parse(ForkSessionParams, params)
        session = await app.manager.fork(
            parsed.session_id, parsed.cwd, parsed.at_message, parsed.mcp_servers
        )
        advertise_commands(session.id)
        return ForkSessionResult.model_validate(
            {"sessionId": session.id, **_session_state(app, session)}
        )

    async def session_compact(params: Any) -> Any:
        from cody_protocol.extensions import CompactSessionParams, CompactSessionResult

        parsed = parse(CompactSessionParams, params)
        result = await app.manager.compact(parsed.session_id, app.link)
        if result is None:
            return CompactSessionResult(
                compacted=False, reason="nothing to summarise yet (no earlier messages)"
            )
        return CompactSessionResult(
            compacted=True,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            summarized_items=result.summarized_items,
            kept_items=result.kept_items,
        )

    async def tools_list(params: Any) -> Any:
        from cody_protocol.extensions import (
            AbsentTool,
            McpServerStatus,
            ToolInfo,
            ToolsListParams,
            ToolsListResult,
        )

        parsed = parse(ToolsListParams, params)
        names: set[str] | None = None
        tool_config = app.default_tool_config()
        statuses: list[McpServerStatus] = []
        session = None
        if parsed.session_id is not None:
            session = app.manager.get(parsed.session_id)
            tool_config = session.settings.tool_config
            allowed = app.manager.allowed_tools_of(parsed.session_id)
            names = set(allowed) if allowed is not None else None
        absent = app.deps.tools.absent(app.env, tool_config, parsed.session_id)
        available = app.deps.tools.offered(None, app.env, tool_config, parsed.session_id).tools()
        if session is not None and session.mcp is not None:
            available = [*available, *await session.mcp.session_tools()]
            statuses = [
                McpServerStatus(server=s.server, state=s.state, reason=s.reason, tools=s.tools)
                for s in session.mcp.statuses()
            ]
            if not any(tool.name == "readMcpResource" for tool in available):
                absent["readMcpResource"] = "none of the session's MCP servers is running"
        tools = [
            ToolInfo(
                name=tool.name,
                description=tool.description,
                requires_approval=tool.requires_approval,
                json_schema=tool.spec().parameters,
            )
            for tool in available
            if names is None or tool.name in names
        ]
        return ToolsListResult(
            tools=tools,
            mcp_servers=statuses,
            absent=[AbsentTool(name=name, reason=reason) for name, reason in absent.items()],
        )

    async def models_list(params: Any) -> Any:
        from cody_protocol.extensions import ModelInfo, ModelsListResult, ProviderModels

        catalog = app.user_catalog()
        return ModelsListResult(
            providers=[
                ProviderModels(
                    id=spec.id,
                    name=spec.name,
                    wire_api=spec.wire_api,
                    available=catalog.credentials(spec) is not None,
                    default_model=spec.default_model,
                    models=[
                        ModelInfo(id=model.id, context_window=model.context_window or 0)
                        for model in spec.models
                    ],
                )
                for spec in catalog.all()
            ]
        )

    async def agents_list_handler(params: Any) -> Any:
        from cody_protocol.extensions import AgentsListResult

        from ..engine.agents import agents_list

        return AgentsListResult(agents=await agents_list(app.env))

    table: dict[str, Handler] = {
        methods.INITIALIZE: initialize,
        methods.AUTHENTICATE: authenticate,
        methods.LOGOUT: logout,
        methods.SHUTDOWN: shutdown,
        methods.SESSION_NEW: session_new,
        methods.SESSION_LOAD: session_load,
        methods.SESSION_RESUME: session_resume,
        methods.SESSION_LIST: session_list,
        methods.SESSION_CLOSE: session_close,
        methods.SESSION_DELETE: session_delete,
        methods.SESSION_PROMPT: session_prompt,
        methods.SESSION_CANCEL: session_cancel,
        methods.SESSION_SET_MODE: session_set_mode,
        methods.SESSION_SET_CONFIG_OPTION: session_set_config_option,
        methods.SESSION_FORK: session_fork,
        methods.CODY_SESSION_FORK: session_fork,  # the name before ACP had session/fork
        methods.CODY_SESSION_COMPACT: session_compact,
        methods.CODY_TOOLS_LIST: tools_list,
        methods.CODY_MODELS_LIST: models_list,
        methods.CODY_AGENTS_LIST: agents_list_handler,
    }
    from .config_handlers import config_handlers  # _cody/config/check
    from .history_handlers import history_handlers  # _cody/history/*
    from .lsp_handlers import lsp_handlers  # _cody/lsp/servers
    from .permission_handlers import permission_handlers  # _cody/permissions/*

    history = history_handlers(app)
    config = config_handlers(app)
    lsp = lsp_handlers(app)
    permissions = permission_handlers(app)
    problems = methods.handler_problems([*table, *history, *config, *lsp, *permissions])
    if problems:  # every served method of cody_protocol.methods.METHODS, exactly one handler
        raise RuntimeError("the handler table disagrees with METHODS: " + "; ".join(problems))
    for name, fn in {**table, **history, **config, **lsp, **permissions}.items():
        server.feature(name)(_guard(name, fn))
