"""Pydantic models at the rpc boundary, recognised without importing pydantic.

The daemon answers `initialize` before anything imports pydantic (docs/architecture.md,
"Starting fast"). A model instance can only exist once some module has imported pydantic, so
until then nothing is a model and these checks cost a dict lookup.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["dump", "is_model", "is_model_class"]


def is_model(value: Any) -> bool:
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def is_model_class(cls: Any) -> bool:
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)


def dump(model: Any) -> Any:
    """The model's wire form: JSON values, camelCase aliases, no `None` members."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
