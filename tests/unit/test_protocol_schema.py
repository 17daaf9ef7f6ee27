"""The checked-in JSON Schema matches the pydantic protocol models (drift check)."""

from __future__ import annotations

import json

from cody_protocol import schema


def test_checked_in_schema_matches_the_models() -> None:
    checked_in = schema.SCHEMA_PATH.read_text(encoding="utf-8")
    assert checked_in == schema.render(), (
        "protocol/schema/cody-protocol.schema.json is stale: "
        "run `uv run python -m cody_protocol.schema --write` and commit it"
    )


def test_schema_names_every_top_level_message() -> None:
    generated = json.loads(schema.render())
    for model in schema.TOP_LEVEL_MODELS:
        assert model.__name__ in generated["$defs"]


def test_checked_in_exec_events_schema_matches_the_models() -> None:
    checked_in = schema.EXEC_EVENTS_SCHEMA_PATH.read_text(encoding="utf-8")
    assert checked_in == schema.render_exec_events(), (
        "protocol/schema/cody-exec-events.schema.json is stale: "
        "run `uv run python -m cody_protocol.schema --write` and commit it"
    )
