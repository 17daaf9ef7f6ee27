"""The VS Code extension's wire types are generated from the checked-in JSON Schema
(cody_protocol/typescript.py) and cannot drift from it; the generator maps the schema's forms
as the extension needs them (tsc itself runs in tests/e2e/test_vscode_extension.py)."""

from __future__ import annotations

from typing import Any

from cody_protocol import schema
from cody_protocol.methods import METHODS
from cody_protocol.typescript import method_key, render_typescript


def test_the_checked_in_types_match_the_schema() -> None:
    assert schema.VSCODE_TYPES_PATH.read_text(encoding="utf-8") == schema.render_vscode_types(), (
        "editor-plugins/vscode/src/protocol/generated.ts is stale: "
        "run `uv run python -m cody_protocol.schema --write` and commit it"
    )


def test_the_types_are_generated_from_the_checked_in_schema_file() -> None:
    """What the extension compiles against is what protocol/schema/ publishes."""
    import json

    checked_in = json.loads(schema.SCHEMA_PATH.read_text(encoding="utf-8"))
    assert render_typescript(checked_in) == schema.VSCODE_TYPES_PATH.read_text(encoding="utf-8")


def test_every_method_has_a_distinct_typescript_key() -> None:
    keys = [method_key(name, method.spec) for name, method in METHODS.items()]
    assert len(set(keys)) == len(keys)
    assert method_key("session/request_permission", "acp") == "sessionRequestPermission"
    assert method_key("_cody/models/list", "cody") == "codyModelsList"
    assert method_key("$/cancelRequest", "lsp") == "cancelRequestLsp"
    assert method_key("$/cancel_request", "acp") == "cancelRequestAcp"


SMALL: dict[str, Any] = {
    "$defs": {
        "Chunk": {
            "type": "object",
            "description": "A chunk.",
            "properties": {
                "kind": {"const": "chunk", "default": "chunk", "type": "string"},
                "text": {"type": "string"},
                "count": {"default": 0, "type": "integer"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "raw": {"default": None},
                "extra": {"additionalProperties": True, "type": "object"},
                "tags": {"items": {"enum": ["a", "b"], "type": "string"}, "type": "array"},
            },
            "required": ["text"],
        },
        "Other": {
            "type": "object",
            "properties": {"kind": {"const": "other", "type": "string"}},
        },
        "Holder": {
            "type": "object",
            "properties": {
                "item": {
                    "discriminator": {
                        "propertyName": "kind",
                        "mapping": {"chunk": "#/$defs/Chunk", "other": "#/$defs/Other"},
                    },
                    "oneOf": [{"$ref": "#/$defs/Chunk"}, {"$ref": "#/$defs/Other"}],
                },
            },
            "required": ["item"],
        },
        "Lonely": {
            "type": "object",
            "properties": {"type": {"const": "select", "default": "select", "type": "string"}},
        },
    },
    "x-error-codes": {"SESSION_BUSY": -32011},
    "x-methods": {"session/new": {"spec": "acp"}},
}


def test_the_generator_maps_each_schema_form() -> None:
    text = render_typescript(SMALL)
    chunk = text[text.index("export interface Chunk") : text.index("export interface Holder")]
    assert "/** A chunk. */" in text
    assert '  kind: "chunk";' in chunk, "a union's tag is always sent: required"
    assert "  text: string;" in chunk
    assert "  count?: number;" in chunk
    assert "  note?: string | null;" in chunk
    assert "  raw?: Json;" in chunk
    assert "  extra?: { [key: string]: Json };" in chunk
    assert '  tags?: ("a" | "b")[];' in chunk
    assert "  item: Chunk | Other;" in text
    assert '  type?: "select";' in text, "a const outside any union keeps its default"
    assert "  SessionBusy: -32011," in text
    assert '  sessionNew: "session/new",' in text
