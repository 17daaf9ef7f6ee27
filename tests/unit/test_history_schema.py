"""The unified-history wire models: checked-in schema current, params rules, aliases."""

from __future__ import annotations

import pytest
from cody_protocol import schema
from cody_protocol.history import HistoryImportParams, HistoryListParams, HistoryReadParams
from pydantic import ValidationError


def test_checked_in_history_schema_matches_the_models() -> None:
    checked_in = schema.HISTORY_SCHEMA_PATH.read_text(encoding="utf-8")
    assert checked_in == schema.render_history(), (
        "protocol/schema/cody-history.schema.json is stale: "
        "run `uv run python -m cody_protocol.schema --write` and commit it"
    )


def test_source_is_an_alias_of_agent() -> None:
    params = HistoryImportParams.model_validate(
        {"source": "claude", "sessionId": "abc", "cwd": "/work"}
    )
    assert params.agent == "claude"
    assert HistoryListParams.model_validate({"source": "codex"}).agent == "codex"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"sessionId": "a", "path": "/x.jsonl"},
        {"path": "relative.jsonl"},
        {"sessionId": "a", "limit": 0},
        {"sessionId": "a", "limit": 1001},
        {"sessionId": "a", "agent": "gemini"},
    ],
)
def test_read_params_need_exactly_one_reference_and_sane_values(params: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        HistoryReadParams.model_validate(params)


def test_import_cwd_must_be_absolute() -> None:
    with pytest.raises(ValidationError):
        HistoryImportParams.model_validate({"sessionId": "a", "cwd": "rel/dir"})
