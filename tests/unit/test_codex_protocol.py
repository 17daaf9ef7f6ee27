"""The typed Codex app-server messages (backends/codex_protocol.py) are generated from the pinned
CLI's own schema and cannot drift from it: the file is regenerated from `codex app-server
generate-json-schema` of the CLI in tests/agents and compared, and a Codex release that renames
or drops what Cody reads fails the generator by name (tests/support/codex_protocol_gen.py).
Needs node (skips without it locally, runs under CI=true)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support.agent_clis import codex
from tests.support.codex_protocol_gen import OUTPUT, SchemaDrift, generate_schema, render

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def pinned() -> tuple[dict[str, Any], str]:
    return generate_schema(codex())


def test_the_checked_in_types_match_the_pinned_cli(pinned: tuple[dict[str, Any], str]) -> None:
    bundle, version = pinned
    assert version == "0.169.0"
    assert OUTPUT.read_text(encoding="utf-8") == render(bundle, version), (
        "daemon/cody_daemon/backends/codex_protocol.py is stale: run "
        "`uv run python -m tests.support.codex_protocol_gen --write` and commit it"
    )


def test_a_field_cody_reads_that_codex_renamed_fails_by_name(
    pinned: tuple[dict[str, Any], str],
) -> None:
    bundle = copy.deepcopy(pinned[0])
    turn = bundle["definitions"]["v2"]["Turn"]["properties"]
    turn["state"] = turn.pop("status")
    with pytest.raises(SchemaDrift, match="v2/Turn has no field 'status'"):
        render(bundle, "next")


def test_a_method_cody_handles_that_codex_dropped_fails_by_name(
    pinned: tuple[dict[str, Any], str],
) -> None:
    bundle = copy.deepcopy(pinned[0])
    listing = bundle["definitions"]["ServerRequest"]["oneOf"]
    bundle["definitions"]["ServerRequest"]["oneOf"] = [
        option
        for option in listing
        if "item/fileChange/requestApproval" not in option["properties"]["method"]["enum"]
    ]
    with pytest.raises(SchemaDrift, match="ServerRequest has no method"):
        render(bundle, "next")


def test_an_approval_answered_with_another_shape_fails_by_name(
    pinned: tuple[dict[str, Any], str],
) -> None:
    """A method whose params became another type is drift too (Cody would read it wrongly)."""
    bundle = copy.deepcopy(pinned[0])
    for option in bundle["definitions"]["ServerNotification"]["oneOf"]:
        if option["properties"]["method"]["enum"] == ["turn/completed"]:
            option["properties"]["params"]["$ref"] = "#/definitions/v2/ErrorNotification"
    with pytest.raises(SchemaDrift, match="turn/completed takes"):
        render(bundle, "next")
