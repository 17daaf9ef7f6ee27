"""`_cody/*` extension methods (PROTOCOL.md "Extensions")."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._base import WireModel

__all__ = [
    "ModelInfo",
    "ModelsListResult",
    "ProviderModels",
    "ToolInfo",
    "ToolsListParams",
    "ToolsListResult",
]


class ToolsListParams(WireModel):
    session_id: str | None = None


class ToolInfo(WireModel):
    name: str
    description: str
    requires_approval: bool
    json_schema: dict[str, Any] = Field(alias="schema")
    """The JSON schema of the tool's arguments, as advertised to the model."""


class ToolsListResult(WireModel):
    tools: list[ToolInfo]


class ModelInfo(WireModel):
    id: str
    context_window: int


class ProviderModels(WireModel):
    id: str
    name: str
    wire_api: str
    available: bool
    default_model: str
    models: list[ModelInfo]


class ModelsListResult(WireModel):
    providers: list[ProviderModels]
