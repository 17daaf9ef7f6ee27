"""The packaged model catalog (models.toml): sourced, dated, consistent, and one source of truth."""

from __future__ import annotations

from datetime import date

import pytest
from cody_daemon.providers.models import (
    EFFORT_ORDER,
    Capabilities,
    ModelCatalog,
    ModelCatalogError,
    capabilities,
    catalog,
    resolve_effort,
)
from cody_daemon.providers.pricing import price_for
from cody_daemon.providers.specs import builtin_providers


def test_every_listed_model_is_sourced_dated_and_within_its_limits() -> None:
    listed = catalog().entries()
    assert listed
    for model in listed:
        name = f"{model.provider}/{model.id}"
        assert isinstance(model.date, date), name
        assert model.source.startswith(("https://", "none:")), name
        caps = model.capabilities
        assert caps.context_window is not None, name
        if caps.max_output_tokens is not None:
            assert caps.max_output_tokens < caps.context_window, name
        if caps.efforts is not None:
            assert list(caps.efforts) == sorted(caps.efforts, key=EFFORT_ORDER.index), name


def test_the_builtin_providers_are_built_from_the_catalog() -> None:
    for spec in builtin_providers():
        entries = catalog().models_of(spec.id)
        assert spec.model_ids == tuple(m.id for m in entries)
        assert spec.default_model == catalog().default_of(spec.id)
        for model in spec.models:
            listed = catalog().listed(spec.id, model.id)
            assert listed is not None
            assert model.context_window == listed.capabilities.context_window
            assert price_for(spec.id, model.id) is not None, f"{spec.id}/{model.id} has no price"


def test_documented_values_are_in_the_catalog() -> None:
    opus = capabilities("anthropic", "claude-opus-4-8")
    assert (opus.reasoning, opus.context_window, opus.max_output_tokens) == (
        "adaptive",
        1_000_000,
        128_000,
    )
    assert opus.efforts == ("low", "medium", "high", "xhigh", "max")
    assert capabilities("anthropic", "claude-haiku-4-5").reasoning == "budget"
    assert capabilities("anthropic", "claude-haiku-4-5").context_window == 200_000
    assert capabilities("openai", "gpt-5.5").efforts == ("none", "low", "medium", "high", "xhigh")
    assert capabilities("openrouter", "anthropic/claude-opus-4.8").prompt_cache == "breakpoints"


@pytest.mark.parametrize(
    ("model", "reasoning", "cache"),
    [
        ("claude-opus-4-7", "adaptive", None),
        ("claude-sonnet-4-6-20260217", "adaptive", None),
        ("claude-opus-5", "adaptive", None),
        ("claude-fable-5", "adaptive", None),
        ("claude-haiku-4-5-20251001", "budget", None),
        ("claude-sonnet-4-5", "budget", None),
        ("anthropic/claude-haiku-4.5", "effort", "breakpoints"),
        ("gpt-6", "effort", None),
        ("gpt-6-mini-2027-01-01", "effort", None),
        ("openai/gpt-7.1", "effort", None),
        ("o3", "effort", None),
        ("gpt-4.1", "none", None),
        ("deepseek-v4-pro", "none", None),
        ("mock-model", "none", None),
    ],
)
def test_unlisted_ids_get_their_family_and_never_guessed_limits(
    model: str, reasoning: str, cache: str | None
) -> None:
    caps = capabilities("some-provider", model)
    assert (caps.reasoning, caps.prompt_cache) == (reasoning, cache)
    assert caps.context_window is None and caps.max_output_tokens is None


def test_a_dated_id_finds_its_listed_entry() -> None:
    assert capabilities("anthropic", "claude-haiku-4-5-20251001").context_window == 200_000


@pytest.mark.parametrize(
    ("configured", "accepted", "sent"),
    [
        (None, ("low", "medium", "high"), "medium"),
        ("xhigh", ("low", "medium", "high", "max"), "high"),  # ties go to the cheaper one
        ("minimal", ("none", "low", "medium"), "low"),  # never switched off by mapping
        ("none", ("none", "low"), "none"),
        ("none", ("low", "medium"), "low"),
        ("max", None, "max"),  # unknown list: sent as configured
    ],
)
def test_effort_maps_to_the_nearest_accepted_value(
    configured: str | None, accepted: tuple[str, ...] | None, sent: str
) -> None:
    caps = Capabilities(reasoning="effort", efforts=accepted)
    assert resolve_effort(configured, caps) == sent


def test_a_model_without_reasoning_gets_no_effort() -> None:
    assert resolve_effort("high", Capabilities()) is None


@pytest.mark.parametrize(
    ("toml", "complaint"),
    [
        ('[models.p."m"]\ncontext_window = 1\nsource = "s"\ndate = 2026-01-01', "default"),
        (
            '[models.p."m"]\ndefault = true\nsource = "s"\ndate = 2026-01-01',
            "context_window",
        ),
        (
            '[models.p."m"]\ndefault = true\ncontext_window = 1\ndate = 2026-01-01',
            "source",
        ),
        (
            '[models.p."m"]\ndefault = true\ncontext_window = 1\nsource = "s"\ndate = 2026-01-01\n'
            'reasoning = "deep"',
            "reasoning",
        ),
        (
            '[models.p."m"]\ndefault = true\ncontext_window = 1\nsource = "s"\ndate = 2026-01-01\n'
            'efforts = ["turbo"]',
            "efforts",
        ),
        ('[[families]]\npattern = "("\nsource = "s"\ndate = 2026-01-01', "regex"),
        (
            '[[families]]\npattern = "^x"\ncontext_window = 5\nsource = "s"\ndate = 2026-01-01',
            "unknown keys: context_window",  # a family never guesses limits
        ),
        (
            '[[families]]\npattern = "^x"\nimages = true\nsource = "s"\ndate = 2026-01-01',
            "images_source",  # image support is sourced like every other value
        ),
        (
            '[[families]]\npattern = "^x"\nimages = "yes"\nimages_source = "s"\n'
            'source = "s"\ndate = 2026-01-01',
            "must be true or false",
        ),
    ],
)
def test_a_malformed_catalog_is_rejected_naming_the_entry(toml: str, complaint: str) -> None:
    with pytest.raises(ModelCatalogError) as caught:
        ModelCatalog.from_toml(toml)
    assert complaint in str(caught.value)


@pytest.mark.parametrize(
    ("provider", "model", "images"),
    [
        ("openai", "gpt-5.5", True),
        ("anthropic", "claude-haiku-4-5-20251001", True),
        ("openrouter", "anthropic/claude-opus-4.8", True),
        ("offline", "offline", False),
        ("deepseek", "deepseek-chat", False),
        ("mine", "claude-sonnet-5", True),
        ("mine", "gpt-6-mini", True),
        ("mine", "my-local-model", None),  # unknown: sent, the API decides
        ("openai", "o3-mini", None),
    ],
)
def test_image_support_is_known_where_the_catalog_says(
    provider: str, model: str, images: bool | None
) -> None:
    caps = capabilities(provider, model)
    assert caps.images is images
    if images is not None:
        assert caps.images_source and caps.images_source.startswith(("https://", "none:"))
