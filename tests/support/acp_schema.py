"""Validation against ACP's own JSON schema (tests/fixtures/acp/schema.json, SDK 2.4.0)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "fixtures" / "acp" / "schema.json"


@functools.cache
def _defs() -> dict[str, Any]:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    defs: dict[str, Any] = schema["$defs"]
    return defs


@functools.cache
def validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": _defs()})


def acp_errors(definition: str, instance: Any) -> list[str]:
    """Human-readable schema violations of `instance` against ACP's `definition`."""
    return [
        f"{'/'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in validator(definition).iter_errors(instance)
    ]
