"""`initialize` read and answered without the models (rpc/initialize_wire.py) says exactly what
the models say: the client's capabilities as `InitializeParams` validates them, and an answer
that `InitializeResult` reads back unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from cody_daemon.rpc.initialize_wire import initialize_result, plain_client_capabilities
from cody_protocol.initialize import InitializeParams, InitializeResult
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    # JSON has no infinity: orjson refuses 1e999 and the first answer leaves it to orjson
    # (rpc/first_answer._as_orjson_reads), so the fast path never sees one.
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=4,
)


def fields(members: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with any subset of `members`, sometimes an extra or Python-named key."""
    extra = st.dictionaries(
        st.sampled_from(["extra", "meta", "client_info", "read_text_file", "terminal"]),
        ANY_JSON,
        max_size=1,
    )
    return st.fixed_dictionaries({}, optional=members).flatmap(
        lambda chosen: extra.map(lambda more: {**more, **chosen})
    )


def sometimes(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a well-typed value, sometimes any JSON at all."""
    return st.one_of(strategy, strategy, strategy, ANY_JSON)


FS = fields({"readTextFile": sometimes(st.booleans()), "writeTextFile": sometimes(st.booleans())})
CAPABILITIES = fields(
    {
        "fs": sometimes(FS),
        "terminal": sometimes(st.booleans()),
        "_meta": sometimes(st.none() | st.dictionaries(st.text(max_size=8), ANY_JSON)),
    }
)
CLIENT_INFO = fields(
    {
        "name": sometimes(st.text(max_size=5)),
        "version": sometimes(st.text(max_size=5)),
        "title": sometimes(st.none() | st.text(max_size=5)),
    }
)
PARAMS = st.one_of(
    st.none(),
    ANY_JSON,
    fields(
        {
            "protocolVersion": sometimes(st.integers(0, 3) | st.text(max_size=3)),
            "clientCapabilities": sometimes(CAPABILITIES),
            "clientInfo": sometimes(st.none() | CLIENT_INFO),
        }
    ),
)


@settings(max_examples=600, deadline=None)
@given(PARAMS)
def test_plain_params_read_as_the_model_reads_them(params: Any) -> None:
    plain = plain_client_capabilities(params)
    if plain is None:
        return  # the handler validates these with the model itself
    model = InitializeParams.model_validate({} if params is None else params)
    assert plain == model.client_capabilities.wire()


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"protocolVersion": 1},
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
                "_meta": {"terminal_output": True},
            },
            "clientInfo": {"name": "zed", "title": "Zed", "version": "0.200.0"},
        },
        {"protocolVersion": "2025-06-18", "clientCapabilities": {"auth": {"terminal": True}}},
    ],
)
def test_what_editors_send_is_read_without_the_model(params: Any) -> None:
    """The fast path is not vacuous: real clients' params never need pydantic."""
    plain = plain_client_capabilities(params)
    assert plain is not None
    assert plain == InitializeParams.model_validate(params or {}).client_capabilities.wire()


@pytest.mark.parametrize(
    "params",
    [
        [],
        {"protocolVersion": None},
        {"clientCapabilities": {"fs": {"readTextFile": "maybe"}}},
        {"clientInfo": {"name": "x"}},
        {"clientCapabilities": {"_meta": []}},
    ],
)
def test_params_the_model_refuses_are_left_to_the_model(params: Any) -> None:
    assert plain_client_capabilities(params) is None
    with pytest.raises(ValidationError):
        InitializeParams.model_validate(params)


@pytest.mark.parametrize("images", [True, False])
def test_the_answer_is_what_the_model_would_send(images: bool) -> None:
    answer = initialize_result(
        version="9.9.9",
        images=images,
        auth_methods=[{"id": "offline-api-key", "name": "Offline", "description": "none"}],
        providers=[
            {
                "id": "offline",
                "name": "Offline",
                "wireApi": "offline",
                "defaultModel": "offline",
                "available": True,
                "credentials": "none",
            }
        ],
        default_provider="offline",
        extensions=["_cody/session/fork"],
        data_dir="/data",
        config_file="/data/config.toml",
        binaries=[{"name": "bwrap", "usable": False, "problem": "none found"}],
        locations={
            "home": "/home/u",
            "configDir": "/data",
            "dataDir": "/data",
            "codexHome": "/home/u/.codex",
            "claudeConfigDir": "/home/u/.claude",
        },
    )
    # Unknown keys would be dropped, missing ones filled in, wrong types refused.
    assert InitializeResult.model_validate(answer).wire() == answer
    assert answer["agentCapabilities"]["promptCapabilities"]["image"] is images
