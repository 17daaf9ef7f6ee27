"""MCP servers as tools: specs (config / `session/new`), the per-session manager, the tools,
the resource tools and the prompts as slash commands (docs/mcp.md).

Importing this package is cheap: the `mcp` SDK is imported (in a thread) only when a session's
manager first starts its servers, and each name below loads its module on first access (a
session without MCP servers never loads the manager: bench/README.md, "startup"). See
manager.py for the lifecycle and its invariants.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import McpState, McpStatus
    from .hooks import Elicitation, ElicitationAnswer, McpClientHooks
    from .manager import McpSessionManager
    from .prompts import McpPromptCommand, PromptArgumentError
    from .resources import ListMcpResourcesTool, ListMcpResourceTemplatesTool, ReadMcpResourceTool
    from .specs import (
        McpHttp,
        McpServerSpec,
        McpSpecError,
        McpStdio,
        build_specs,
        merge_specs,
        spec_from_config,
        specs_from_config,
        specs_from_session,
    )
    from .tool import McpTool, tool_name

__all__ = [
    "SESSION_TOOLS",
    "Elicitation",
    "ElicitationAnswer",
    "ListMcpResourceTemplatesTool",
    "ListMcpResourcesTool",
    "McpClientHooks",
    "McpHttp",
    "McpPromptCommand",
    "McpServerSpec",
    "McpSessionManager",
    "McpSpecError",
    "McpState",
    "McpStatus",
    "McpStdio",
    "McpTool",
    "PromptArgumentError",
    "ReadMcpResourceTool",
    "build_specs",
    "merge_specs",
    "spec_from_config",
    "specs_from_config",
    "specs_from_session",
    "tool_name",
]

SESSION_TOOLS = ("listMcpResources", "listMcpResourceTemplates", "readMcpResource")
"""The tools a session's MCP manager adds besides the servers' own (`mcp__*`)."""

_HOMES = {
    "McpSessionManager": "manager",
    "McpState": "connection",
    "McpStatus": "connection",
    "Elicitation": "hooks",
    "ElicitationAnswer": "hooks",
    "McpClientHooks": "hooks",
    "McpPromptCommand": "prompts",
    "PromptArgumentError": "prompts",
    "ListMcpResourcesTool": "resources",
    "ListMcpResourceTemplatesTool": "resources",
    "ReadMcpResourceTool": "resources",
    "McpTool": "tool",
    "tool_name": "tool",
    **dict.fromkeys(
        (
            "McpHttp",
            "McpServerSpec",
            "McpSpecError",
            "McpStdio",
            "build_specs",
            "merge_specs",
            "spec_from_config",
            "specs_from_config",
            "specs_from_session",
        ),
        "specs",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
