"""The packaged price table and per-call cost arithmetic."""

from __future__ import annotations

import math
from datetime import date

import pytest
from cody_daemon.providers.pricing import (
    Price,
    PriceTable,
    billed_per_token,
    cost_usd,
    price_for,
)
from cody_daemon.providers.specs import builtin_providers
from cody_protocol.prompt import TokenUsage


def usage(**kw: int) -> TokenUsage:
    return TokenUsage(**kw)


def test_every_builtin_model_has_a_dated_sourced_price() -> None:
    for spec in builtin_providers():
        for model in spec.model_ids:
            price = price_for(spec.id, model)
            assert price is not None, f"{spec.id}/{model} has no price"
            assert isinstance(price.date, date)
            if price.input or price.output:
                assert price.source.startswith("https://"), f"{spec.id}/{model}"


def test_published_numbers_are_in_the_table() -> None:
    gpt = price_for("openai", "gpt-5.5")
    opus = price_for("anthropic", "claude-opus-4-8")
    assert gpt is not None and opus is not None
    assert (gpt.input, gpt.cached_input, gpt.cache_write, gpt.output) == (5.0, 0.5, None, 30.0)
    assert gpt.long_context is not None and gpt.long_context.above_input_tokens == 272_000
    assert (opus.input, opus.cached_input, opus.cache_write, opus.output) == (5.0, 0.5, 6.25, 25.0)


def test_offline_costs_nothing() -> None:
    price = price_for("offline", "offline")
    assert price is not None
    assert cost_usd(price, usage(input_tokens=10_000, output_tokens=5_000)) == 0.0


def test_unknown_models_and_providers_have_no_price() -> None:
    assert price_for("openai", "gpt-4o-mini") is None
    assert price_for("my-local-vllm", "gpt-5.5") is None
    assert price_for("openrouter", "meta-llama/llama-3.1-8b-instruct") is None


def test_openrouter_falls_back_to_the_upstream_price_only_without_a_variant() -> None:
    assert price_for("openrouter", "openai/gpt-5.4") == price_for("openai", "gpt-5.4")
    upstream = price_for("anthropic", "claude-sonnet-4-6")
    assert upstream is not None
    assert price_for("openrouter", "anthropic/claude-sonnet-4.6") == upstream
    assert price_for("openrouter", "openai/gpt-5.4:free") is None
    listed = price_for("openrouter", "openai/gpt-5.5")
    assert listed is not None
    assert listed.source == "https://openrouter.ai/docs/faq"  # its own entry, upstream rates
    assert listed.output == 30.0


def test_cost_splits_input_into_fresh_cached_and_written() -> None:
    price = Price(
        input=3.0, cached_input=0.3, cache_write=3.75, output=15.0, source="s", date=date.today()
    )
    # 10_000 input tokens in all: 6_000 read from cache, 1_000 written to it, 3_000 fresh.
    call = usage(
        input_tokens=10_000,
        cached_read_tokens=6_000,
        cached_write_tokens=1_000,
        output_tokens=2_000,
        thought_tokens=500,  # already inside output_tokens: not billed twice
    )
    expected = (3_000 * 3.0 + 6_000 * 0.3 + 1_000 * 3.75 + 2_000 * 15.0) / 1e6
    assert math.isclose(cost_usd(price, call), expected)
    assert math.isclose(expected, 0.04455)


def test_cache_writes_cost_the_input_price_when_not_billed_separately() -> None:
    price = Price(
        input=2.0, cached_input=0.2, cache_write=None, output=8.0, source="s", date=date.today()
    )
    assert math.isclose(cost_usd(price, usage(input_tokens=1_000, cached_write_tokens=400)), 0.002)


def test_long_context_tier_applies_per_call_above_the_threshold() -> None:
    price = price_for("openai", "gpt-5.5")
    assert price is not None
    at_threshold = usage(input_tokens=272_000, output_tokens=1_000)
    above = usage(input_tokens=272_001, cached_read_tokens=200_000, output_tokens=1_000)
    assert math.isclose(cost_usd(price, at_threshold), (272_000 * 5.0 + 1_000 * 30.0) / 1e6)
    assert math.isclose(
        cost_usd(price, above), (72_001 * 10.0 + 200_000 * 1.0 + 1_000 * 45.0) / 1e6
    )


def test_inconsistent_usage_never_gives_a_negative_cost() -> None:
    price = price_for("anthropic", "claude-haiku-4-5")
    assert price is not None
    weird = usage(input_tokens=100, cached_read_tokens=500, output_tokens=0)
    assert cost_usd(price, weird) >= 0.0


def test_subscription_logins_are_not_billed_per_token() -> None:
    assert billed_per_token("api_key")
    assert billed_per_token("none")
    assert not billed_per_token("chatgpt")


def test_load_is_cached() -> None:
    assert PriceTable.load() is PriceTable.load()


def entry(price: str) -> str:
    """A catalog file with one model whose price table is `price`."""
    return (
        '[models.p."m"]\ndefault = true\ncontext_window = 1000\nsource = "s"\n'
        f'date = 2026-01-01\n[models.p."m".price]\n{price}'
    )


@pytest.mark.parametrize(
    ("toml", "complaint"),
    [
        (entry("input = 1\ncached_input = 1\noutput = 1\ndate = 2026-01-01"), "source"),
        (
            entry('input = -1\ncached_input = 1\noutput = 1\nsource = "s"\ndate = 2026-01-01'),
            "input",
        ),
        (entry('input = 1\ncached_input = 1\noutput = 1\nsource = "s"\ndate = "x"'), "date"),
        (
            entry(
                'input = 1\ncached_input = 1\noutput = 1\nsource = "s"\ndate = 2026-01-01\n'
                "imput = 2"
            ),
            "unknown keys",
        ),
        (entry('same_as = ["p", "nope"]\nsource = "s"\ndate = 2026-01-01'), "same_as"),
    ],
)
def test_malformed_entries_are_rejected_naming_the_entry(toml: str, complaint: str) -> None:
    with pytest.raises(ValueError, match="p.m") as caught:
        PriceTable.from_toml(toml)
    assert complaint in str(caught.value)
