"""The model catalog: limits, reasoning style, prompt caching and price of every known model.

The data is `models.toml` next to this module (packaged with the wheel; its header documents
the format and its sources), parsed once per process and cached. It is the one source of truth
for the built-in providers' model lists (`specs.builtin_providers`), context windows (usage
meter, compaction), the reasoning parameters providers send, and prices (`pricing`).

Invariants:
- every listed model names its `source` and `date`; so does every price; a malformed file is a
  `ValueError` naming the entry (a packaging bug, caught by tests/unit/test_models.py);
- each listed provider has exactly one `default` model;
- `capabilities(provider, model)` always answers: the listed model (a dated id such as
  `claude-haiku-4-5-20251001` finds its undated entry), else the first family whose pattern
  matches the lower-cased id, else "no reasoning, nothing known". Families never carry a
  context window or a price: those are only ever given for listed models;
- `resolve_effort` never returns a value outside the model's `efforts` when it has a list.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final, Literal, cast

__all__ = [
    "takes_images",
    "packaged_text",
    "EFFORT_ORDER",
    "Capabilities",
    "Family",
    "ListedModel",
    "ModelCatalog",
    "ModelCatalogError",
    "ReasoningStyle",
    "capabilities",
    "catalog",
    "resolve_effort",
]

ReasoningStyle = Literal["effort", "adaptive", "budget", "none"]
PromptCache = Literal["breakpoints"]

EFFORT_ORDER: Final[tuple[str, ...]] = (
    "none",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
    "max",
)
"""Every effort value any provider accepts, lowest first (for mapping to the nearest one)."""

DEFAULT_EFFORT: Final = "medium"
"""Sent to a reasoning model when no effort is configured (what Codex sends)."""

_STYLES: Final = frozenset({"effort", "adaptive", "budget", "none"})
_MODEL_KEYS: Final = frozenset(
    {
        "default",
        "context_window",
        "max_output_tokens",
        "reasoning",
        "efforts",
        "prompt_cache",
        "images",
        "images_source",
        "source",
        "date",
        "note",
        "price",
    }
)
_FAMILY_KEYS: Final = frozenset(
    {
        "pattern",
        "reasoning",
        "efforts",
        "prompt_cache",
        "images",
        "images_source",
        "source",
        "date",
        "note",
    }
)
_DATED: Final = re.compile(r"-(?:20\d{6})$")


class ModelCatalogError(ValueError):
    """`models.toml` is malformed (the message names the entry)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What a model accepts, as far as Cody knows (see `capabilities`)."""

    reasoning: ReasoningStyle = "none"
    efforts: tuple[str, ...] | None = None
    """Accepted effort values, lowest first; None = unknown (send what is configured)."""
    prompt_cache: PromptCache | None = None
    max_output_tokens: int | None = None
    context_window: int | None = None
    images: bool | None = None
    """Whether the model accepts image input; None: not known (images are sent and the
    provider decides)."""
    images_source: str | None = None
    """Where `images` was read."""
    source: str | None = None
    """Where this was read (the model's entry, or the family rule that matched)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedModel:
    """One `[models.<provider>."<model>"]` entry (the price is parsed by `pricing`)."""

    provider: str
    id: str
    default: bool
    capabilities: Capabilities
    source: str
    date: date
    note: str | None
    price: Mapping[str, Any] | None
    """The raw `price` table (validated by `pricing.PriceTable`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    """One `[[families]]` rule for model ids that are not listed."""

    pattern: re.Pattern[str]
    capabilities: Capabilities


class ModelCatalog:
    """Listed models by provider (file order) and family rules; see the module invariants."""

    def __init__(self, models: Sequence[ListedModel], families: Sequence[Family]) -> None:
        self._by_provider: dict[str, list[ListedModel]] = {}
        self._index: dict[tuple[str, str], ListedModel] = {}
        for model in models:
            self._by_provider.setdefault(model.provider, []).append(model)
            self._index[(model.provider, model.id)] = model
        self._families = tuple(families)

    @classmethod
    def load(cls) -> ModelCatalog:
        """The packaged `models.toml` (parsed once per process)."""
        return _packaged()

    @classmethod
    def from_toml(cls, text: str) -> ModelCatalog:
        data = tomllib.loads(text)
        unknown = set(data) - {"models", "families"}
        if unknown:
            raise ModelCatalogError(f"models: unknown top-level keys: {', '.join(sorted(unknown))}")
        models: list[ListedModel] = []
        providers = data.get("models", {})
        if not isinstance(providers, dict):
            raise ModelCatalogError("models: `models` must be a table of providers")
        for provider, entries in providers.items():
            if not isinstance(entries, dict):
                raise ModelCatalogError(f"models: `models.{provider}` must be a table of models")
            listed = [_listed(provider, mid, entry) for mid, entry in entries.items()]
            defaults = [m.id for m in listed if m.default]
            if len(defaults) != 1:
                raise ModelCatalogError(
                    f"models: `models.{provider}` needs exactly one model with default = true"
                )
            models.extend(listed)
        raw_families = data.get("families", [])
        if not isinstance(raw_families, list):
            raise ModelCatalogError("models: `families` must be an array of tables")
        families = [_family(i, entry) for i, entry in enumerate(raw_families)]
        return cls(models, families)

    def providers(self) -> tuple[str, ...]:
        return tuple(self._by_provider)

    def models_of(self, provider: str) -> tuple[ListedModel, ...]:
        """The provider's listed models in file order (empty for an unknown provider)."""
        return tuple(self._by_provider.get(provider, ()))

    def default_of(self, provider: str) -> str | None:
        for model in self._by_provider.get(provider, ()):
            if model.default:
                return model.id
        return None

    def listed(self, provider: str, model: str) -> ListedModel | None:
        """The exact entry (a dated id finds its undated entry), or None."""
        found = self._index.get((provider, model))
        if found is None and _DATED.search(model):
            found = self._index.get((provider, _DATED.sub("", model)))
        return found

    def capabilities(self, provider: str, model: str) -> Capabilities:
        """What `model` on `provider` accepts; see the module invariants."""
        entry = self.listed(provider, model)
        if entry is not None:
            return entry.capabilities
        key = model.lower()
        for family in self._families:
            if family.pattern.search(key):
                return family.capabilities
        return Capabilities()

    def entries(self) -> tuple[ListedModel, ...]:
        return tuple(m for models in self._by_provider.values() for m in models)


def capabilities(provider: str, model: str) -> Capabilities:
    """`ModelCatalog.load().capabilities(provider, model)`."""
    return _packaged().capabilities(provider, model)


def takes_images(provider: str, model: str) -> bool:
    """False only for a model the catalog knows to read text only."""
    return capabilities(provider, model).images is not False


def catalog() -> ModelCatalog:
    """The packaged catalog (cached)."""
    return _packaged()


def resolve_effort(configured: str | None, caps: Capabilities) -> str | None:
    """The effort to send: the configured one (default `medium`), mapped to the nearest value
    the model accepts (ties go to the lower, cheaper one; a configured value other than `none`
    never becomes `none`); None when the model does not reason.

    `none` stays `none` only where the model accepts it; else the lowest accepted value is
    sent (the API has no way to switch such a model's reasoning off). Callers that can switch
    thinking off altogether (Anthropic) check for `none` before calling this.
    """
    if caps.reasoning == "none":
        return None
    wanted = configured or DEFAULT_EFFORT
    accepted = caps.efforts
    if accepted is None or wanted in accepted:
        return wanted
    candidates = [v for v in accepted if v != "none" or wanted == "none"]
    if not candidates:
        return None
    rank = {value: i for i, value in enumerate(EFFORT_ORDER)}
    target = rank.get(wanted, rank[DEFAULT_EFFORT])
    return min(candidates, key=lambda v: (abs(rank.get(v, 0) - target), rank.get(v, 0)))


@functools.cache
def packaged_text() -> str:
    """The packaged `models.toml`, as read (once per process).

    Read next to this module, not through `importlib.resources` (~10 ms of imports at
    start-up): the package is always installed as files (a wheel or a checkout)."""
    return Path(__file__).with_name("models.toml").read_text(encoding="utf-8")


@functools.cache
def _packaged() -> ModelCatalog:
    return ModelCatalog.from_toml(packaged_text())


def _capabilities(name: str, entry: Mapping[str, Any]) -> Capabilities:
    style = entry.get("reasoning", "none")
    if style not in _STYLES:
        raise ModelCatalogError(
            f"models: `{name}.reasoning` must be one of {', '.join(sorted(_STYLES))}"
        )
    efforts = entry.get("efforts")
    if efforts is not None:
        if not isinstance(efforts, list) or any(e not in EFFORT_ORDER for e in efforts):
            raise ModelCatalogError(
                f"models: `{name}.efforts` must list values among {', '.join(EFFORT_ORDER)}"
            )
        efforts = tuple(efforts)
    cache = entry.get("prompt_cache")
    if cache not in (None, "breakpoints"):
        raise ModelCatalogError(f'models: `{name}.prompt_cache` must be "breakpoints"')
    images = entry.get("images")
    if images is not None and not isinstance(images, bool):
        raise ModelCatalogError(f"models: `{name}.images` must be true or false")
    images_source = entry.get("images_source")
    if (images is None) != (images_source is None) or (
        images_source is not None and (not isinstance(images_source, str) or not images_source)
    ):
        raise ModelCatalogError(
            f"models: `{name}.images` and `{name}.images_source` go together (where the "
            "image support was read)"
        )
    return Capabilities(
        images=images,
        images_source=images_source,
        reasoning=cast(ReasoningStyle, style),
        efforts=efforts,
        prompt_cache=cast(PromptCache | None, cache),
        max_output_tokens=_opt_positive(name, entry, "max_output_tokens"),
        context_window=_opt_positive(name, entry, "context_window"),
        source=_source(name, entry),
    )


def _listed(provider: str, model: str, entry: Any) -> ListedModel:
    name = f"models.{provider}.{model}"
    if not isinstance(entry, dict):
        raise ModelCatalogError(f"models: `{name}` must be a table")
    unknown = set(entry) - _MODEL_KEYS
    if unknown:
        raise ModelCatalogError(f"models: `{name}` has unknown keys: {', '.join(sorted(unknown))}")
    if entry.get("context_window") is None:
        raise ModelCatalogError(f"models: `{name}.context_window` is required")
    default = entry.get("default", False)
    if not isinstance(default, bool):
        raise ModelCatalogError(f"models: `{name}.default` must be true or false")
    price = entry.get("price")
    if price is not None and not isinstance(price, dict):
        raise ModelCatalogError(f"models: `{name}.price` must be a table")
    return ListedModel(
        provider=provider,
        id=model,
        default=default,
        capabilities=_capabilities(name, entry),
        source=_source(name, entry),
        date=_date(name, entry),
        note=_note(name, entry),
        price=price,
    )


def _family(index: int, entry: Any) -> Family:
    name = f"families[{index}]"
    if not isinstance(entry, dict):
        raise ModelCatalogError(f"models: `{name}` must be a table")
    unknown = set(entry) - _FAMILY_KEYS
    if unknown:
        raise ModelCatalogError(f"models: `{name}` has unknown keys: {', '.join(sorted(unknown))}")
    pattern = entry.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ModelCatalogError(f"models: `{name}.pattern` must be a regular expression")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ModelCatalogError(f"models: `{name}.pattern` is not a valid regex: {exc}") from None
    _date(name, entry)
    return Family(pattern=compiled, capabilities=_capabilities(name, entry))


def _source(name: str, entry: Mapping[str, Any]) -> str:
    source = entry.get("source")
    if not isinstance(source, str) or not source:
        raise ModelCatalogError(f"models: `{name}.source` must name where the values come from")
    return source


def _date(name: str, entry: Mapping[str, Any]) -> date:
    read_on = entry.get("date")
    if not isinstance(read_on, date):
        raise ModelCatalogError(f"models: `{name}.date` must be a date (YYYY-MM-DD)")
    return read_on


def _note(name: str, entry: Mapping[str, Any]) -> str | None:
    note = entry.get("note")
    if note is not None and not isinstance(note, str):
        raise ModelCatalogError(f"models: `{name}.note` must be text")
    return note


def _opt_positive(name: str, entry: Mapping[str, Any], key: str) -> int | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ModelCatalogError(f"models: `{name}.{key}` must be a positive integer")
    return value
