"""What a tool looks like to a model (`ToolSpec`) and what a grant remembers (`GrantKey`).

Shared by providers (which advertise tools), tools (which declare them) and policy (which
keys grants on them), so none of those needs to import another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["GrantKey", "ToolSpec"]

GrantKey = tuple[str, ...]
"""What a session grant or rejection remembers (the protocol reference's "Grant keys")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool as advertised to the model."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""
