"""Validation against ACP's own JSON schema (tests/fixtures/acp/schema.json, SDK 2.4.0)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "fixtures" / "acp" / "schema.json"
UNSTABLE_SCHEMA_PATH = SCHEMA_PATH.parent / "schema.unstable.json"
"""The SDK's schema with the features still marked unstable (`session/fork`, prompt usage)."""


@functools.cache
def _defs(unstable: bool = False) -> dict[str, Any]:
    path = UNSTABLE_SCHEMA_PATH if unstable else SCHEMA_PATH
    schema = json.loads(path.read_text(encoding="utf-8"))
    defs: dict[str, Any] = schema["$defs"]
    return defs


@functools.cache
def validator(definition: str, unstable: bool = False) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": _defs(unstable)})


def acp_errors(definition: str, instance: Any, *, unstable: bool = False) -> list[str]:
    """Human-readable schema violations of `instance` against ACP's `definition` (from the
    unstable schema when `unstable`)."""
    return [
        f"{'/'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in validator(definition, unstable).iter_errors(instance)
    ]
