"""Cody's wire contract: ACP v1 plus `_cody/*` extensions, as pydantic models.

This package holds models only; it never imports the daemon or the clients.
"""

from __future__ import annotations

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
