"""cody-client's answers to an MCP server's form fields (cody_client/elicitation.py)."""

from __future__ import annotations

import pytest
from cody_client.elicitation import FieldError, parse_field


def test_each_field_type_is_read_and_a_wrong_value_says_what_fits() -> None:
    assert parse_field({"type": "string"}, "Ada Lovelace") == "Ada Lovelace"
    assert parse_field({"type": "integer"}, "36") == 36
    assert parse_field({"type": "number"}, "2.5") == 2.5
    assert parse_field({"type": "boolean"}, "Yes") is True
    assert parse_field({"type": "boolean"}, "n") is False
    assert parse_field({"type": "string", "enum": ["a", "b"]}, "b") == "b"
    titled = {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}]}
    assert parse_field(titled, "hero-1") == "hero-1"
    several = {"type": "array", "items": {"type": "string", "enum": ["Guitar", "Piano"]}}
    assert parse_field(several, "Guitar, Piano") == ["Guitar", "Piano"]
    for schema, text, why in (
        ({"type": "integer"}, "3.5", "an integer"),
        ({"type": "number"}, "lots", "a number"),
        ({"type": "boolean"}, "maybe", "yes or no"),
        ({"type": "string", "enum": ["a", "b"]}, "c", "one of a, b"),
        (several, "Drums", "Guitar, Piano"),
    ):
        with pytest.raises(FieldError, match=why):
            parse_field(schema, text)
