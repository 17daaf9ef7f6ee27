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


def register_handlers(server: JsonRPCServer, app: DaemonApp) -> None:
    """The method table: the connection's own methods here, the others from the
    rpc/*_handlers.py modules, which see the app as a `HandlerContext` (rpc/context.py). The
    engine (`app.manager`, `app.link`) and the modules a session needs are reached when a
    handler first runs, never here: `initialize` needs neither."""

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
        subagents = app.manager.subagents  # the engine registers `task` and `taskResult`
        registry = subagents.tools_for(session, app.deps.tools) if session else app.deps.tools
        absent = registry.absent(app.env, tool_config, parsed.session_id)
        available = registry.offered(None, app.env, tool_config, parsed.session_id).tools()
        if session is not None and session.mcp is not None:
            available = [*available, *await session.mcp.session_tools()]
            statuses = [
                McpServerStatus(server=s.server, state=s.state, reason=s.reason, tools=s.tools)
                for s in session.mcp.statuses()
            ]
            absent.update(session.mcp.absent())
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
        methods.CODY_TOOLS_LIST: tools_list,
        methods.CODY_MODELS_LIST: models_list,
        methods.CODY_AGENTS_LIST: agents_list_handler,
    }
    from .checkpoint_handlers import checkpoint_handlers  # checkpoints and rewind
    from .config_handlers import config_handlers  # _cody/config/check
    from .history_handlers import history_handlers  # _cody/history/*
    from .lsp_handlers import lsp_handlers  # _cody/lsp/servers
    from .permission_handlers import permission_handlers  # _cody/permissions/*
    from .process_handlers import process_handlers  # _cody/session/processes, process/kill
    from .session_handlers import session_handlers  # sessions: open, list, settings, close
    from .turn_handlers import turn_handlers  # session/prompt, cancel, steer, compact...

    history = history_handlers(app)
    config = config_handlers(app)
    lsp = lsp_handlers(app)
    permissions = permission_handlers(app)
    turn = turn_handlers(app)
    checkpoints = checkpoint_handlers(app)
    processes = process_handlers(app)
    sessions = session_handlers(app)
    parts = (table, sessions, history, config, lsp, permissions, turn, checkpoints, processes)
    handlers = {name: handler for part in parts for name, handler in part.items()}
    problems = methods.handler_problems([name for part in parts for name in part])
    if problems:  # every served method of cody_protocol.methods.METHODS, exactly one handler
        raise RuntimeError("the handler table disagrees with METHODS: " + "; ".join(problems))
    for name, fn in handlers.items():
        server.feature(name)(_guard(name, fn))
