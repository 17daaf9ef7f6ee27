"""Context compaction: long conversations stay under the model's context window.

What the model sees (`model_history`) is the session's history or, after a compaction, the
compaction's summary (a user message) followed by the history after the last summarised item.
The latest user message is always there verbatim (re-inserted after the summary when it was
summarised): the live request is never summarised away. Every tool output longer than the
session's `tool_output_token_limit` (Codex's default: 10,000 tokens) is cut in its middle
before it is sent, saying how much was cut; the session file keeps it whole.

`compact` asks the model (the session's own provider, instructions and tools, so the prompt
cache is reused) to summarise what it saw up to a cut, keeps the items after the cut verbatim
(automatic compaction keeps up to `KEEP_SHARE` of the budget; `/compact` keeps none), records
`{kind: "compaction", summary, summarizedThrough, ...}` in the session file and tells the
client (`Compacted`, a session_info_update with `_meta.cody.compaction`). The history in the
file is never shortened: `session/load` replays all of it, and a reloaded session sees the
same summary.

Automatic compaction (`ContextKeeper.history_for`) runs before a model call whose request is
estimated to pass the budget: `model_auto_compact_token_limit` when set, else
`model_auto_compact_ratio` (default 0.9) of the context window. The estimate is the last
call's reported input + output tokens plus about one token per `CHARS_PER_TOKEN` characters
for what was added since; without a report (a new or reloaded session, right after a
compaction), the same character estimate for the whole request. A provider's context-window
refusal before any output also triggers one compaction and one retry.

Invariants:
- a cut is only ever placed where a model response starts (after a user message or after
  tool outputs): every kept function call keeps its output and every kept thinking block the
  tool use it belongs to, so each wire API accepts the result;
- a failed automatic compaction never fails the turn by itself: the call goes ahead
  uncompacted, and no second automatic attempt is made in the same turn (a circuit breaker);
  a failed `/compact` reports the provider's error and changes nothing;
- compaction never runs concurrently with a turn of the same session (the caller holds the
  session's turn slot).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Literal

import orjson

from ..core.history import (
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
    item_key,
    user_message,
)
from ..errors import ProviderError
from ..ids import new_id
from ..providers.base import ModelProvider, ModelRequest, TextDelta, UsageReport
from ..providers.pricing import Price
from .context_items import ContextEntry, splice
from .events import Compacted, EngineEvent
from .usage import record_call

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "CHARS_PER_TOKEN",
    "KEEP_SHARE",
    "SUMMARY_HEADER",
    "SUMMARY_PROMPT",
    "Compaction",
    "CompactionFailed",
    "CompactionResult",
    "ContextKeeper",
    "ContextMark",
    "budget_for",
    "cap_output",
    "compact",
    "compact_session",
    "estimate_request",
    "item_key",
    "model_history",
]

log = logging.getLogger(__name__)

CHARS_PER_TOKEN: Final = 4
"""Rough characters per token, for estimates only (Codex uses the same ratio)."""
KEEP_SHARE: Final = 0.3
"""Automatic compaction keeps recent items verbatim up to this share of the budget."""
SUMMARY_MAX_OUTPUT: Final = 8_192
SUMMARY_PROMPT: Final = (
    "CONTEXT CHECKPOINT. The conversation is about to be compacted: everything above will be "
    "replaced by your summary. Do not call any tool. Write a summary that lets you continue "
    "the work without the original messages: the user's requests and constraints (quote the "
    "latest request exactly), decisions made, files read or changed and what they contain "
    "that matters, commands run and their results, errors met, and what remains to be done "
    "next. Be specific (names, paths, values); leave out pleasantries."
)
SUMMARY_HEADER: Final = (
    "Summary of the conversation so far (the earlier messages were compacted to save context; "
    "the complete history is kept in the session file):\n\n"
)


class CompactionFailed(Exception):
    """The model gave no summary (the provider answered, but with no text)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """The latest compaction of a session: what the model sees instead of the older items."""

    summary: str
    summarized_through: str
    """`item_key` of the last summarised history item; the model sees the items after it."""
    item_id: str
    """Id of the summary message the model sees (stable, for prompt caching)."""

    def event(self) -> dict[str, Any]:
        return {
            "kind": "compaction",
            "summary": self.summary,
            "summarizedThrough": self.summarized_through,
            "itemId": self.item_id,
        }

    @classmethod
    def from_event(cls, payload: dict[str, Any] | None) -> Compaction | None:
        """The compaction a session file recorded (None for none or a malformed one)."""
        if not payload:
            return None
        summary, through = payload.get("summary"), payload.get("summarizedThrough")
        if not isinstance(summary, str) or not isinstance(through, str):
            return None
        item_id = payload.get("itemId")
        return cls(
            summary=summary,
            summarized_through=through,
            item_id=item_id if isinstance(item_id, str) else new_id("msg_"),
        )


@dataclass(frozen=True, slots=True)
class ContextMark:
    """A model call's reported size (input + output tokens) and the history length after it
    (and the number of context items then)."""

    tokens: int
    history_len: int
    context_len: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionResult:
    reason: Literal["auto", "manual"]
    tokens_before: int
    tokens_after: int
    summarized_items: int
    kept_items: int

    def event(self) -> Compacted:
        return Compacted(
            reason=self.reason,
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            summarized_items=self.summarized_items,
            kept_items=self.kept_items,
        )


# -- what the model sees --------------------------------------------------------------------


def _boundary(history: Sequence[HistoryItem], compaction: Compaction | None) -> int:
    """Index of the first item after the compaction (0 without one, or if its item is gone)."""
    if compaction is None:
        return 0
    for index in range(len(history) - 1, -1, -1):
        if item_key(history[index]) == compaction.summarized_through:
            return index + 1
    log.warning("the compacted item is not in the history; sending the whole history")
    return 0


def model_history(
    history: Sequence[HistoryItem],
    compaction: Compaction | None,
    tool_output_tokens: int,
    context: Sequence[ContextEntry] = (),
) -> list[HistoryItem]:
    """What the model is sent; see the module docstring. `context`: the session's context
    items (project instructions, permissions), put in place by `context_items.splice`."""
    start = _boundary(history, compaction)
    view: list[HistoryItem] = []
    if compaction is not None and start:
        view.append(user_message(compaction.item_id, SUMMARY_HEADER + compaction.summary))
        tail = history[start:]
        if not any(_is_user(item) for item in tail):
            latest = next((i for i in reversed(history[:start]) if _is_user(i)), None)
            if latest is not None:
                view.append(latest)
        view.extend(tail)
    else:
        view.extend(history)
    return splice([cap_output(item, tool_output_tokens) for item in view], context)


def cap_output(item: HistoryItem, max_tokens: int) -> HistoryItem:
    """`item` with a tool output longer than `max_tokens` cut in the middle (head and tail
    kept), saying how much was cut; any other item unchanged."""
    if not isinstance(item, FunctionCallOutputItem):
        return item
    limit = max_tokens * CHARS_PER_TOKEN
    text = item.output
    if len(text) <= limit:
        return item
    head, tail = text[: limit // 2], text[len(text) - limit // 2 :]
    cut = len(text) - len(head) - len(tail)
    note = (
        f"\n\n[... {cut:,} characters (about {cut // CHARS_PER_TOKEN:,} tokens) cut from the "
        f"middle of this output: it was longer than {max_tokens:,} tokens ...]\n\n"
    )
    return item.model_copy(update={"output": head + note + tail})


def _is_user(item: HistoryItem) -> bool:
    return isinstance(item, MessageItem) and item.role == "user"


IMAGE_TOKENS: Final = 1600
"""Estimated tokens of one attached image (a ~1.15 megapixel image costs about 1,600 on
Claude, https://docs.anthropic.com/en/docs/build-with-claude/vision; OpenAI's high detail is
in the same range). Its base64 text is not counted: the APIs do not tokenise it as text."""


def _item_chars(item: HistoryItem) -> int:
    if isinstance(item, MessageItem):
        return len(item.text) + 16 + len(item.images) * IMAGE_TOKENS * CHARS_PER_TOKEN
    if isinstance(item, ReasoningItem):
        opaque = len(item.encrypted_content or "") + len(item.signature or "")
        replay = len(orjson.dumps(item.replay_fields)) if item.replay_fields else 0
        return len(item.text) + opaque + replay + 16
    if isinstance(item, FunctionCallItem):
        return len(item.name) + len(item.arguments) + len(item.call_id) + 16
    images = len(item.images or ()) * IMAGE_TOKENS * CHARS_PER_TOKEN
    return len(item.output) + len(item.call_id) + 16 + images


def _tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_items(items: Sequence[HistoryItem]) -> int:
    return _tokens(sum(_item_chars(item) for item in items))


def estimate_request(request: ModelRequest) -> int:
    """Estimated input tokens of `request` (instructions, tool specs and history)."""
    tools = sum(
        len(t.name) + len(t.description) + len(orjson.dumps(t.parameters)) for t in request.tools
    )
    return _tokens(len(request.instructions) + tools) + estimate_items(request.history)


# -- compacting -----------------------------------------------------------------------------


def _response_starts(history: Sequence[HistoryItem], start: int) -> list[int]:
    """Indices >= `start` where a cut may go: a user message, or the first item of a model
    response (after a user message or a tool output)."""
    cuts: list[int] = []
    for index in range(max(start, 1), len(history) + 1):
        if index == len(history):
            cuts.append(index)
            continue
        item, before = history[index], history[index - 1]
        if isinstance(item, FunctionCallOutputItem):
            continue
        if _is_user(item) or isinstance(before, FunctionCallOutputItem) or _is_user(before):
            cuts.append(index)
    return cuts


def _choose_cut(
    history: Sequence[HistoryItem], start: int, keep_tokens: int, tool_output_tokens: int
) -> int:
    """The earliest allowed cut whose kept tail fits in `keep_tokens` (else the end)."""
    for cut in _response_starts(history, start):
        tail = [cap_output(item, tool_output_tokens) for item in history[cut:]]
        if estimate_items(tail) <= keep_tokens:
            return cut
    return len(history)


async def compact(
    session: Session,
    provider: ModelProvider,
    template: ModelRequest,
    *,
    reason: Literal["auto", "manual"],
    budget: int,
    on_usage: Callable[[UsageReport], object],
) -> CompactionResult | None:
    """Summarise the conversation up to a cut; None when there is nothing to summarise.

    `template` carries the model, instructions, tools and reasoning settings of the next
    call (its history is ignored). Raises `ProviderError` or `CompactionFailed`; on any
    failure nothing is changed or written.
    """
    history = session.history
    limit = session.settings.tool_output_token_limit
    context = session.context_items
    start = _boundary(history, session.compaction)
    before = model_history(history, session.compaction, limit, context)
    keep = int(budget * KEEP_SHARE) if reason == "auto" else 0
    cut = _choose_cut(history, start, keep, limit)
    if cut <= start:
        return None
    summarised = model_history(history[:cut], session.compaction, limit, context)
    request = replace(
        template,
        history=[*summarised, user_message(new_id("msg_"), SUMMARY_PROMPT)],
        max_output_tokens=max(1_024, min(SUMMARY_MAX_OUTPUT, budget // 4)),
    )
    summary = await _summarise(provider, request, on_usage)
    compaction = Compaction(
        summary=summary,
        summarized_through=item_key(history[cut - 1]),
        item_id=new_id("msg_"),
    )
    result = CompactionResult(
        reason=reason,
        tokens_before=estimate_request(replace(template, history=before)),
        tokens_after=estimate_request(
            replace(template, history=model_history(history, compaction, limit, context))
        ),
        summarized_items=cut - start,
        kept_items=len(history) - cut,
    )
    session.compaction = compaction
    session.context = None
    session.file.append(
        "event",
        {
            **compaction.event(),
            "reason": reason,
            "tokensBefore": result.tokens_before,
            "tokensAfter": result.tokens_after,
        },
    )
    await session.file.sync()
    log.info(
        "session compacted (%s): %d items summarised, %d kept, ~%d -> ~%d tokens",
        reason,
        result.summarized_items,
        result.kept_items,
        result.tokens_before,
        result.tokens_after,
    )
    return result


async def _summarise(
    provider: ModelProvider, request: ModelRequest, on_usage: Callable[[UsageReport], object]
) -> str:
    parts: list[str] = []
    async with aclosing(provider.stream(request)) as stream:
        async for event in stream:
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, UsageReport):
                on_usage(event)
    summary = "".join(parts).strip()
    if not summary:
        raise CompactionFailed("the model answered the compaction request without a summary")
    return summary


def budget_for(session: Session, context_window: int) -> int:
    """Compact when the next request would pass this many tokens."""
    settings = session.settings
    if settings.auto_compact_token_limit is not None:
        return settings.auto_compact_token_limit
    return max(1, int(context_window * settings.auto_compact_ratio))


async def compact_session(
    session: Session,
    provider: ModelProvider,
    template: ModelRequest,
    *,
    context_window: int,
    price: Price | None,
    emit: Callable[[EngineEvent], None],
    before: Callable[[Literal["auto", "manual"]], Awaitable[None]] | None = None,
) -> CompactionResult | None:
    """`/compact`: summarise everything now (the latest user message stays verbatim); usage
    and cost are added to the session's totals; the client gets the notice. The entry point
    for `_cody/session/compact` and an ACP slash command alike. `before` runs first (the
    PreCompact hooks)."""
    if before is not None:
        await before("manual")
    result = await compact(
        session,
        provider,
        template,
        reason="manual",
        budget=budget_for(session, context_window),
        on_usage=lambda report: record_call(session, report, price, None),
    )
    if result is not None:
        emit(result.event())
    return result


# -- the turn's side ------------------------------------------------------------------------


class ContextKeeper:
    """Compacts a turn's context when needed; see the module docstring.

    One per turn: after one failed automatic compaction it stops trying (circuit breaker).
    """

    def __init__(
        self,
        session: Session,
        provider: ModelProvider,
        context_window: int,
        *,
        emit: Callable[[EngineEvent], None],
        on_usage: Callable[[UsageReport], None],
        before: Callable[[Literal["auto", "manual"]], Awaitable[None]] | None = None,
    ) -> None:
        self._session = session
        self._before = before
        """Runs before a summary is made (the PreCompact hooks)."""
        self._provider = provider
        self._window = context_window
        self._emit = emit
        self._on_usage = on_usage
        self._broken = False

    @property
    def budget(self) -> int:
        return budget_for(self._session, self._window)

    def estimate(self, request: ModelRequest) -> int:
        """Estimated input tokens of `request` (see the module docstring)."""
        mark = self._session.context
        history = self._session.history
        if mark is not None and mark.history_len <= len(history):
            limit = self._session.settings.tool_output_token_limit
            added = [cap_output(item, limit) for item in history[mark.history_len :]]
            context = self._session.context_items[mark.context_len :]
            added += [entry.item for entry in context if entry.item is not None]
            return mark.tokens + estimate_items(added)
        return estimate_request(request)

    def view(self) -> list[HistoryItem]:
        session = self._session
        return model_history(
            session.history,
            session.compaction,
            session.settings.tool_output_token_limit,
            session.context_items,
        )

    async def history_for(self, template: ModelRequest) -> list[HistoryItem]:
        """The history for the next call, compacting first when it would pass the budget."""
        history = self.view()
        if self._broken or self.estimate(replace(template, history=history)) <= self.budget:
            return history
        if await self._compact(template, "auto"):
            return self.view()
        return history

    async def after_overflow(self, template: ModelRequest) -> bool:
        """The provider refused the request as too long: compact once; True to retry."""
        if self._broken:
            return False
        return await self._compact(template, "auto")

    async def _compact(self, template: ModelRequest, reason: Literal["auto", "manual"]) -> bool:
        if self._before is not None:
            await self._before(reason)
        try:
            result = await compact(
                self._session,
                self._provider,
                template,
                reason=reason,
                budget=self.budget,
                on_usage=self._on_usage,
            )
        except (ProviderError, CompactionFailed) as exc:
            self._broken = True
            log.warning("automatic compaction failed (%s); continuing without", exc)
            return False
        if result is None:
            self._broken = True  # nothing left to summarise: do not try again this turn
            return False
        self._emit(result.event())
        return True

    def mark(self, report: UsageReport) -> None:
        """Remember the size of the call that just ended (its items are in the history)."""
        self._session.context = ContextMark(
            tokens=report.input_tokens + report.output_tokens,
            history_len=len(self._session.history),
            context_len=len(self._session.context_items),
        )
