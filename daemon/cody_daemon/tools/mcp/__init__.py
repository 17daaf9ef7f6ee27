"""MCP servers as tools: specs (config / `session/new`), the per-session manager, the tools.

Importing this package is cheap: the `mcp` SDK is imported (in a thread) only when a session's
manager first starts its servers, and each name below loads its module on first access (a
session without MCP servers never loads the manager: bench/README.md, "startup"). See
manager.py for the lifecycle and its invariants.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .manager import McpSessionManager, McpState, McpStatus
    from .read_resource import ReadMcpResourceTool
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
    "McpHttp",
    "McpServerSpec",
    "McpSessionManager",
    "McpSpecError",
    "McpState",
    "McpStatus",
    "McpStdio",
    "McpTool",
    "ReadMcpResourceTool",
    "build_specs",
    "merge_specs",
    "spec_from_config",
    "specs_from_config",
    "specs_from_session",
    "tool_name",
]

_HOMES = {
    "McpSessionManager": "manager",
    "McpState": "manager",
    "McpStatus": "manager",
    "ReadMcpResourceTool": "read_resource",
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
