"""The wire APIs are written out once (`cody_protocol.settings.WireApi`): every name has exactly
one provider module (providers/pool.py `ADAPTERS`), a provider of each name is made by it, and
what `initialize` lists and the errors name are the same set."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest
from cody_daemon.providers.pool import ADAPTERS, ProviderPool, UnsupportedWireApi
from cody_daemon.providers.specs import Credentials, ProviderWireApi, builtin_providers
from cody_protocol.initialize import ProviderInfo
from cody_protocol.settings import WIRE_APIS


def test_every_wire_api_has_one_provider_module() -> None:
    assert tuple(ADAPTERS) == WIRE_APIS
    assert set(get_args(ProviderWireApi)) == {*WIRE_APIS, "offline"}
    wire = ProviderInfo.model_json_schema()["properties"]["wireApi"]
    assert wire["enum"] == [*WIRE_APIS, "offline"], "what initialize lists"


@pytest.mark.parametrize("wire_api", WIRE_APIS)
def test_a_provider_of_each_wire_api_is_made_by_its_module(wire_api: str) -> None:
    spec = dataclasses.replace(builtin_providers({})[0], id=f"mine-{wire_api}", wire_api=wire_api)
    provider = ProviderPool(env={}).get(
        spec, Credentials(kind="api_key", source="test", secret="k")
    )
    module = type(provider).__module__.rsplit(".", 1)[-1]
    assert (
        module
        == {
            "responses": "openai_responses",
            "chat": "openai_chat",
            "anthropic": "anthropic_messages",
        }[wire_api]
    )


def test_an_unknown_wire_api_is_refused_naming_every_known_one() -> None:
    spec = dataclasses.replace(builtin_providers({})[0], id="future", wire_api="grpc")  # type: ignore[arg-type]
    with pytest.raises(UnsupportedWireApi) as refused:
        ProviderPool(env={}).get(spec, Credentials(kind="api_key", source="test", secret="k"))
    assert all(f'"{name}"' in str(refused.value) for name in WIRE_APIS)
