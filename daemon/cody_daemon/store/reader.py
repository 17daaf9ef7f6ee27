"""Read a session file back into a `SessionRecord` (history, settings, usage, title).

Invariants:
- only a regular file is opened (a FIFO or a device named like a session file is NotFound,
  never a hang), and it is streamed line by line; memory grows with the history, not the
  file (a line over MAX_LINE_BYTES is skipped and counted, never held);
- a torn last line (a crash mid-write) is skipped silently; any other unreadable line (not
  JSON, JSON but not an object, fields of the wrong type) is skipped and counted in
  `skipped_lines`; an unreadable `session_meta` is an error (NotFound, -32002);
- consecutive segments of one streamed item (same `id`) are merged into one item;
- images that break core/image_rules.py (type, size, count per message and per session) are
  replaced by a note in their message (`images_left_out`), so a damaged or edited file never
  sends the model what a prompt could not;
- a `function_call` without output (a crash mid-call) gets a synthetic failed output
  `{"error": "interrupted"}` right after it, and its id is listed in `interrupted_calls`
  so a live session can persist the repair.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from pydantic import ValidationError

from ..core.history import (
    HISTORY_ITEM,
    FunctionCallItem,
    FunctionCallOutputItem,
    HistoryItem,
    MessageItem,
    ReasoningItem,
    SummaryPart,
    TextPart,
)
from ..core.image_rules import admit_history_images
from ..core.safe_read import open_regular
from ..errors import NotFound

__all__ = ["INTERRUPTED_OUTPUT", "SessionRecord", "make_title", "merge_segment", "read_session"]

logger = logging.getLogger(__name__)

INTERRUPTED_OUTPUT = '{"error": "interrupted"}'
MAX_LINE_BYTES = 64 * 1024 * 1024
"""A longer line is skipped (and counted): far beyond any line Cody writes (a prompt's images
are at most 20 MB, engine/images.py), and a file without newlines cannot fill memory."""


@dataclass(kw_only=True)
class SessionRecord:
    session_id: str
    path: Path
    cwd: str
    created: str
    settings: dict[str, Any]
    """The session's settings: those of `session_meta`, updated by `config` events."""
    items: list[HistoryItem] = field(default_factory=list)
    usage_total: dict[str, int] = field(default_factory=dict)
    cost_total_usd: float = 0.0
    granted: set[tuple[str, ...]] = field(default_factory=set)
    """Grant keys answered `allow_session` (session grants survive a restart)."""
    rejected: set[tuple[str, ...]] = field(default_factory=set)
    """Grant keys answered `reject_session`."""
    title: str | None = None
    compaction: dict[str, Any] | None = None
    """The latest `compaction` event (the history itself is never shortened)."""
    backend_resume_id: str | None = None
    """The id the session's agent CLI resumes it by (`backend` events; codex/claude sessions)."""
    context: list[dict[str, Any]] = field(default_factory=list)
    """`context` events in order (project instructions, environment and permissions items;
    validated by engine/context_items.py)."""
    turns: int = 0
    interrupted_calls: list[str] = field(default_factory=list)
    skipped_lines: int = 0
    torn_tail: bool = False
    images_left_out: int = 0
    """Images of the file that break core/image_rules.py, replaced by a note (never sent)."""


class _Folder:
    """Accumulates lines into a SessionRecord."""

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self._segment_index: dict[str, int] = {}

    def add(self, line_type: str, payload: dict[str, Any]) -> None:
        if line_type == "response_item":
            self._add_item(payload)
        elif line_type == "event":
            self._add_event(payload)
        elif line_type == "turn_context":
            self.record.turns += 1
            self._segment_index.clear()

    def _add_item(self, payload: dict[str, Any]) -> None:
        item = HISTORY_ITEM.validate_python(payload)
        items = self.record.items
        if isinstance(item, MessageItem | ReasoningItem):
            index = self._segment_index.get(item.id)
            if index is not None:
                target = items[index]
                if isinstance(target, MessageItem | ReasoningItem) and type(target) is type(item):
                    _merge_segment(target, item)
                    return
            self._segment_index[item.id] = len(items)
            if isinstance(item, MessageItem) and item.client_content:
                # Cody keeps a prompt's images as message parts, never here: a file that
                # does (edited, damaged) would replay them unchecked.
                item.client_content = [
                    block for block in item.client_content if block.get("type") != "image"
                ]
            if isinstance(item, MessageItem) and item.role == "user" and self.record.title is None:
                self.record.title = make_title(item.text)
        items.append(item)

    def _add_event(self, payload: dict[str, Any]) -> None:
        kind = payload.get("kind")
        if kind == "config" and isinstance(payload.get("settings"), dict):
            self.record.settings.update(payload["settings"])
        elif kind == "usage" and isinstance(payload.get("total"), dict):
            self.record.usage_total = {
                key: int(value)
                for key, value in payload["total"].items()
                if isinstance(value, int | float)
            }
            cost = payload.get("costUsd")
            if isinstance(cost, dict) and isinstance(cost.get("total"), int | float):
                self.record.cost_total_usd = float(cost["total"])
        elif kind == "approval" and isinstance(payload.get("grantKey"), list):
            key = tuple(str(part) for part in payload["grantKey"])
            # The engine records `allow_session` / `reject_session`; the wire kinds are accepted too.
            if payload.get("decision") in ("allow_always", "allow_session", "allow_project"):
                self.record.granted.add(key)
            elif payload.get("decision") in ("reject_always", "reject_session"):
                self.record.rejected.add(key)
        elif kind == "title" and isinstance(payload.get("title"), str):
            self.record.title = payload["title"]
        elif kind == "compaction" and isinstance(payload.get("summary"), str):
            self.record.compaction = payload
        elif kind == "context":
            self.record.context.append(payload)
        elif kind == "backend" and isinstance(payload.get("resumeId"), str):
            self.record.backend_resume_id = payload["resumeId"]

    def close_interrupted_calls(self) -> None:
        answered = {
            item.call_id for item in self.record.items if isinstance(item, FunctionCallOutputItem)
        }
        repaired: list[HistoryItem] = []
        for item in self.record.items:
            repaired.append(item)
            if isinstance(item, FunctionCallItem) and item.call_id not in answered:
                repaired.append(
                    FunctionCallOutputItem(
                        call_id=item.call_id, output=INTERRUPTED_OUTPUT, status="failed"
                    )
                )
                self.record.interrupted_calls.append(item.call_id)
                answered.add(item.call_id)
        self.record.items = repaired


def _merge_segment(
    target: MessageItem | ReasoningItem, segment: MessageItem | ReasoningItem
) -> None:
    if isinstance(target, MessageItem) and isinstance(segment, MessageItem):
        last = target.content[-1] if target.content else None
        if isinstance(last, TextPart) and segment.content:
            last.text += segment.text  # streamed segments are text (assistant messages)
        else:
            target.content.extend(segment.content)
    elif isinstance(target, ReasoningItem) and isinstance(segment, ReasoningItem):
        text = segment.text
        if text:
            if target.summary:
                target.summary[-1].text += text
            else:
                target.summary.append(SummaryPart(text=text))
        for name in ("encrypted_content", "signature", "provider", "replay_fields"):
            value = getattr(segment, name)
            if value is not None:
                setattr(target, name, value)


merge_segment = _merge_segment
"""Merge one streamed segment into the item it continues (same id); used by history/ too."""


def make_title(text: str, limit: int = 80) -> str:
    """The session title: the first user text, on one line, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def read_session(path: Path) -> SessionRecord:
    """Parse a session file. Raises NotFound when it is missing or its header is unreadable."""
    try:
        fd = open_regular(path)  # a FIFO or a device named like a session file: refused
    except FileNotFoundError:
        raise NotFound(f"Session file {path} does not exist.") from None
    except OSError as exc:
        raise NotFound(f"Session file {path} cannot be read: {exc.strerror}.") from None
    with open(fd, "rb", closefd=True) as handle:
        record: SessionRecord | None = None
        folder: _Folder | None = None
        pending: bytes | None = None
        started = False
        for raw in _bounded_lines(handle):
            if started:
                record, folder = _consume(pending, path, record, folder, last=False)
            pending, started = raw, True
        if started:
            record, folder = _consume(pending, path, record, folder, last=True)
    if record is None or folder is None:
        raise NotFound(f"Session file {path} is empty or has no readable session_meta line.")
    folder.close_interrupted_calls()
    record.images_left_out = admit_history_images(record.items)
    if record.images_left_out:
        logger.warning(
            "%s: %d image(s) left out (core/image_rules.py)", path.name, record.images_left_out
        )
    return record


def _bounded_lines(handle: BinaryIO) -> Iterator[bytes | None]:
    """The file's lines; None for a line over MAX_LINE_BYTES (read in pieces, never held)."""
    while raw := handle.readline(MAX_LINE_BYTES):
        if len(raw) == MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield raw


def _consume(
    raw: bytes | None,
    path: Path,
    record: SessionRecord | None,
    folder: _Folder | None,
    *,
    last: bool,
) -> tuple[SessionRecord | None, _Folder | None]:
    torn = last and raw is not None and not raw.endswith(b"\n")
    try:
        if raw is None:
            raise TypeError(f"the line is longer than {MAX_LINE_BYTES:,} bytes")
        line = orjson.loads(raw)
        if not isinstance(line, dict):
            raise TypeError("the line is not an object")
        line_type = line["type"]
        payload = line["payload"]
        if not isinstance(payload, dict):
            raise TypeError("payload is not an object")
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        if raw is not None and not raw.strip():
            return record, folder
        if record is None:
            raise NotFound(
                f"Session file {path} is unreadable: its first line is not a session_meta "
                f"record ({exc.__class__.__name__})."
            ) from None
        if torn or last:
            record.torn_tail = True
        else:
            record.skipped_lines += 1
            logger.warning("skipping an unreadable line in %s", path.name)
        return record, folder
    if record is None:
        if line_type != "session_meta":
            raise NotFound(f"Session file {path} does not start with a session_meta line.")
        settings = payload.get("settings")
        record = SessionRecord(
            session_id=str(payload.get("id", "")),
            path=path,
            cwd=str(payload.get("cwd", "")),
            created=str(payload.get("created", "")),
            settings=dict(settings) if isinstance(settings, dict) else {},
        )
        return record, _Folder(record)
    assert folder is not None
    try:
        folder.add(line_type, payload)
    except (ValidationError, ValueError, TypeError, AttributeError, OverflowError):
        # One bad line costs that line only (issue 8.10).
        record.skipped_lines += 1
        logger.warning("skipping an invalid %s line in %s", line_type, path.name)
    return record, folder
