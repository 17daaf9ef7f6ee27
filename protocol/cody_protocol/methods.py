"""Method names on the wire."""

from __future__ import annotations

__all__ = [
    "AUTHENTICATE",
    "CANCEL_REQUEST_ACP",
    "CANCEL_REQUEST_LSP",
    "CODY_AGENTS_LIST",
    "CODY_MCP_STATUS",
    "CODY_HISTORY_IMPORT",
    "CODY_HISTORY_LIST",
    "CODY_HISTORY_READ",
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
    "SESSION_CANCEL",
    "SESSION_CLOSE",
    "LOGOUT",
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
]

INITIALIZE = "initialize"
AUTHENTICATE = "authenticate"
SHUTDOWN = "shutdown"
EXIT = "exit"
SESSION_NEW = "session/new"
SESSION_LOAD = "session/load"
SESSION_RESUME = "session/resume"
SESSION_LIST = "session/list"
SESSION_CLOSE = "session/close"
SESSION_DELETE = "session/delete"
SESSION_FORK = "session/fork"
"""ACP's (unstable in SDK 2.4.0) fork; `_cody/session/fork` is its alias."""
LOGOUT = "logout"
SESSION_PROMPT = "session/prompt"
SESSION_CANCEL = "session/cancel"
SESSION_SET_MODE = "session/set_mode"
SESSION_SET_CONFIG_OPTION = "session/set_config_option"
SESSION_UPDATE = "session/update"
SESSION_REQUEST_PERMISSION = "session/request_permission"
FS_READ_TEXT_FILE = "fs/read_text_file"
FS_WRITE_TEXT_FILE = "fs/write_text_file"
CANCEL_REQUEST_LSP = "$/cancelRequest"
CANCEL_REQUEST_ACP = "$/cancel_request"
CODY_SESSION_FORK = "_cody/session/fork"
CODY_SESSION_COMPACT = "_cody/session/compact"
CODY_TOOLS_LIST = "_cody/tools/list"
CODY_MODELS_LIST = "_cody/models/list"
CODY_MCP_STATUS = "_cody/mcp/status"
CODY_SESSION_HISTORY = "_cody/session/history"
CODY_HISTORY_LIST = "_cody/history/list"
CODY_HISTORY_READ = "_cody/history/read"
CODY_HISTORY_IMPORT = "_cody/history/import"
CODY_AGENTS_LIST = "_cody/agents/list"
CODY_PERMISSIONS_LIST = "_cody/permissions/list"
CODY_PERMISSIONS_REMOVE = "_cody/permissions/remove"
