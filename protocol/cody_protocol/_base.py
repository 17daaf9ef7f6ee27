"""Base class for every wire model.

Invariants: field names are snake_case in Python and camelCase on the wire; unknown fields
in incoming params are ignored (docs/protocol.md "Compatibility"); `_meta` is exposed
as the `meta` attribute; dumps drop `None` so optional fields are simply absent.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["WireModel"]


class WireModel(BaseModel):
    """A pydantic model with camelCase aliases, tolerant of unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        defer_build=True,
    )

    def wire(self) -> dict[str, Any]:
        """Return the JSON-ready dict for the wire (camelCase, no `None` values)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
