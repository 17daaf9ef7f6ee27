"""The built-in provider ids: plain constants, readable without the config models (pydantic).

The provider catalog lists these at `initialize`, before anything needs a model.
"""

from __future__ import annotations

from typing import Final

__all__ = ["AUTO", "BUILTIN_PROVIDER_IDS"]

BUILTIN_PROVIDER_IDS: Final[tuple[str, ...]] = ("openai", "anthropic", "openrouter", "offline")
"""Provider ids the catalog knows without configuration (in `auto` preference order, then offline).

`[model_providers.<id>]` for one of these overrides only the fields it sets."""

AUTO: Final = "auto"
"""`model_provider = "auto"`: the first built-in provider with credentials (the default)."""
