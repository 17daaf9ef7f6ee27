"""What a prompt runs as: the turn environment of a native session (provider, tools,
sandbox, secrets, price) and the runner of a turn, native (`TurnRunner`) or on an agent CLI
(`BackendTurnRunner`); `/compact`'s model call and a dry run use the same environment.

Invariants: everything that can refuse a prompt (no credentials, a logged-out OAuth login,
an unsupported wire API, an output schema or images a backend cannot take, an image the
model cannot read) refuses it here, before the turn's task exists, so nothing runs and
nothing is written; the runner's coroutine is returned unstarted (the manager claims the
session with it before any await); a backend CLI gets the same secret guard and protected
paths as the native tools.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from cody_protocol.content import ContentBlock
from cody_protocol.prompt import DryRunReport
from cody_protocol.settings import WIRE_APIS

from ..config.loader import project_trusted
from ..core.history import ImagePart
from ..errors import AuthRequired, InvalidParams, Issue
from ..ids import new_id
from ..policy.allowlist import allowed_tools
from ..policy.sandbox import SandboxPolicy
from ..policy.secrets import SecretGuard
from ..providers.base import takes_output_schema
from ..providers.pool import UnsupportedWireApi
from ..providers.pricing import billable_price
from ..tools.registry import ToolRegistry
from .auth import AUTH_METHOD_SUFFIX, OAUTH_KINDS
from .checkpoints import Checkpoints, TurnCheckpoint
from .compaction import CompactionResult, compact_session
from .deps import EngineDeps
from .final_answer import FinalAnswer
from .images import prompt_images, refuse_images_for_backend, takes_images
from .instructions import base_request, prompt_family
from .live_sessions import LiveSessions
from .loading import SessionLoader
from .ports import ClientLink
from .prompt_prep import run_native
from .replay import prompt_to_text
from .secrets import login_files
from .session import Session, TurnOutcome
from .slash import CommandCall, McpCommandCall, parse_mcp_command
from .slash_runner import Reply, answer
from .subagents.children import Subagents
from .turn import TurnEnv, TurnRunner
from .turn_hooks import TurnHooks

__all__ = ["PreparedTurn", "TurnSetup"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """A turn ready to start: its id and its runner's unstarted coroutine."""

    turn_id: str
    run: Coroutine[Any, Any, TurnOutcome]


class TurnSetup:
    """Builds turns for the sessions of `live` (one per daemon, built by the SessionManager)."""

    def __init__(
        self,
        deps: EngineDeps,
        *,
        live: LiveSessions,
        loader: SessionLoader,
        checkpoints: Checkpoints,
        subagents: Subagents,
        logged_out: set[str],
    ) -> None:
        self._deps = deps
        self._live = live
        self._loader = loader
        self._checkpoints = checkpoints
        self._subagents = subagents
        self._logged_out = logged_out
        """Providers whose OAuth login `logout` ended (shared with the manager)."""

    def prepare(
        self,
        session: Session,
        blocks: list[ContentBlock],
        command: CommandCall | None,
        link: ClientLink,
        *,
        checkpoint: TurnCheckpoint | None,
        secrets: SecretGuard,
        output_schema: dict[str, Any] | None,
    ) -> PreparedTurn:
        """The turn `blocks` (a `turn` command's when `command` is set) starts in `session`."""
        if session.settings.backend != "native":
            if command is not None:
                blocks = command.turn_prompt()
            _refuse_for_backend(session, blocks, output_schema)
            text = prompt_to_text(blocks)
            return self._backend_turn(session, text, link, checkpoint=checkpoint, secrets=secrets)
        env = self.env(session, link)
        if session.mcp is not None:
            env.extra_tools = session.mcp.turn_tools
            session.mcp.roots_changed()
        env.checkpoint = checkpoint
        if output_schema is not None:
            env.final_answer = FinalAnswer(
                output_schema, structured_output=takes_output_schema(env.provider)
            )
        runner = TurnRunner(session, env)
        if (mcp_call := parse_mcp_command(blocks)) is not None:
            run = self._mcp_prompt_turn(runner, mcp_call, link)
        else:
            run = run_native(runner, blocks, command, self.prompt_images(session, blocks))
        return PreparedTurn(runner.state.turn_id, run)

    def _backend_turn(
        self,
        session: Session,
        text: str,
        link: ClientLink,
        *,
        checkpoint: TurnCheckpoint | None,
        secrets: SecretGuard,
    ) -> PreparedTurn:
        """The turn of a session on an agent CLI (engine/backend_turn.py)."""
        from .agents import agent_for
        from .backend_guard import BackendGuard
        from .backend_turn import BackendTurnRunner

        deps = self._deps
        guard = BackendGuard(
            secrets=secrets,
            tool_facts=deps.tools.facts(),
            protected=(deps.paths.config_dir, deps.paths.data_dir),
        )
        runner = BackendTurnRunner(
            session,
            agent_for(session, deps.env, secrets),
            link,
            None,
            guard,
            checkpoint=checkpoint,
            rules_file=deps.paths.config_file,
            refresh_rules=lambda: self.refresh_rules(session),
        )
        return PreparedTurn(runner.state.turn_id, runner.run(text))

    def env(self, session: Session, link: ClientLink) -> TurnEnv:
        """The environment a native turn (or `/compact`) of `session` runs in."""
        deps = self._deps
        catalog = self._live.catalog_of(session)
        spec = catalog.get(session.settings.provider)
        credentials = catalog.credentials(spec)
        if credentials is None:
            from .agents import missing_credentials_fix

            raise AuthRequired(spec.id, missing_credentials_fix(catalog, spec, deps.env))
        if spec.id in self._logged_out and credentials.kind in OAUTH_KINDS:
            raise AuthRequired(
                spec.id,
                f'Call authenticate with methodId "{spec.id}{AUTH_METHOD_SUFFIX}" to use it again.',
                why=f"You logged out of provider '{spec.id}' in this connection.",
            )
        try:
            provider = deps.providers.get(spec, credentials)
        except UnsupportedWireApi as exc:
            raise InvalidParams(
                str(exc),
                [
                    Issue(
                        key=f"model_providers.{spec.id}.wire_api",
                        message="not supported yet",
                        value=spec.wire_api,
                        valid=WIRE_APIS,
                    )
                ],
            ) from None
        settings = session.settings
        window = settings.context_window or spec.context_window(settings.model)
        return TurnEnv(
            provider=provider,
            context_window=window or 128_000,
            tools=self._subagents.tools_for(session, deps.tools),
            family=prompt_family(spec.wire_api, settings.model),
            allowed=allowed_tools(settings.allowed_tools, settings.phase, deps.tools.facts()),
            link=link,
            sandbox=SandboxPolicy.create(
                settings.sandbox_mode,
                session.cwd,
                settings.sandbox_unavailable,
                protected=(deps.paths.config_dir, deps.paths.data_dir),
                hidden_files=login_files(deps.env),
                hidden_dirs=self._checkpoints.hidden_dirs(),
                guard_project_config=project_trusted(deps.paths, session.cwd),
                network=settings.network_access,
                extra_roots=(*settings.writable_roots, *settings.added_dirs),
            ),
            rules_file=deps.paths.config_file,
            refresh_rules=lambda: self.refresh_rules(session),
            env=deps.env,
            accepts_images=takes_images(spec.id, settings.model),
            price=billable_price(spec, credentials, settings.model, deps.env),
            model_problem=spec.model_problem,
            secrets=self._live.secrets(session),
            code=deps.code,
        )

    def prompt_images(self, session: Session, blocks: list[ContentBlock]) -> list[ImagePart]:
        """The prompt's images, checked against the session's model (InvalidParams: one the
        model cannot take, before anything starts)."""
        settings = session.settings
        return prompt_images(
            blocks,
            provider=settings.provider,
            model=settings.model,
            wire_api=self._live.wire_api_of(session),
            history=session.history,
        )

    async def _mcp_prompt_turn(
        self, runner: TurnRunner, call: McpCommandCall, link: ClientLink
    ) -> TurnOutcome:
        """`/mcp:<server>:<prompt> args`: the prompt's text as a turn of `runner`
        (engine/mcp_session.py); a mistake is answered as text."""
        from .mcp_session import expand_prompt

        session = runner.session
        expanded = await expand_prompt(session, call)
        if isinstance(expanded, str):
            return await answer(session, link, Reply(expanded))
        return await run_native(runner, expanded, None, self.prompt_images(session, expanded))

    def compaction(
        self, session: Session, link: ClientLink
    ) -> Coroutine[Any, Any, CompactionResult | None]:
        """`/compact`'s work for `session`, unstarted (its environment is checked now)."""
        env = self.env(session, link)

        async def compact() -> CompactionResult | None:
            # MCP tools are awaited inside the task: the session is claimed before any await.
            if session.mcp is not None:
                extra = await session.mcp.turn_tools()
                env.tools = ToolRegistry([*env.tools.tools(), *extra])
            hooks = TurnHooks(
                session,
                turn_id=new_id(),
                env=env.secrets.child_environment(env.env),
                emit=lambda event: link.emit(session.id, event),
            )
            return await compact_session(
                session,
                env.provider,
                base_request(session, env.offer(session)[0], env.allowed, env.family),
                context_window=env.context_window,
                price=env.price,
                emit=lambda event: link.emit(session.id, event),
                before=hooks.pre_compact if hooks.wants("PreCompact") else None,
            )

        return compact()

    async def dry_run(self, session: Session, blocks: list[ContentBlock]) -> DryRunReport:
        """What a prompt would run in this session, without running or writing anything (a
        backend's report may scan the workspace for protected paths: off the event loop)."""
        from .agents import dry_run_report

        deps = self._deps
        return await asyncio.to_thread(
            dry_run_report,
            session,
            prompt_to_text(blocks),
            deps.env,
            self._live.secrets(session),
            tool_facts=deps.tools.facts(),
            protected=(deps.paths.config_dir, deps.paths.data_dir),
        )

    def reload_rules(self, session: Session) -> None:
        """Re-read the session's permission rules (blocking: see `refresh_rules`). A config
        that became invalid keeps the rules the session had."""
        try:
            loaded = self._loader.current_rules(session.cwd)
        except InvalidParams as exc:
            logger.warning("kept the session's permission rules: %s", exc)
            return
        for warning in loaded.warnings:
            logger.info("permission rules: %s", warning)
        session.settings.rules = loaded.rules

    async def refresh_rules(self, session: Session) -> None:
        """`reload_rules` off the event loop: at each turn's start (inside the turn, so a
        cancel reaches it; a rule added by another session or by hand applies from the next
        turn) and after `allow_project` saved one."""
        await asyncio.to_thread(self.reload_rules, session)


def _refuse_for_backend(
    session: Session, blocks: list[ContentBlock], output_schema: dict[str, Any] | None
) -> None:
    """InvalidParams for what an agent CLI cannot take: an output schema, images it reads not."""
    if output_schema is not None:
        raise InvalidParams(
            f"An output schema needs a native session; session {session.id} runs on "
            f"the {session.settings.backend} backend.",
            [Issue(key="_meta.cody.outputSchema", message="native sessions only")],
        )
    refuse_images_for_backend(blocks, session.settings.backend)
