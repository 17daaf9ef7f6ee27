"""Cody's wire contract: ACP v1 plus `_cody/*` extensions, as pydantic models.

This package holds models only; it never imports the daemon or the clients.

Importing the package (or a light submodule such as `cody_protocol.methods`) builds no
model: the names below load their module on first access, so a process pays for the
models it uses (the daemon answers `initialize` before it needs a turn's models).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import WireModel
    from .content import (
        ContentBlock,
        ContentToolCallContent,
        DiffToolCallContent,
        EmbeddedResource,
        ResourceLink,
        TextContent,
        TextResourceContents,
        ToolCallContent,
    )
    from .errors import ErrorCode, ProviderErrorData, RpcError
    from .permission import (
        PERMISSION_OPTIONS,
        PermissionToolCall,
        RequestPermissionParams,
        RequestPermissionResult,
    )
    from .prompt import PromptParams, PromptResult, StopReason, TokenUsage, TurnUsage
    from .updates import SessionNotification, SessionUpdate

__all__ = [
    "PERMISSION_OPTIONS",
    "ContentBlock",
    "ContentToolCallContent",
    "DiffToolCallContent",
    "EmbeddedResource",
    "ErrorCode",
    "PermissionToolCall",
    "PromptParams",
    "PromptResult",
    "ProviderErrorData",
    "RequestPermissionParams",
    "RequestPermissionResult",
    "ResourceLink",
    "RpcError",
    "SessionNotification",
    "SessionUpdate",
    "StopReason",
    "TextContent",
    "TextResourceContents",
    "TokenUsage",
    "ToolCallContent",
    "TurnUsage",
    "WireModel",
]

__version__ = "0.1.0"

_HOMES = {
    "WireModel": "_base",
    **dict.fromkeys(
        (
            "ContentBlock",
            "ContentToolCallContent",
            "DiffToolCallContent",
            "EmbeddedResource",
            "ResourceLink",
            "TextContent",
            "TextResourceContents",
            "ToolCallContent",
        ),
        "content",
    ),
    **dict.fromkeys(("ErrorCode", "ProviderErrorData", "RpcError"), "errors"),
    **dict.fromkeys(
        (
            "PERMISSION_OPTIONS",
            "PermissionToolCall",
            "RequestPermissionParams",
            "RequestPermissionResult",
        ),
        "permission",
    ),
    **dict.fromkeys(
        ("PromptParams", "PromptResult", "StopReason", "TokenUsage", "TurnUsage"), "prompt"
    ),
    **dict.fromkeys(("SessionNotification", "SessionUpdate"), "updates"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
