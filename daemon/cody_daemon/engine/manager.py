"""The session manager: many sessions per daemon, one running turn per session.

Invariants: a session is live (in `_live`) exactly while its file is open and locked; a
second prompt on a busy session fails with SessionBusy (-32011) and changes nothing;
`shutdown()` cancels every turn, waits for their cleanup and closes every file.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cody_protocol.content import ContentBlock
from cody_protocol.prompt import TokenUsage
from cody_protocol.session import CodySessionMeta, SessionConfigOption, SessionInfo
from cody_protocol.settings import (
    APPROVAL_POLICIES,
    REASONING_EFFORTS,
    REASONING_SUMMARIES,
    SANDBOX_MODES,
)

from ..config.loader import load_effective_config
from ..errors import AuthRequired, InvalidParams, Issue, NotFound, SessionBusy
from ..ids import new_id
from ..policy.allowlist import allowed_tools
from ..policy.approval import Grants
from ..policy.sandbox import SandboxPolicy
from ..providers.catalog import ProviderCatalog
from ..providers.pool import UnsupportedWireApi
from ..store.reader import read_session
from ..store.session_file import SessionFile
from .deps import EngineDeps
from .events import ConfigChanged
from .history import FunctionCallOutputItem
from .ports import ClientLink
from .replay import prompt_to_text, replay_events
from .session import Session, TurnOutcome
from .settings import MODES, SessionSettings, build_config_options, mode_of
from .turn import TurnEnv, TurnRunner

__all__ = ["LIST_PAGE_SIZE", "SessionManager"]

logger = logging.getLogger(__name__)

LIST_PAGE_SIZE = 100

_META_TO_CONFIG = {
    "provider": "model_provider",
    "model": "model",
    "approval_policy": "approval_policy",
    "sandbox_mode": "sandbox_mode",
    "reasoning_effort": "model_reasoning_effort",
    "reasoning_summary": "model_reasoning_summary",
}


def _check_cwd(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_dir():
        raise InvalidParams(
            f"cwd {cwd} is not an existing directory.",
            [Issue(key="cwd", message="not an existing directory", value=cwd, source="params")],
        )
    return path


class SessionManager:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps
        self._live: dict[str, Session] = {}
        self._catalogs: dict[str, ProviderCatalog] = {}

    # -- creating and opening ---------------------------------------------------------------

    def new_session(self, cwd: str, meta: CodySessionMeta | None) -> Session:
        cwd_path = _check_cwd(cwd)
        overrides = {}
        if meta is not None:
            for field_name, key in _META_TO_CONFIG.items():
                value = getattr(meta, field_name)
                if value is not None:
                    overrides[key] = value
        settings, catalog = self._settings_for(cwd_path, overrides, "_meta.cody")
        if meta is not None:
            settings.allowed_tools = (
                list(meta.allowed_tools) if meta.allowed_tools is not None else None
            )
            settings.phase = meta.phase
        self._check_allowlist(settings)
        created = datetime.now(UTC)
        session_id = new_id()
        handle = self.deps.store.create(session_id, created)
        handle.append(
            "session_meta",
            {
                "id": session_id,
                "cwd": str(cwd_path),
                "created": created.isoformat().replace("+00:00", "Z"),
                "cliVersion": self.deps.version,
                "originator": "cody-daemon",
                "settings": settings.persisted(),
            },
        )
        session = Session(
            id=session_id,
            cwd=cwd_path,
            created=created.isoformat(),
            settings=settings,
            file=handle,
        )
        self._register(session, catalog)
        return session

    def _settings_for(
        self, cwd: Path, overrides: dict[str, Any], source: str
    ) -> tuple[SessionSettings, ProviderCatalog]:
        loaded = load_effective_config(
            cwd=cwd,
            paths=self.deps.paths,
            session_overrides=overrides,
            session_overrides_source=source,
        )
        config = loaded.config
        catalog = ProviderCatalog.from_config(
            config,
            env=self.deps.env,
            codex_home=self.deps.codex_home,
            claude_dir=self.deps.claude_dir,
        )
        spec = catalog.resolve(config.model_provider)
        settings = SessionSettings(
            provider=spec.id,
            model=config.model or spec.default_model,
            approval_policy=config.approval_policy,
            sandbox_mode=config.sandbox_mode,
            reasoning_effort=config.model_reasoning_effort,
            reasoning_summary=config.model_reasoning_summary,
            max_tool_iterations=config.max_tool_iterations,
            approval_timeout_s=config.approval_timeout_s,
            sandbox_unavailable=config.sandbox_unavailable,
            warnings=list(loaded.warnings),
        )
        return settings, catalog

    def _check_allowlist(self, settings: SessionSettings) -> None:
        if settings.allowed_tools is None:
            return
        known = set(self.deps.tools.names())
        unknown = [name for name in settings.allowed_tools if name not in known]
        if unknown:
            raise InvalidParams(
                f"Unknown tool(s) in allowedTools: {', '.join(unknown)}.",
                [
                    Issue(
                        key="_meta.cody.allowedTools",
                        message="unknown tool",
                        value=name,
                        valid=tuple(sorted(known)),
                        source="_meta.cody",
                    )
                    for name in unknown
                ],
            )

    def _register(self, session: Session, catalog: ProviderCatalog) -> None:
        self._live[session.id] = session
        self._catalogs[session.id] = catalog

    async def open_session(
        self, session_id: str, link: ClientLink | None, *, replay: bool
    ) -> Session:
        """Make a stored session live (`session/load` replays it to `link`, resume does not)."""
        live = self._live.get(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn.")
        else:
            live = self._open_from_disk(session_id)
        if replay and link is not None:
            for event in replay_events(live.history, self.deps.tools):
                link.emit(live.id, event)
            await link.flush(live.id)
        return live

    def _open_from_disk(self, session_id: str) -> Session:
        path = self.deps.store.find(session_id)
        record = read_session(path)
        cwd_path = _check_cwd(record.cwd)
        persisted = dict(record.settings)
        config_overrides = {
            key: persisted[key]
            for key in _META_TO_CONFIG.values()
            if persisted.get(key) is not None
        }
        settings, catalog = self._settings_for(
            cwd_path, config_overrides, f"session file {path.name}"
        )
        allowed = persisted.get("allowed_tools")
        settings.allowed_tools = list(allowed) if isinstance(allowed, list) else None
        phase = persisted.get("phase")
        settings.phase = phase if phase in ("research", "plan", "implement") else None
        handle = SessionFile.open_existing(path)
        try:
            handle.ensure_newline()
            for item in record.items:
                if (
                    isinstance(item, FunctionCallOutputItem)
                    and item.call_id in record.interrupted_calls
                ):
                    handle.append("response_item", item.payload())
            if record.interrupted_calls:
                handle.append("event", {"kind": "interrupted", "callIds": record.interrupted_calls})
        except BaseException:
            handle.close()
            raise
        session = Session(
            id=record.session_id or session_id,
            cwd=cwd_path,
            created=record.created,
            settings=settings,
            file=handle,
            history=record.items,
            usage_total=TokenUsage.model_validate(record.usage_total or {}),
            title=record.title,
            grants=Grants(allowed=set(record.granted), rejected=set(record.rejected)),
        )
        self._register(session, catalog)
        return session

    def get(self, session_id: str) -> Session:
        session = self._live.get(session_id)
        if session is None:
            raise NotFound(
                f"Session {session_id} is not live in this daemon; "
                "use session/load or session/resume first."
            )
        return session

    # -- turns ------------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, blocks: list[ContentBlock], link: ClientLink
    ) -> TurnOutcome:
        session = self.get(session_id)
        if session.busy:
            raise SessionBusy(f"Session {session_id} is already running a turn; wait or cancel it.")
        env = self._turn_env(session, link)
        runner = TurnRunner(session, env)
        task = asyncio.create_task(runner.run(prompt_to_text(blocks)))
        session.turn = task
        try:
            return await task
        except asyncio.CancelledError:
            # The request itself was cancelled ($/cancelRequest): let the turn clean up.
            task.cancel()
            await asyncio.wait({task})
            raise
        finally:
            if session.turn is task:
                session.turn = None

    def _turn_env(self, session: Session, link: ClientLink) -> TurnEnv:
        catalog = self._catalogs[session.id]
        spec = catalog.get(session.settings.provider)
        credentials = catalog.credentials(spec)
        if credentials is None:
            raise AuthRequired(spec.id, catalog.missing_credentials_fix(spec))
        try:
            provider = self.deps.providers.get(spec, credentials)
        except UnsupportedWireApi as exc:
            raise InvalidParams(
                str(exc),
                [
                    Issue(
                        key=f"model_providers.{spec.id}.wire_api",
                        message="not supported yet",
                        value=spec.wire_api,
                        valid=("responses",),
                    )
                ],
            ) from None
        window = spec.context_window(session.settings.model)
        settings = session.settings
        return TurnEnv(
            provider=provider,
            context_window=window or 128_000,
            tools=self.deps.tools,
            allowed=allowed_tools(settings.allowed_tools, settings.phase),
            link=link,
            sandbox=SandboxPolicy.create(
                settings.sandbox_mode, session.cwd, settings.sandbox_unavailable
            ),
        )

    def allowed_tools_of(self, session_id: str) -> frozenset[str] | None:
        settings = self.get(session_id).settings
        return allowed_tools(settings.allowed_tools, settings.phase)

    def cancel(self, session_id: str) -> bool:
        """Cancel the running turn, if any. Unknown sessions are ignored (a notification)."""
        session = self._live.get(session_id)
        if session is None or session.turn is None or session.turn.done():
            return False
        session.turn.cancel()
        return True

    # -- settings ---------------------------------------------------------------------------

    def config_options(self, session: Session) -> list[SessionConfigOption]:
        catalog = self._catalogs[session.id]
        providers = [spec.id for spec in catalog.all()]
        spec = catalog.get(session.settings.provider)
        return build_config_options(session.settings, providers, [m.id for m in spec.models])

    def set_config_option(
        self, session_id: str, config_id: str, value: Any, link: ClientLink | None
    ) -> list[SessionConfigOption]:
        session = self.get(session_id)
        before_mode = mode_of(session.settings)
        settings = session.settings.copy()
        catalog = self._catalogs[session.id]
        text = value if isinstance(value, str) else None

        def bad(valid: tuple[str, ...] | None, message: str = "invalid value") -> InvalidParams:
            return InvalidParams(
                f"Invalid value {value!r} for config option {config_id}"
                + (f"; valid values: {', '.join(valid)}" if valid else ""),
                [Issue(key=config_id, message=message, value=value, valid=valid, source="params")],
            )

        if config_id == "provider":
            ids = tuple(spec.id for spec in catalog.all())
            if text not in ids:
                raise bad(ids)
            assert text is not None
            settings.provider = text
            settings.model = catalog.get(text).default_model
        elif config_id == "model":
            if not text or not text.strip():
                raise bad(None, "a model name is required")
            settings.model = text.strip()
        elif config_id == "approval_policy":
            if text not in APPROVAL_POLICIES:
                raise bad(APPROVAL_POLICIES)
            settings.approval_policy = text  # type: ignore[assignment]
        elif config_id == "sandbox_mode":
            if text not in SANDBOX_MODES:
                raise bad(SANDBOX_MODES)
            settings.sandbox_mode = text  # type: ignore[assignment]
        elif config_id == "reasoning_effort":
            if text not in ("default", *REASONING_EFFORTS):
                raise bad(("default", *REASONING_EFFORTS))
            settings.reasoning_effort = None if text == "default" else text  # type: ignore[assignment]
        elif config_id == "reasoning_summary":
            if text not in REASONING_SUMMARIES:
                raise bad(REASONING_SUMMARIES)
            settings.reasoning_summary = text  # type: ignore[assignment]
        else:
            ids = (
                "provider",
                "model",
                "approval_policy",
                "sandbox_mode",
                "reasoning_effort",
                "reasoning_summary",
            )
            raise InvalidParams(
                f"Unknown config option {config_id!r}; valid ids: {', '.join(ids)}",
                [
                    Issue(
                        key="configId",
                        message="unknown config option",
                        value=config_id,
                        valid=ids,
                        source="params",
                    )
                ],
            )
        self._apply_settings(session, settings, before_mode, link)
        return self.config_options(session)

    def set_mode(self, session_id: str, mode_id: str, link: ClientLink | None) -> None:
        session = self.get(session_id)
        preset = MODES.get(mode_id)
        if preset is None:
            valid = tuple(MODES)
            raise InvalidParams(
                f"Unknown mode {mode_id!r}; valid modes: {', '.join(valid)}",
                [
                    Issue(
                        key="modeId",
                        message="unknown mode",
                        value=mode_id,
                        valid=valid,
                        source="params",
                    )
                ],
            )
        before_mode = mode_of(session.settings)
        settings = session.settings.copy()
        settings.approval_policy, settings.sandbox_mode = preset[2], preset[3]
        self._apply_settings(session, settings, before_mode, link)

    def _apply_settings(
        self, session: Session, settings: SessionSettings, before_mode: str, link: ClientLink | None
    ) -> None:
        session.settings = settings
        session.file.append("event", {"kind": "config", "settings": settings.persisted()})
        if link is not None:
            mode = mode_of(settings)
            link.emit(
                session.id,
                ConfigChanged(
                    options=self.config_options(session),
                    mode_id=mode,
                    mode_changed=mode != before_mode,
                ),
            )

    # -- listing, closing, deleting, forking ------------------------------------------------

    def list_sessions(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        start = 0
        if cursor:
            try:
                start = int(cursor)
            except ValueError:
                raise InvalidParams(
                    "Invalid cursor; pass the nextCursor of a previous session/list answer.",
                    [Issue(key="cursor", message="not a cursor from session/list", value=cursor)],
                ) from None
        summaries = self.deps.store.list(cwd)
        page = summaries[start : start + LIST_PAGE_SIZE]
        infos = [
            SessionInfo(session_id=s.session_id, cwd=s.cwd, title=s.title, updated_at=s.updated_at)
            for s in page
        ]
        next_cursor = (
            str(start + LIST_PAGE_SIZE) if start + LIST_PAGE_SIZE < len(summaries) else None
        )
        return infos, next_cursor

    async def close(self, session_id: str) -> None:
        session = self.get(session_id)
        await self._close(session)

    async def _close(self, session: Session) -> None:
        if session.turn is not None and not session.turn.done():
            session.turn.cancel()
            await asyncio.wait({session.turn})
        self._live.pop(session.id, None)
        self._catalogs.pop(session.id, None)
        await session.file.sync()
        session.file.close()

    async def delete(self, session_id: str) -> None:
        live = self._live.get(session_id)
        if live is not None:
            if live.busy:
                raise SessionBusy(f"Session {session_id} is running a turn; cancel it first.")
            await self._close(live)
        self.deps.store.delete(session_id)

    def fork(self, session_id: str, cwd: str, at_message: int | None) -> Session:
        """A new session with the history of `session_id` up to user message `at_message`."""
        live = self._live.get(session_id)
        source_items = (
            list(live.history)
            if live is not None
            else read_session(self.deps.store.find(session_id)).items
        )
        settings_source = live.settings.persisted() if live is not None else None
        items = _cut_history(source_items, at_message)
        session = self.new_session(cwd, None)
        if settings_source is not None:
            self._apply_persisted(session, settings_source)
        session.file.append(
            "event", {"kind": "forked", "from": session_id, "atMessage": at_message}
        )
        for item in items:
            session.history.append(item)
            session.file.append("response_item", item.payload())
        return session

    def _apply_persisted(self, session: Session, persisted: dict[str, Any]) -> None:
        settings = session.settings.copy()
        settings.provider = persisted.get("model_provider") or settings.provider
        settings.model = persisted.get("model") or settings.model
        settings.approval_policy = persisted.get("approval_policy") or settings.approval_policy
        settings.sandbox_mode = persisted.get("sandbox_mode") or settings.sandbox_mode
        session.settings = settings
        session.file.append("event", {"kind": "config", "settings": settings.persisted()})

    # -- shutdown ---------------------------------------------------------------------------

    async def shutdown(self) -> None:
        turns = [s.turn for s in self._live.values() if s.turn is not None and not s.turn.done()]
        for turn in turns:
            turn.cancel()
        if turns:
            await asyncio.wait(turns, timeout=5)
        for session in list(self._live.values()):
            try:
                await session.file.sync()
            finally:
                session.file.close()
        self._live.clear()
        await self.deps.providers.aclose()

    @property
    def live_count(self) -> int:
        return len(self._live)


def _cut_history(items: list[Any], at_message: int | None) -> list[Any]:
    if at_message is None:
        return items
    seen = -1
    for index, item in enumerate(items):
        if getattr(item, "type", None) == "message" and getattr(item, "role", None) == "user":
            seen += 1
            if seen == at_message + 1:
                return items[:index]
    return items
