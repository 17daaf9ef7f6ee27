"""Changing a live session's settings: `session/set_config_option`, `session/set_mode`
(and the `/model`, `/approvals` commands that use them), and a fork taking its source's.

Invariants: a change that would only fail at the next prompt (a model the provider lacks, a
provider without credentials, a backend that is not installed) is refused now and changes
nothing; the backend of a session is fixed once it has a turn; every change is appended to
the session file (a `config` event) before the client is told (`ConfigChanged`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cody_protocol.session import SessionConfigOption

from ..errors import AuthRequired, InvalidParams, Issue
from ..providers.catalog import ProviderCatalog
from .events import ConfigChanged
from .loading import offline_model_problem
from .ports import ClientLink
from .session import Session
from .settings import (
    SessionSettings,
    apply_config_option,
    apply_mode,
    build_config_options,
    mode_of,
)

__all__ = [
    "PROVIDER_OPTION",
    "apply_persisted",
    "config_options",
    "set_config_option",
    "set_mode",
]

PROVIDER_OPTION = "the `provider` config option"
"""How a session's provider is changed (session/set_config_option), as messages name it."""


def config_options(session: Session, catalog: ProviderCatalog) -> list[SessionConfigOption]:
    """The session's config options as ACP lists them."""
    providers = [spec.id for spec in catalog.all()]
    spec = catalog.get(session.settings.provider)
    return build_config_options(session.settings, providers, [m.id for m in spec.models])


def set_config_option(
    session: Session,
    catalog: ProviderCatalog,
    config_id: str,
    value: Any,
    link: ClientLink | None,
    *,
    env: Mapping[str, str],
) -> list[SessionConfigOption]:
    """Change one option (refused at once when it could not work); the options after."""
    _check_option(session, catalog, config_id, value)
    changed = apply_config_option(
        session.settings,
        config_id,
        value,
        providers={s.id: s.default_model for s in catalog.all()},
    )
    if changed.backend != session.settings.backend:
        if session.history or session.busy:
            raise InvalidParams(
                "The agent (backend) of a session is fixed once it has a turn; start a new "
                "session with _meta.cody.backend instead.",
                [Issue(key="backend", message="fixed after the first turn", value=value)],
            )
        from .agents import check_backend_installed

        check_backend_installed(changed.backend, env)
    _apply(session, catalog, changed, mode_of(session.settings), link)
    return config_options(session, catalog)


def set_mode(
    session: Session, catalog: ProviderCatalog, mode_id: str, link: ClientLink | None
) -> None:
    changed = apply_mode(session.settings, mode_id)
    _apply(session, catalog, changed, mode_of(session.settings), link)


def apply_persisted(session: Session, persisted: Mapping[str, Any]) -> None:
    """Take the provider, model, approval policy and sandbox mode of another session's
    persisted settings (a fork runs as its source did)."""
    settings = session.settings.copy()
    settings.provider = persisted.get("model_provider") or settings.provider
    if persisted.get("backend", "native") == "native":  # a CLI's model is not the provider's
        settings.model = persisted.get("model") or settings.model
    settings.approval_policy = persisted.get("approval_policy") or settings.approval_policy
    settings.sandbox_mode = persisted.get("sandbox_mode") or settings.sandbox_mode
    session.settings = settings
    session.file.append("event", {"kind": "config", "settings": settings.persisted()})


def _check_option(session: Session, catalog: ProviderCatalog, config_id: str, value: Any) -> None:
    """Refuse at once what would only fail at the next prompt: a model the provider does
    not have, a provider without credentials."""
    if config_id == "model" and isinstance(value, str) and value.strip():
        spec = catalog.get(session.settings.provider)
        problem = spec.model_problem(value.strip())
        if problem is not None and spec.wire_api == "offline":
            problem = offline_model_problem(
                value.strip(), catalog, auto=False, choose=PROVIDER_OPTION
            )
        if problem is not None:
            raise InvalidParams(
                problem,
                [
                    Issue(
                        key="model",
                        message="not a model of this provider",
                        value=value,
                        valid=spec.model_ids,
                        source="params",
                    )
                ],
            )
    if config_id == "provider" and isinstance(value, str) and value in catalog.ids():
        spec = catalog.get(value)
        if catalog.credentials(spec) is None:
            raise AuthRequired(spec.id, catalog.missing_credentials_fix(spec))


def _apply(
    session: Session,
    catalog: ProviderCatalog,
    settings: SessionSettings,
    before_mode: str,
    link: ClientLink | None,
) -> None:
    session.settings = settings
    session.file.append("event", {"kind": "config", "settings": settings.persisted()})
    if link is not None:
        mode = mode_of(settings)
        link.emit(
            session.id,
            ConfigChanged(
                options=config_options(session, catalog),
                mode_id=mode,
                mode_changed=mode != before_mode,
            ),
        )
