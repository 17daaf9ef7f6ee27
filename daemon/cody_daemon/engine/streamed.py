"""An assistant message or reasoning item being streamed into history, the file and the client.

Invariants: the item is appended to history at its first delta (so items keep the order in
which they started); its text in history is complete after `finish()`; the file receives
segments at most every `interval_s` plus one at `finish()`, and the segments concatenate to
exactly the streamed text (the reader merges them by item id).

With `emit` (the turn's link to the client), text reaches the client *only after* it is in
the file: each segment is written, then sent (issue 8.11: a kill -9 used to lose up to
100 ms of text the client had already shown). A shared `SegmentCadence` (one per model call)
keeps the items of one call in order on the wire and sends pending text after at most
`interval_s` even when the model pauses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Literal

from ..core.history import HistoryItem, MessageItem, ReasoningItem, SummaryPart, TextPart
from ..ids import new_id
from ..store.session_file import SessionFile

__all__ = ["SEGMENT_INTERVAL_S", "SegmentCadence", "StreamedItem"]

SEGMENT_INTERVAL_S = 0.05
"""At most this long between a delta and its line in the file (and, with `emit`, on the wire)."""


class SegmentCadence:
    """Which streamed item holds unwritten text, and the timer that writes it.

    At most one item holds pending text at a time: an item that receives text first makes
    the previous holder write (and send) what it holds, so segments leave in stream order.
    A write that fails in the timer is kept and raised by the next `add()` or `finish()`.
    """

    def __init__(self, interval_s: float = SEGMENT_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._holder: StreamedItem | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.failure: BaseException | None = None

    def claim(self, item: StreamedItem) -> None:
        """`item` is about to write: whatever another item holds goes first."""
        if self._holder is not None and self._holder is not item:
            self._holder.flush()

    def hold(self, item: StreamedItem, wait_s: float) -> None:
        self.claim(item)
        self._holder = item
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (unit tests): written at the next delta or finish
                return
            self._timer = loop.call_later(max(0.0, wait_s), self._on_timer)

    def release(self, item: StreamedItem) -> None:
        if self._holder is item:
            self._holder = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def raise_failure(self) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    def _on_timer(self) -> None:
        self._timer = None
        holder = self._holder
        if holder is None:
            return
        try:
            holder.flush()
        except Exception as exc:  # e.g. StorageError: the turn raises it at its next step
            self.failure = exc


class StreamedItem:
    def __init__(
        self,
        kind: Literal["message", "reasoning"],
        history: list[HistoryItem],
        file: SessionFile,
        *,
        interval_s: float | None = None,
        emit: Callable[[str], None] | None = None,
        cadence: SegmentCadence | None = None,
    ) -> None:
        self.kind = kind
        self._history = history
        self._file = file
        self._cadence = cadence or SegmentCadence(
            SEGMENT_INTERVAL_S if interval_s is None else interval_s
        )
        self._interval_s = self._cadence.interval_s if interval_s is None else interval_s
        self._emit = emit
        self._item: MessageItem | ReasoningItem | None = None
        self._written: list[str] = []
        self._pending: list[str] = []
        self._last_write = 0.0
        self._finished = False
        self.opaque: dict[str, Any] = {}

    @property
    def started(self) -> bool:
        return self._item is not None

    @property
    def item_id(self) -> str | None:
        """The history item's id once it started (the `messageId` of its chunks)."""
        return self._item.id if self._item is not None else None

    @property
    def text(self) -> str:
        """Everything streamed into the item so far."""
        return "".join(self._written) + "".join(self._pending)

    def add(self, text: str) -> None:
        self._cadence.raise_failure()
        if not text:
            return
        if self._item is None:
            self._start()
        self._pending.append(text)
        now = time.monotonic()
        wait = self._interval_s - (now - self._last_write)
        if wait <= 0:
            self._cadence.claim(self)
            self._cadence.release(self)
            self._write_segment(now)
        else:
            self._cadence.hold(self, wait)

    def flush(self) -> None:
        """Write (then send) the pending text now."""
        self._cadence.release(self)
        if self._pending:
            self._write_segment(time.monotonic())

    def set_opaque(
        self,
        *,
        encrypted_content: str | None,
        signature: str | None,
        provider: str | None,
        replay_fields: dict[str, Any] | None = None,
    ) -> None:
        """Provider-opaque data for a reasoning item (written with the last segment)."""
        if encrypted_content:
            self.opaque["encrypted_content"] = encrypted_content
        if signature:
            self.opaque["signature"] = signature
        if provider:
            self.opaque["provider"] = provider
        if replay_fields:
            self.opaque["replay_fields"] = replay_fields
        if self._item is None and self.opaque:
            self._start()

    def finish(self) -> None:
        """Write the rest; afterwards history holds the complete item. Idempotent."""
        self._cadence.claim(self)
        self._cadence.release(self)
        self._cadence.raise_failure()
        if self._item is None or self._finished:
            return
        self._finished = True
        if self._pending or self.opaque or not self._written:
            self._write_segment(time.monotonic(), final=True)

    def _start(self) -> None:
        if self.kind == "message":
            self._item = MessageItem(
                id=new_id("msg_"), role="assistant", content=[TextPart(type="output_text", text="")]
            )
        else:
            self._item = ReasoningItem(id=new_id("rs_"), summary=[SummaryPart(text="")])
        self._history.append(self._item)

    def _write_segment(self, now: float, *, final: bool = False) -> None:
        item = self._item
        assert item is not None
        segment = "".join(self._pending)
        self._pending.clear()
        self._written.append(segment)
        self._last_write = now
        full = "".join(self._written)
        if isinstance(item, MessageItem):
            item.content[0] = TextPart(type="output_text", text=full)
            payload = MessageItem(
                id=item.id, role="assistant", content=[TextPart(type="output_text", text=segment)]
            ).payload()
        else:
            item.summary[0].text = full
            fields: dict[str, Any] = self.opaque if final else {}
            for name, value in fields.items():
                setattr(item, name, value)
            payload = ReasoningItem(
                id=item.id,
                summary=[SummaryPart(text=segment)],
                encrypted_content=fields.get("encrypted_content"),
                signature=fields.get("signature"),
                provider=fields.get("provider"),
                replay_fields=fields.get("replay_fields"),
            ).payload()
        self._file.append("response_item", payload)
        if self._emit is not None and segment:
            self._emit(segment)
