"""The key never reaches the model: what the engine knows is secret, and the one place tool
results are redacted.

`secret_guard` gathers every credential the daemon reads or is configured with: the `env_key`
of every provider in the session's catalog and of every `[tools.*]` table (whatever the
variable's name), MCP `bearer_token_env_var`s, configured provider and MCP headers, MCP server
environments (values under credential-like names, or that look like tokens), and the login
files of the Codex CLI (`$CODEX_HOME/auth.json`, `~/.codex/auth.json`) and Claude Code
(`$CLAUDE_CONFIG_DIR/.credentials.json`, `~/.claude/.credentials.json`).

The turn (engine/turn.py) applies it at three points, so nothing a tool returns reaches the
session file, the client or the model unredacted: every result (`redact_result`, before it
is stored or sent), live output (`guard.redact` on each update) and approval previews
(`redact_content`). Before a call runs, `credential_refusal` refuses file tools on login
files, in every approval policy and sandbox mode (refused, not asked: no answer could make
handing a login to the model right, and a user who wants to see one can open it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cody_protocol.content import ToolCallContent

from ..config.model import McpServerConfig, ToolConfig
from ..policy.secrets import (
    MIN_SECRET_CHARS,
    SecretGuard,
    SecretSources,
    looks_like_token,
    secret_name,
)
from ..providers.catalog import ProviderSpec, default_claude_dir, default_codex_home
from ..tools.base import PathRead, ToolResult
from ..tools.mcp.specs import McpHttp, McpServerSpec, McpStdio

__all__ = [
    "credential_refusal",
    "login_files",
    "redact_content",
    "redact_result",
    "secret_guard",
]


def login_files(env: Mapping[str, str]) -> tuple[Path, ...]:
    """The login files of the Codex CLI and Claude Code, configured place and default."""
    home = Path(env.get("HOME") or "~").expanduser()
    return (
        default_codex_home(env) / "auth.json",
        home / ".codex" / "auth.json",
        default_claude_dir(env) / ".credentials.json",
        home / ".claude" / ".credentials.json",
    )


def secret_guard(
    *,
    env: Mapping[str, str],
    providers: Iterable[ProviderSpec],
    tool_config: Mapping[str, ToolConfig],
    mcp_config: Mapping[str, McpServerConfig],
    mcp_servers: Sequence[McpServerSpec] = (),
) -> SecretGuard:
    """The guard for one turn (see the module docstring)."""
    names: set[str] = set()
    values: list[str] = []
    for spec in providers:
        if spec.env_key:
            names.add(spec.env_key)
        values += _header_secrets(spec.headers)
    names.update(config.env_key for config in tool_config.values() if config.env_key)
    for server in mcp_config.values():
        if server.bearer_token_env_var:
            names.add(server.bearer_token_env_var)
        values += _header_secrets(server.http_headers)
        values += _environment_secrets(server.env)
    for server_spec in mcp_servers:
        transport = server_spec.transport
        if isinstance(transport, McpStdio):
            values += _environment_secrets(transport.env)
        elif isinstance(transport, McpHttp):
            values += _header_secrets(transport.headers)
    return SecretGuard(
        env=env,
        sources=SecretSources(
            env_names=frozenset(names), values=tuple(values), login_files=login_files(env)
        ),
    )


def _environment_secrets(environment: Mapping[str, str]) -> list[str]:
    return [
        value
        for name, value in environment.items()
        if (secret_name(name) and len(value) >= MIN_SECRET_CHARS) or looks_like_token(value)
    ]


def _header_secrets(headers: Mapping[str, str]) -> list[str]:
    """Header values (and their words: `Bearer <token>`) under credential names, or tokens."""
    found: list[str] = []
    for name, value in headers.items():
        for part in (value, *value.split()):
            if len(part) >= MIN_SECRET_CHARS and (secret_name(name) or looks_like_token(part)):
                found.append(part)
    return found


def redact_result(guard: SecretGuard, result: ToolResult) -> ToolResult:
    """`result` with every known secret replaced, in what the model, the client and the
    session file get: the output, the display content and the metadata."""
    raw = guard.redact_json(result.raw_output) if result.raw_output is not None else None
    return ToolResult(
        output=guard.redact(result.output),
        success=result.success,
        raw_output=raw,
        content=redact_content(guard, result.content),
        locations=result.locations,
        images=result.images,
    )


def redact_content(guard: SecretGuard, content: list[ToolCallContent]) -> list[ToolCallContent]:
    redacted: list[ToolCallContent] = []
    for item in content:
        data: Any = guard.redact_json(item.model_dump(mode="json", by_alias=True))
        redacted.append(type(item).model_validate(data))
    return redacted


def credential_refusal(guard: SecretGuard, reads: Iterable[PathRead]) -> str | None:
    """Why the call may not run (it would read a login file), or None."""
    for read in reads:
        if guard.is_login_file(read.path):
            return (
                f"{read.path} holds login credentials; tools may not read it "
                "(in any mode). Ask the user if something in it is needed."
            )
        below = guard.login_file_below(read.path) if read.contents_below else None
        if below is not None:
            return (
                f"searching {read.path} would read {below}, which holds login credentials; "
                "tools may not read it (in any mode). Search a narrower path."
            )
    return None
