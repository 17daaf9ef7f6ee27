"""The session methods: `session/new`, `load`, `resume`, `list`, `close`, `fork`,
`set_mode`, `set_config_option`, `_cody/session/delete` and `_cody/session/worktree`, and the
session state every opening answer carries (`session_state`).

The engine does the work (`SessionManager`); these parse params, call it and shape answers.
Invariants: the session's slash commands are advertised only after the response that names
the session (`advertise_commands`: a client learns the id from it); `session/load` replays
the history to this connection's link before its answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cody_protocol import methods

from .handlers import _after_response, parse

if TYPE_CHECKING:
    from ..engine.session import Session
    from .context import HandlerContext

__all__ = ["advertise_commands", "session_handlers", "session_state"]


def session_state(app: HandlerContext, session: Session) -> dict[str, Any]:
    """What every answer that opens a session carries: its modes, config options and
    `_meta.cody` (provider, model, file, warnings, project docs, extensions, lineage)."""
    from cody_protocol.session import (
        CodySessionResultMeta,
        CustomCommandInfo,
        HookInfo,
        ProjectDoc,
        SessionResultMeta,
        SkillInfo,
    )

    from ..engine.settings import build_modes

    listed = session.extensions.wire()
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
                commands=[CustomCommandInfo.model_validate(c) for c in listed["commands"]],
                skills=[SkillInfo.model_validate(skill) for skill in listed["skills"]],
                disabled_skills=[
                    SkillInfo.model_validate(skill) for skill in listed["disabledSkills"]
                ],
                hooks=[HookInfo.model_validate(hook) for hook in listed["hooks"]],
                parent_session_id=(
                    session.lineage.parent_session_id if session.lineage is not None else None
                ),
                worktree=_worktree_of(session),
            )
        ),
    }


def _worktree_of(session: Session) -> Any:
    """Where a worktree session runs (its changes: `_cody/session/worktree`)."""
    if session.worktree is None:
        return None
    from cody_protocol.subagents import WorktreeInfo

    worktree = session.worktree
    return WorktreeInfo(
        path=str(worktree.path),
        branch=worktree.branch,
        base=worktree.base,
        project_root=str(worktree.project_root),
    )


def advertise_commands(app: HandlerContext, session: Session) -> None:
    """After this request's response: the session's slash commands, its custom ones
    and its MCP servers' prompts included (a client learns the session id from the
    response, so the update must follow it)."""
    from ..engine.slash import session_commands

    _after_response(lambda: app.link.emit(session.id, session_commands(session)))


def session_handlers(app: HandlerContext) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """The handlers (registered by rpc/handlers.py)."""

    async def session_new(params: Any) -> Any:
        from cody_protocol.session import NewSessionParams, NewSessionResult

        parsed = parse(NewSessionParams, params)
        meta = parsed.meta.cody if parsed.meta is not None else None
        session = await app.manager.new_session(parsed.cwd, meta, parsed.mcp_servers)
        advertise_commands(app, session)
        return NewSessionResult.model_validate(
            {"sessionId": session.id, **session_state(app, session)}
        )

    async def open_stored(params: Any, *, replay: bool) -> Any:
        """`session/load` (the history replayed to this connection first) or resume."""
        from cody_protocol.session import LoadSessionParams, SessionStateResult

        parsed = parse(LoadSessionParams, params)
        session = await app.manager.open_session(
            parsed.session_id,
            app.link if replay else None,
            replay=replay,
            mcp_servers=parsed.mcp_servers,
            relocate_to=parsed.cwd if parsed.relocate else None,
        )
        advertise_commands(app, session)
        return SessionStateResult.model_validate(session_state(app, session))

    async def session_load(params: Any) -> Any:
        return await open_stored(params, replay=True)

    async def session_resume(params: Any) -> Any:
        return await open_stored(params, replay=False)

    async def session_list(params: Any) -> Any:
        from cody_protocol.session import ListSessionsParams, ListSessionsResult

        parsed = parse(ListSessionsParams, params)
        sessions, cursor = await app.manager.list_sessions(parsed.cwd, parsed.cursor)
        return ListSessionsResult(sessions=sessions, next_cursor=cursor)

    async def session_close(params: Any) -> Any:
        from cody_protocol.session import SessionIdParams
        from cody_protocol.subagents import (
            CloseSessionMeta,
            CloseSessionResult,
            CodyCloseSessionMeta,
        )

        parsed = parse(SessionIdParams, params)
        worktree = await app.manager.close(parsed.session_id)
        if worktree is None:
            return {}
        return CloseSessionResult(
            meta=CloseSessionMeta(cody=CodyCloseSessionMeta(worktree=worktree))
        )

    async def session_worktree(params: Any) -> Any:
        from cody_protocol.subagents import WorktreeParams, WorktreeResult

        parsed = parse(WorktreeParams, params)
        session = app.manager.get(parsed.session_id)
        return WorktreeResult(worktree=await app.manager.worktrees.describe(session))

    async def session_delete(params: Any) -> Any:
        from cody_protocol.session import SessionIdParams

        parsed = parse(SessionIdParams, params)
        await app.manager.delete(parsed.session_id)
        return {}

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
        advertise_commands(app, session)
        return ForkSessionResult.model_validate(
            {"sessionId": session.id, **session_state(app, session)}
        )

    return {
        methods.SESSION_NEW: session_new,
        methods.SESSION_LOAD: session_load,
        methods.SESSION_RESUME: session_resume,
        methods.SESSION_LIST: session_list,
        methods.SESSION_CLOSE: session_close,
        methods.SESSION_DELETE: session_delete,
        methods.SESSION_SET_MODE: session_set_mode,
        methods.SESSION_SET_CONFIG_OPTION: session_set_config_option,
        methods.SESSION_FORK: session_fork,
        methods.CODY_SESSION_FORK: session_fork,  # the name before ACP had session/fork
        methods.CODY_SESSION_WORKTREE: session_worktree,
    }
