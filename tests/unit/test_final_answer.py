"""The output contract's pure parts (engine/final_answer.py): which schemas are sent strict,
how answers are checked. The behaviour through the daemon is tests/e2e/test_output_schema.py."""

from __future__ import annotations

import pytest
from cody_daemon.engine.final_answer import FinalAnswer, check_schema, strict_compatible
from cody_daemon.errors import InvalidParams


def test_only_schemas_that_close_every_object_and_require_every_property_are_strict() -> None:
    closed = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "string"}}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert strict_compatible(closed)
    assert not strict_compatible({**closed, "additionalProperties": True})
    assert not strict_compatible({**closed, "required": []})
    nested_open = {**closed, "properties": {"a": {"type": "object", "properties": {}}}}
    assert not strict_compatible(nested_open)
    assert strict_compatible({"type": "array", "items": {"type": "integer"}})


async def test_a_fenced_answer_is_read_and_a_wrong_one_names_the_path() -> None:
    answer = FinalAnswer(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        structured_output=True,
    )
    assert (await answer.check_text('```json\n{"n": 2}\n```')).value == {"n": 2}
    wrong = await answer.check_text('{"n": "two"}')
    assert not wrong.valid and wrong.errors == ("at /n: 'two' is not of type 'integer'",)
    assert (await answer.check_text("two")).errors[0].startswith("not JSON")


async def test_a_schema_that_is_not_an_object_is_wrapped_for_the_respond_tool() -> None:
    answer = FinalAnswer({"type": "array", "items": {"type": "string"}}, structured_output=False)
    spec = answer.respond_spec()
    assert spec.parameters["required"] == ["value"]
    assert (await answer.check_arguments('{"value": ["a"]}')).value == ["a"]
    assert not (await answer.check_arguments('["a"]')).valid


async def test_a_remote_ref_is_never_fetched_the_answer_just_fails() -> None:
    answer = FinalAnswer({"$ref": "http://127.0.0.1:9/never.json"}, structured_output=True)
    verdict = await answer.check_text("{}")
    assert not verdict.valid and "cannot check" in verdict.errors[0]


@pytest.mark.parametrize("schema", [[], {"type": 12}, {"minimum": "x"}])
def test_a_bad_schema_is_invalid_params_naming_the_meta_field(schema: object) -> None:
    with pytest.raises(InvalidParams) as caught:
        check_schema(schema)
    assert caught.value.issues[0].key == "_meta.cody.outputSchema"
