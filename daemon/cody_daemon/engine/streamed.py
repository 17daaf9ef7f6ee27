"""An assistant message or reasoning item being streamed into history and the session file.

Invariants: the item is appended to history at its first delta (so items keep the order in
which they started); its text in history is complete after `finish()`; the file receives
segments at most every `interval_s` plus one at `finish()`, and the segments concatenate to
exactly the streamed text (the reader merges them by item id).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from ..core.history import HistoryItem, MessageItem, ReasoningItem, SummaryPart, TextPart
from ..ids import new_id
from ..store.session_file import SessionFile

__all__ = ["StreamedItem"]

SEGMENT_INTERVAL_S = 0.1


class StreamedItem:
    def __init__(
        self,
        kind: Literal["message", "reasoning"],
        history: list[HistoryItem],
        file: SessionFile,
        *,
        interval_s: float = SEGMENT_INTERVAL_S,
    ) -> None:
        self.kind = kind
        self._history = history
        self._file = file
        self._interval_s = interval_s
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

    def add(self, text: str) -> None:
        if not text:
            return
        if self._item is None:
            self._start()
        self._pending.append(text)
        now = time.monotonic()
        if now - self._last_write >= self._interval_s:
            self._write_segment(now)

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
