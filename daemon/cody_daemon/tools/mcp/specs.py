"""What an MCP server is, for a session: `McpServerSpec`, built from config or `session/new`.

Sources: `[mcp_servers.<name>]` in the configuration (`specs_from_config`) and the ACP
`mcpServers` list of `session/new` / `session/load` / `session/resume` / fork
(`specs_from_session`); `build_specs` merges both. Invariants:

- A session-provided server with the same name as a configured one replaces it, but keeps the
  configured `startup_timeout_s`, `tool_timeout_s`, `requires_approval` and
  `trust_annotations`, so a user can tune (and distrust) servers a client injects over ACP.
- `env_vars` names variables of the daemon's environment passed to a stdio server; they join
  its `env` (and so count as secrets to redact when their names or values look like ones).
- Disabled configured servers (`enabled = false`) are left out.
- A configured server whose `bearer_token_env_var` is not set is kept, with `unavailable`
  saying why: the manager reports it `failed` with that reason instead of skipping it silently.
- An ACP `sse` server is rejected with `McpSpecError` (Cody advertises `mcpCapabilities.sse =
  false`), and so is a name given twice in one `mcpServers` list.
- Secrets (env values, headers) never appear in a spec's repr.

This module does not import the `mcp` SDK (it is heavy; see manager.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from cody_protocol.session import (
    EnvVariable,
    HttpHeader,
    McpServer,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
)

from ...config.model import McpServerConfig

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_S",
    "DEFAULT_TOOL_TIMEOUT_S",
    "McpHttp",
    "McpServerSpec",
    "McpSpecError",
    "McpStdio",
    "build_specs",
    "merge_specs",
    "spec_from_config",
    "specs_from_config",
    "specs_from_session",
]

DEFAULT_STARTUP_TIMEOUT_S = 10.0
DEFAULT_TOOL_TIMEOUT_S = 60.0


class McpSpecError(ValueError):
    """An MCP server description the daemon cannot use (the message says why)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpStdio:
    """A server started as `command *args`, speaking MCP over its stdin/stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)
    """Added to a minimal inherited environment (HOME, PATH, ...); may hold secrets."""
    cwd: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class McpHttp:
    """A streamable-HTTP server at `url`."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)
    """Sent with every request (including a resolved bearer token); may hold secrets."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerSpec:
    name: str
    transport: McpStdio | McpHttp
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    requires_approval: bool | None = None
    """True: every tool asks; False: none does; None: the tool annotations decide."""
    trust_annotations: bool = True
    """False: `readOnlyHint` is ignored (the server's tools ask unless requires_approval is
    False)."""
    source: Literal["config", "session"] = "config"
    unavailable: str | None = None
    """Why this server cannot be started at all (reported as its `failed` reason)."""

    @property
    def config_key(self) -> str:
        """Where a user tunes this server, for error messages."""
        return f"[mcp_servers.{self.name}]"


def spec_from_config(
    name: str,
    config: McpServerConfig,
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
) -> McpServerSpec:
    """One `[mcp_servers.<name>]` entry; `env` resolves `bearer_token_env_var`.

    A relative `cwd` in the entry is resolved against `cwd` (the session's directory), which
    is also the server's directory when the entry has none.
    """
    unavailable: str | None = None
    transport: McpStdio | McpHttp
    if config.url is not None:
        headers = dict(config.http_headers)
        var = config.bearer_token_env_var
        if var is not None:
            token = env.get(var)
            if token:
                headers["Authorization"] = f"Bearer {token}"
            else:
                unavailable = (
                    f"bearer_token_env_var {var} is not set in the daemon's environment; "
                    f"export it or remove bearer_token_env_var from [mcp_servers.{name}]"
                )
        transport = McpHttp(url=config.url, headers=headers)
    elif config.command is not None:
        server_cwd = config.cwd
        if server_cwd is not None and cwd is not None:
            server_cwd = os.path.join(cwd, os.path.expanduser(server_cwd))
        passed = {name: env[name] for name in config.env_vars if name in env}
        transport = McpStdio(
            command=config.command,
            args=tuple(config.args),
            env={**passed, **config.env},
            cwd=server_cwd or cwd,
        )
    else:  # the config model guarantees exactly one of command / url
        raise McpSpecError(f"[mcp_servers.{name}]: set `command` or `url`")
    return McpServerSpec(
        name=name,
        transport=transport,
        startup_timeout_s=config.startup_timeout_s,
        tool_timeout_s=config.tool_timeout_s,
        requires_approval=config.requires_approval,
        trust_annotations=config.trust_annotations,
        source="config",
        unavailable=unavailable,
    )


def specs_from_config(
    servers: Mapping[str, McpServerConfig],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
) -> list[McpServerSpec]:
    """The enabled `[mcp_servers.*]` entries, in configuration order."""
    return [
        spec_from_config(name, config, env=env, cwd=cwd)
        for name, config in servers.items()
        if config.enabled
    ]


def specs_from_session(
    servers: Sequence[McpServer], *, cwd: str | None = None
) -> list[McpServerSpec]:
    """The `mcpServers` of `session/new` (and load/resume/fork), with the default timeouts.

    stdio servers run in `cwd` (the session's directory). Raises McpSpecError for an `sse`
    server or a duplicated name.
    """
    specs: list[McpServerSpec] = []
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise McpSpecError(f"mcpServers names the MCP server {server.name!r} twice")
        seen.add(server.name)
        transport: McpStdio | McpHttp
        if isinstance(server, McpServerSse):
            raise McpSpecError(
                f"MCP server {server.name!r} uses the sse transport, which Cody does not support "
                '(initialize advertises mcpCapabilities.sse = false); use type "http" '
                "(streamable HTTP) or a stdio command"
            )
        if isinstance(server, McpServerHttp):
            transport = McpHttp(url=server.url, headers=_pairs(server.headers))
        else:
            assert isinstance(server, McpServerStdio)
            transport = McpStdio(
                command=server.command, args=tuple(server.args), env=_pairs(server.env), cwd=cwd
            )
        specs.append(McpServerSpec(name=server.name, transport=transport, source="session"))
    return specs


def merge_specs(
    configured: Iterable[McpServerSpec], session: Iterable[McpServerSpec]
) -> list[McpServerSpec]:
    """Configured servers then session ones; a session server replaces a same-named one.

    The replacement keeps the configured timeouts and approval settings (see module doc).
    """
    merged = {spec.name: spec for spec in configured}
    for spec in session:
        base = merged.pop(spec.name, None)
        merged[spec.name] = (
            spec
            if base is None
            else replace(
                spec,
                startup_timeout_s=base.startup_timeout_s,
                tool_timeout_s=base.tool_timeout_s,
                requires_approval=base.requires_approval,
                trust_annotations=base.trust_annotations,
            )
        )
    return list(merged.values())


def build_specs(
    config_servers: Mapping[str, McpServerConfig],
    session_servers: Sequence[McpServer],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
) -> list[McpServerSpec]:
    """Everything a session's `McpSessionManager` needs; raises McpSpecError (see above)."""
    # Disabled configured entries still lend their timeouts to a same-named session server.
    tuning = [
        spec_from_config(name, config, env=env, cwd=cwd) for name, config in config_servers.items()
    ]
    enabled = {name for name, config in config_servers.items() if config.enabled}
    session = specs_from_session(session_servers, cwd=cwd)
    merged = merge_specs(tuning, session)
    names = {spec.name for spec in session}
    return [spec for spec in merged if spec.name in enabled or spec.name in names]


def _pairs(items: Iterable[EnvVariable | HttpHeader]) -> dict[str, str]:
    """ACP `[{name, value}]` lists (env variables, headers) as a dict; later names win."""
    return {item.name: item.value for item in items}
