"""Every method on the wire, in one table (`METHODS`), each name also a constant.

One `Method` per name: who sends it, request or notification, its params and result models,
what it does to a session, where it is specified and how stable it is. Lists elsewhere are
derived from it, never kept by hand: the JSON Schemas' top-level models (schema.py),
`initialize`'s `_meta.cody.extensions` (`extensions()`), the daemon's handler check (every
method it serves has exactly one handler: rpc/handlers.py), the warm daemon's attach rules
(`Method.session`, rpc/sharing.py), the fuzzed methods (tests/reliability), the VS Code
extension's `Method` constants (generated: `python -m cody_protocol.schema --write`) and the
editor plugins' method check (tests/unit/test_method_table.py).

Invariants:
- Plain data: models are named as `"module:Class"` strings and resolved on use
  (`resolve_model`), so importing this module builds no model and imports no pydantic (the
  daemon answers `initialize` without either: docs/architecture.md "Starting fast").
- A name is registered once (a second `request(...)` of the same name raises at import).

Adding a `_cody/*` method: its models in their module, one `request(...)` (or
`notification(...)`) line here, one handler in rpc/handlers.py (or rpc/history_handlers.py);
then `python -m cody_protocol.schema --write` and a row in docs/protocol.md's extension
table. tests/unit/test_method_table.py fails when any of them is missing.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "AUTHENTICATE",
    "CANCEL_REQUEST_ACP",
    "CANCEL_REQUEST_LSP",
    "CODY_AGENTS_LIST",
    "CODY_CONFIG_CHECK",
    "CODY_DIAGNOSTICS",
    "CODY_HISTORY_IMPORT",
    "CODY_HISTORY_LIST",
    "CODY_HISTORY_READ",
    "CODY_LSP_SERVERS",
    "CODY_MCP_STATUS",
    "CODY_MODELS_LIST",
    "CODY_PERMISSIONS_LIST",
    "CODY_PERMISSIONS_REMOVE",
    "CODY_SESSION_COMPACT",
    "CODY_SESSION_FORK",
    "CODY_SESSION_HISTORY",
    "CODY_TOOLS_LIST",
    "EXIT",
    "FS_READ_TEXT_FILE",
    "FS_WRITE_TEXT_FILE",
    "INITIALIZE",
    "LOGOUT",
    "METHODS",
    "SESSION_CANCEL",
    "SESSION_CLOSE",
    "SESSION_DELETE",
    "SESSION_FORK",
    "SESSION_LIST",
    "SESSION_LOAD",
    "SESSION_NEW",
    "SESSION_PROMPT",
    "SESSION_REQUEST_PERMISSION",
    "SESSION_RESUME",
    "SESSION_SET_CONFIG_OPTION",
    "SESSION_SET_MODE",
    "SESSION_UPDATE",
    "SHUTDOWN",
    "Method",
    "SessionUse",
    "extensions",
    "handler_problems",
    "resolve_model",
    "served_by_handlers",
]

Sender = Literal["client", "agent", "both"]
"""Who sends it: `client` (the daemon serves it), `agent` (the daemon sends it), `both`."""

SessionUse = Literal["creates", "loads", "resumes", "runs", "closes", "deletes"]
"""What a method does to the session it names (rpc/sharing.py attaches connections by it):
`creates` a new one (its id is in the result: `session/new`, a fork, an import), `loads` one
and replays it to the caller alone, `resumes` one, `runs` a turn on a live one (prompt,
compaction), `closes` or `deletes` one."""

Spec = Literal["acp", "lsp", "cody"]
"""Where it is specified: ACP v1, JSON-RPC/LSP's lifecycle, or Cody's own `_cody/*`."""

Stability = Literal["stable", "unstable"]
"""For ACP: `unstable` while only ACP's unstable schema has it (a test compares them). For
Cody's own: `unstable` while its params may still grow (docs/protocol.md)."""


class Method:
    """One method's facts (read-only). A plain class, not a dataclass: building a dataclass
    costs about a millisecond, and this module is on the daemon's `initialize` path."""

    __slots__ = (
        "alias_of",
        "dispatcher",
        "kind",
        "name",
        "params",
        "result",
        "sender",
        "session",
        "spec",
        "stability",
    )
    name: str
    sender: Sender
    kind: Literal["request", "notification"]
    params: str | None
    """The params model, `"module:Class"` in cody_protocol (None: no params, or none typed)."""
    result: str | None
    """The result model (None: `{}` or `null`, or a notification)."""
    session: SessionUse | None
    spec: Spec
    stability: Stability
    alias_of: str | None
    """Another name for that method (same models, same handler)."""
    dispatcher: bool
    """Handled by the frame dispatcher (rpc/server.py) before any handler: no handler."""

    def __init__(
        self,
        *,
        name: str,
        sender: Sender,
        kind: Literal["request", "notification"],
        spec: Spec,
        params: str | None = None,
        result: str | None = None,
        session: SessionUse | None = None,
        stability: Stability = "stable",
        alias_of: str | None = None,
        dispatcher: bool = False,
    ) -> None:
        facts = {
            "name": name,
            "sender": sender,
            "kind": kind,
            "spec": spec,
            "params": params,
            "result": result,
            "session": session,
            "stability": stability,
            "alias_of": alias_of,
            "dispatcher": dispatcher,
        }
        for key, value in facts.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"Method {self.name!r} is read-only")

    def __repr__(self) -> str:
        return f"<Method {self.name} ({self.sender} {self.kind})>"

    @property
    def extension(self) -> bool:
        """A `_cody/*` method: listed in `initialize`'s extensions when the daemon serves it."""
        return self.spec == "cody"

    @property
    def served(self) -> bool:
        """The daemon answers (or takes) it from a client."""
        return self.sender in ("client", "both")

    @property
    def has_handler(self) -> bool:
        """Served through the daemon's handler table (rpc/handlers.py)."""
        return self.served and not self.dispatcher

    def models(self) -> tuple[str, ...]:
        return tuple(ref for ref in (self.params, self.result) if ref is not None)


_TABLE: dict[str, Method] = {}


def _add(method: Method) -> str:
    if method.name in _TABLE:
        raise ValueError(f"method {method.name!r} is registered twice")
    if (method.spec == "cody") != method.name.startswith("_cody/"):
        raise ValueError(f"{method.name!r}: `_cody/*` names are exactly the Cody extensions")
    _TABLE[method.name] = method
    return method.name


def request(
    name: str,
    *,
    spec: Spec,
    sender: Sender = "client",
    params: str | None = None,
    result: str | None = None,
    session: SessionUse | None = None,
    stability: Stability = "stable",
    alias_of: str | None = None,
) -> str:
    """Register a request; returns its name (for the constant)."""
    return _add(
        Method(
            name=name,
            sender=sender,
            kind="request",
            params=params,
            result=result,
            session=session,
            spec=spec,
            stability=stability,
            alias_of=alias_of,
        )
    )


def notification(
    name: str,
    *,
    spec: Spec,
    sender: Sender = "client",
    params: str | None = None,
    stability: Stability = "stable",
    dispatcher: bool = False,
) -> str:
    """Register a notification; returns its name (for the constant)."""
    return _add(
        Method(
            name=name,
            sender=sender,
            kind="notification",
            params=params,
            spec=spec,
            stability=stability,
            dispatcher=dispatcher,
        )
    )


# -- lifecycle -------------------------------------------------------------------------------

INITIALIZE = request(
    "initialize",
    params="initialize:InitializeParams",
    result="initialize:InitializeResult",
    spec="acp",
)
AUTHENTICATE = request("authenticate", params="initialize:AuthenticateParams", spec="acp")
LOGOUT = request("logout", result="initialize:LogoutResult", spec="acp")
SHUTDOWN = request("shutdown", spec="lsp")
EXIT = notification("exit", spec="lsp", dispatcher=True)
CANCEL_REQUEST_LSP = notification("$/cancelRequest", sender="both", spec="lsp", dispatcher=True)
CANCEL_REQUEST_ACP = notification("$/cancel_request", sender="both", spec="acp", dispatcher=True)

# -- sessions --------------------------------------------------------------------------------

SESSION_NEW = request(
    "session/new",
    params="session:NewSessionParams",
    result="session:NewSessionResult",
    session="creates",
    spec="acp",
)
SESSION_LOAD = request(
    "session/load",
    params="session:LoadSessionParams",
    result="session:SessionStateResult",
    session="loads",
    spec="acp",
)
SESSION_RESUME = request(
    "session/resume",
    params="session:LoadSessionParams",
    result="session:SessionStateResult",
    session="resumes",
    spec="acp",
)
SESSION_LIST = request(
    "session/list",
    params="session:ListSessionsParams",
    result="session:ListSessionsResult",
    spec="acp",
)
SESSION_CLOSE = request(
    "session/close", params="session:SessionIdParams", session="closes", spec="acp"
)
SESSION_DELETE = request(
    "session/delete", params="session:SessionIdParams", session="deletes", spec="acp"
)
SESSION_FORK = request(
    "session/fork",
    params="session:ForkSessionParams",
    result="session:ForkSessionResult",
    session="creates",
    spec="acp",
    stability="unstable",
)
"""ACP's (unstable in SDK 2.4.0) fork; `_cody/session/fork` is its alias."""
SESSION_PROMPT = request(
    "session/prompt",
    params="prompt:PromptParams",
    result="prompt:PromptResult",
    session="runs",
    spec="acp",
)
SESSION_CANCEL = notification("session/cancel", params="prompt:CancelParams", spec="acp")
SESSION_SET_MODE = request("session/set_mode", params="session:SetModeParams", spec="acp")
SESSION_SET_CONFIG_OPTION = request(
    "session/set_config_option",
    params="session:SetConfigOptionParams",
    result="session:SetConfigOptionResult",
    spec="acp",
)

# -- the daemon's requests and notifications to the client -----------------------------------

SESSION_UPDATE = notification(
    "session/update", sender="agent", params="updates:SessionNotification", spec="acp"
)
SESSION_REQUEST_PERMISSION = request(
    "session/request_permission",
    sender="agent",
    params="permission:RequestPermissionParams",
    result="permission:RequestPermissionResult",
    spec="acp",
)
FS_READ_TEXT_FILE = request(
    "fs/read_text_file",
    sender="agent",
    params="files:ReadTextFileParams",
    result="files:ReadTextFileResult",
    spec="acp",
)
FS_WRITE_TEXT_FILE = request(
    "fs/write_text_file", sender="agent", params="files:WriteTextFileParams", spec="acp"
)

# -- Cody's extensions (docs/protocol.md "Extensions") ---------------------------------------

CODY_SESSION_FORK = request(
    "_cody/session/fork",
    params="session:ForkSessionParams",
    result="session:ForkSessionResult",
    session="creates",
    spec="cody",
    alias_of=SESSION_FORK,
)
CODY_SESSION_COMPACT = request(
    "_cody/session/compact",
    params="extensions:CompactSessionParams",
    result="extensions:CompactSessionResult",
    session="runs",
    spec="cody",
)
CODY_TOOLS_LIST = request(
    "_cody/tools/list",
    params="extensions:ToolsListParams",
    result="extensions:ToolsListResult",
    spec="cody",
)
CODY_MODELS_LIST = request("_cody/models/list", result="extensions:ModelsListResult", spec="cody")
CODY_SESSION_HISTORY = request(
    "_cody/session/history",
    params="history:SessionHistoryParams",
    result="history:HistoryReadResult",
    spec="cody",
)
CODY_HISTORY_LIST = request(
    "_cody/history/list",
    params="history:HistoryListParams",
    result="history:HistoryListResult",
    spec="cody",
)
CODY_HISTORY_READ = request(
    "_cody/history/read",
    params="history:HistoryReadParams",
    result="history:HistoryReadResult",
    spec="cody",
)
CODY_HISTORY_IMPORT = request(
    "_cody/history/import",
    params="history:HistoryImportParams",
    result="history:HistoryImportResult",
    session="creates",
    spec="cody",
)
CODY_AGENTS_LIST = request("_cody/agents/list", result="extensions:AgentsListResult", spec="cody")
CODY_CONFIG_CHECK = request(
    "_cody/config/check",
    params="session:NewSessionParams",
    result="extensions:ConfigCheckResult",
    spec="cody",
)
CODY_PERMISSIONS_LIST = request(
    "_cody/permissions/list",
    params="extensions:PermissionsListParams",
    result="extensions:PermissionsListResult",
    spec="cody",
)
CODY_PERMISSIONS_REMOVE = request(
    "_cody/permissions/remove",
    params="extensions:PermissionsRemoveParams",
    result="extensions:PermissionsRemoveResult",
    spec="cody",
)
CODY_MCP_STATUS = notification(
    "_cody/mcp/status", sender="agent", params="extensions:McpStatusNotification", spec="cody"
)
CODY_LSP_SERVERS = request(
    "_cody/lsp/servers",
    params="extensions:LanguageServersParams",
    result="extensions:LanguageServersResult",
    spec="cody",
)
CODY_DIAGNOSTICS = notification(
    "_cody/diagnostics",
    sender="agent",
    params="extensions:DiagnosticsNotification",
    spec="cody",
)

# -- derived ---------------------------------------------------------------------------------

METHODS: Mapping[str, Method] = MappingProxyType(_TABLE)
"""Every method, by name, in the order registered above."""


def extensions() -> tuple[str, ...]:
    """`initialize`'s `_meta.cody.extensions`: every `_cody/*` method the daemon serves.
    (Functions, not constants: an entry added below this line counts too.)"""
    return tuple(m.name for m in METHODS.values() if m.extension and m.served)


def served_by_handlers() -> frozenset[str]:
    """The methods the daemon's handler table must serve, each with exactly one handler."""
    return frozenset(m.name for m in METHODS.values() if m.has_handler)


def handler_problems(registered: Iterable[str]) -> list[str]:
    """How a handler table (the names it registers, in order) disagrees with `METHODS`."""
    names = list(registered)
    want = served_by_handlers()
    problems = [f"{name} has no handler" for name in sorted(want - set(names))]
    problems += [
        f"{name} has a handler but no entry in cody_protocol.methods.METHODS"
        if name not in METHODS
        else f"{name} has a handler but the daemon does not serve it ({METHODS[name].sender})"
        for name in sorted(set(names) - want)
    ]
    problems += [
        f"{name} has {names.count(name)} handlers"
        for name in sorted(set(names))
        if names.count(name) > 1
    ]
    return problems


def resolve_model(ref: str) -> type[Any]:
    """The model class a table entry names (`"session:NewSessionParams"`); imports it."""
    module_name, _, class_name = ref.partition(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    model: type[Any] = getattr(module, class_name)
    return model
