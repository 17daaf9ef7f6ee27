"""MCP servers as tools: specs (config / `session/new`), the per-session manager, the tools.

Importing this package is cheap: the `mcp` SDK is imported (in a thread) only when a session's
manager first starts its servers. See manager.py for the lifecycle and its invariants.
"""

from __future__ import annotations

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
