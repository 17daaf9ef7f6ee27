"""Token prices of the built-in providers' models, and the USD cost of a model call.

The prices are the `price` tables of the model catalog (`models.toml`, read by `models`; see
that file's header for the format and the sources), parsed once and cached.

Invariants:
- `price_for` answers only for models it has a price for: an unknown provider or model gives
  None, so the client shows no cost rather than a wrong one. Prices are keyed by provider id:
  a provider that is not built in never matches, even if its model ids look familiar; a
  built-in id whose `base_url` the user pointed elsewhere (a proxy, a local server) still
  matches, so the caller should only ask for providers at their official `base_url`.
- Model ids match exactly. One documented fallback: an `openrouter` model `openai/<m>` or
  `anthropic/<m>` without an entry of its own, and without a `:variant` suffix (`:free`,
  `:nitro`... are priced differently), is priced like the upstream model (`<m>`, with dots in
  Anthropic version numbers as dashes: `claude-opus-4.8` -> `claude-opus-4-8`), because
  OpenRouter passes the upstream providers' prices through (https://openrouter.ai/docs/faq).
- `cost_usd` prices ONE model call: the long-context tier (when a model has one) is chosen by
  that call's input size, so turn/session totals are sums of per-call costs, never the cost of
  summed usage. `TokenUsage.input_tokens` counts every input token of the call, cache reads
  and cache writes included (the context the call used); so uncached input is
  `input_tokens - cached_read_tokens - cached_write_tokens` (never below 0), billed at the
  input price, cache reads at the cached price, cache writes at the write price (the input
  price where the provider bills no separate write price), `output_tokens` (reasoning/thought
  tokens already inside) at the output price.
- Per-token prices are what API keys pay. A ChatGPT or Claude subscription login is not billed
  per token: use `billed_per_token(credentials.kind)` before showing a cost.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from cody_protocol.prompt import TokenUsage

from .models import ModelCatalog
from .specs import CredentialKind, Credentials, ProviderSpec, official_base_url

__all__ = [
    "LongContextPrice",
    "Price",
    "PriceTable",
    "billable_price",
    "billed_per_token",
    "cost_usd",
    "price_for",
]

_PER: Final = 1_000_000
_RATE_KEYS: Final = ("input", "cached_input", "cache_write", "output")
_ENTRY_KEYS: Final = frozenset({*_RATE_KEYS, "source", "date", "note", "long_context", "same_as"})
_TIER_KEYS: Final = frozenset({*_RATE_KEYS, "above_input_tokens"})


@dataclass(frozen=True, slots=True, kw_only=True)
class LongContextPrice:
    """Rates (USD per 1M tokens) for a call whose input exceeds `above_input_tokens`."""

    above_input_tokens: int
    input: float
    cached_input: float
    cache_write: float | None
    output: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """USD per 1M tokens for one model, with where and when the numbers were read."""

    input: float
    cached_input: float
    cache_write: float | None
    """None: the provider bills cache writes as plain input."""
    output: float
    source: str
    date: date
    note: str | None = None
    long_context: LongContextPrice | None = None


class PriceTable:
    """Prices by (provider id, model id); see the module invariants."""

    def __init__(self, prices: Mapping[tuple[str, str], Price]) -> None:
        self._prices = dict(prices)

    @classmethod
    def load(cls) -> PriceTable:
        """The prices of the packaged model catalog (parsed once per process)."""
        return _packaged()

    @classmethod
    def from_catalog(cls, models: ModelCatalog) -> PriceTable:
        """The `price` tables of `models`; `ValueError` naming the entry when one is malformed."""
        raw: dict[tuple[str, str], dict[str, Any]] = {
            (m.provider, m.id): dict(m.price) for m in models.entries() if m.price is not None
        }
        return cls({key: _entry(key, entry, raw) for key, entry in raw.items()})

    @classmethod
    def from_toml(cls, text: str) -> PriceTable:
        """The prices of a catalog file in `models.toml`'s format."""
        return cls.from_catalog(ModelCatalog.from_toml(text))

    def price_for(self, provider_id: str, model: str) -> Price | None:
        found = self._prices.get((provider_id, model))
        if found is not None or provider_id != "openrouter" or ":" in model:
            return found
        vendor, _, upstream = model.partition("/")
        if vendor == "openai":
            return self._prices.get(("openai", upstream))
        if vendor == "anthropic":
            return self._prices.get(("anthropic", upstream.replace(".", "-")))
        return None

    def __len__(self) -> int:
        return len(self._prices)

    def keys(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._prices)


def price_for(provider_id: str, model: str) -> Price | None:
    """`PriceTable.load().price_for(provider_id, model)`."""
    return PriceTable.load().price_for(provider_id, model)


def cost_usd(price: Price, usage: TokenUsage) -> float:
    """The USD cost of ONE model call with `usage` (see the module invariants)."""
    tier: Price | LongContextPrice = price
    long = price.long_context
    if long is not None and usage.input_tokens > long.above_input_tokens:
        tier = long
    reads = max(usage.cached_read_tokens, 0)
    writes = max(usage.cached_write_tokens, 0)
    fresh = max(usage.input_tokens - reads - writes, 0)
    write_rate = tier.cache_write if tier.cache_write is not None else tier.input
    total = (
        fresh * tier.input
        + reads * tier.cached_input
        + writes * write_rate
        + max(usage.output_tokens, 0) * tier.output
    )
    return total / _PER


def billed_per_token(kind: CredentialKind) -> bool:
    """False for subscription logins (ChatGPT, Claude): their calls have no per-token cost."""
    return kind in ("api_key", "none")


@functools.cache
def _packaged() -> PriceTable:
    return PriceTable.from_catalog(ModelCatalog.load())


def _entry(
    key: tuple[str, str],
    entry: dict[str, Any],
    raw: Mapping[tuple[str, str], dict[str, Any]],
) -> Price:
    name = f"models.{key[0]}.{key[1]}.price"
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise ValueError(f"price: `{name}` has unknown keys: {', '.join(sorted(unknown))}")
    source, read_on, note = entry.get("source"), entry.get("date"), entry.get("note")
    if not isinstance(source, str) or not source:
        raise ValueError(f"price: `{name}.source` must name where the price comes from")
    if not isinstance(read_on, date):
        raise ValueError(f"price: `{name}.date` must be a date (YYYY-MM-DD)")
    if note is not None and not isinstance(note, str):
        raise ValueError(f"price: `{name}.note` must be text")
    rates = entry
    same_as = entry.get("same_as")
    if same_as is not None:
        other = None
        if isinstance(same_as, list) and len(same_as) == 2:
            other = raw.get((str(same_as[0]), str(same_as[1])))
        if other is None or "same_as" in other or set(entry) & {*_RATE_KEYS, "long_context"}:
            raise ValueError(
                f"price: `{name}.same_as` must name another priced entry "
                "[provider, model] and the entry must have no rates of its own"
            )
        rates = other
    tier = rates.get("long_context")
    return Price(
        input=_rate(name, rates, "input"),
        cached_input=_rate(name, rates, "cached_input"),
        cache_write=_optional_rate(name, rates, "cache_write"),
        output=_rate(name, rates, "output"),
        source=source,
        date=read_on,
        note=note,
        long_context=None if tier is None else _long_context(f"{name}.long_context", tier),
    )


def _long_context(name: str, tier: Any) -> LongContextPrice:
    if not isinstance(tier, dict) or set(tier) - _TIER_KEYS:
        raise ValueError(f"price: `{name}` must be a table of {', '.join(sorted(_TIER_KEYS))}")
    above = tier.get("above_input_tokens")
    if not isinstance(above, int) or isinstance(above, bool) or above <= 0:
        raise ValueError(f"price: `{name}.above_input_tokens` must be a positive integer")
    return LongContextPrice(
        above_input_tokens=above,
        input=_rate(name, tier, "input"),
        cached_input=_rate(name, tier, "cached_input"),
        cache_write=_optional_rate(name, tier, "cache_write"),
        output=_rate(name, tier, "output"),
    )


def _optional_rate(name: str, table: Mapping[str, Any], key: str) -> float | None:
    return None if table.get(key) is None else _rate(name, table, key)


def _rate(name: str, table: Mapping[str, Any], key: str) -> float:
    value = table.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ValueError(f"price: `{name}.{key}` must be a number >= 0 (USD per 1M tokens)")
    return float(value)


def billable_price(
    spec: ProviderSpec,
    credentials: Credentials | None,
    model: str,
    env: Mapping[str, str] | None = None,
) -> Price | None:
    """The price to charge a turn with, or None when no honest cost can be shown.

    Only calls billed per token (an API key, or the offline model) at the provider's official
    base URL are priced: a subscription login has no per-token cost, and a custom endpoint may
    bill anything.
    """
    if credentials is None or not billed_per_token(credentials.kind):
        return None
    if spec.wire_api != "offline" and spec.base_url != official_base_url(spec.id, env):
        return None
    return price_for(spec.id, model)
