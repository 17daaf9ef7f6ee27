"""Where session files live, and finding, listing, creating and deleting them.

Layout: `<data_dir>/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<session id>.jsonl`.
Listing reads only the head of each file (up to its first user message, at most
`_HEADER_BYTES`) plus its mtime; a file without a turn (a session never prompted) is read to
its end, which is short. Only regular files are opened (core/safe_read.py): a FIFO or a
device named like a session file is skipped by a listing and refused by `find`'s callers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..core.safe_read import open_regular
from ..errors import InvalidParams, Issue, NotFound
from .reader import make_title
from .session_file import SessionFile

__all__ = ["SessionStore", "SessionSummary"]

logger = logging.getLogger(__name__)

_HEADER_LINES = 200
"""Lines read for a listing entry: up to the first user message (settings changed before the
first prompt come first; a never-prompted file is short)."""
_HEADER_LINE_BYTES = 4 * 1024 * 1024
_HEADER_BYTES = 8 * 1024 * 1024
"""Read at most this much of a file for its listing entry, whatever its lines are."""
_STAMP_GLOB = "rollout-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
"""The fixed-width timestamp prefix, so an id never matches the tail of a longer id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSummary:
    session_id: str
    cwd: str
    title: str | None
    updated_at: str
    path: Path
    has_turn: bool = True
    """The session was prompted at least once (a `turn_context` line or a user message)."""
    parent_session_id: str | None = None
    """A child session (a subagent): its parent (`session_meta`'s `parent.sessionId`)."""
    forked_from: str | None = None
    """The session it was forked from (its `forked` event), when it is a fork."""
    at_message: int | None = None


def _valid_session_id(session_id: str) -> bool:
    return bool(session_id) and all(ch.isalnum() or ch in "-_" for ch in session_id)


class SessionStore:
    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = sessions_dir
        self._paths: dict[str, Path] = {}

    def new_path(self, session_id: str, created: datetime) -> Path:
        stamp = created.astimezone(UTC)
        return (
            self.sessions_dir
            / f"{stamp:%Y}"
            / f"{stamp:%m}"
            / f"{stamp:%d}"
            / f"rollout-{stamp:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl"
        )

    def create(self, session_id: str, created: datetime) -> SessionFile:
        path = self.new_path(session_id, created)
        handle = SessionFile.create(path)
        self._paths[session_id] = path
        return handle

    def find(self, session_id: str) -> Path:
        """The file of `session_id`; NotFound (-32002) with a clear message otherwise."""
        if not _valid_session_id(session_id):
            raise InvalidParams(
                f"Invalid session id {session_id!r}.",
                [Issue(key="sessionId", message="not a valid session id", value=session_id)],
            )
        known = self._paths.get(session_id)
        if known is not None and known.exists():
            return known
        matches = sorted(self.sessions_dir.glob(f"*/*/*/{_STAMP_GLOB}-{session_id}.jsonl"))
        if not matches:
            raise NotFound(
                f"Session {session_id} not found under {self.sessions_dir}. "
                "Use session/list (or `cody-client sessions list`) to see known sessions."
            )
        self._paths[session_id] = matches[-1]
        return matches[-1]

    def list(self, cwd: str | None = None) -> list[SessionSummary]:
        """All sessions, newest first (by last write), optionally only those in `cwd`."""
        summaries: list[SessionSummary] = []
        wanted = _real_path(cwd) if cwd is not None else None
        if cwd is not None and wanted is None:
            return summaries
        for path in self.sessions_dir.glob("*/*/*/rollout-*.jsonl"):
            summary = _summarize(path)
            if summary is None:
                continue
            if wanted is not None and _real_path(summary.cwd) != wanted:
                continue
            self._paths.setdefault(summary.session_id, path)
            summaries.append(summary)
        summaries.sort(key=lambda s: (s.updated_at, s.session_id), reverse=True)
        return summaries

    def delete(self, session_id: str) -> None:
        path = self.find(session_id)
        try:
            probe = SessionFile.open_existing(path)  # SessionBusy if another daemon holds it
        except OSError as exc:
            raise NotFound(f"Session file {path} cannot be opened: {exc.strerror}.") from None
        try:
            path.unlink()
        finally:
            probe.close()
        self._paths.pop(session_id, None)


def _real_path(path: str) -> str | None:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # e.g. a NUL byte in a damaged file's cwd
        return None


def _summarize(path: Path) -> SessionSummary | None:
    """The listing entry of one file, or None when its header is unreadable.

    Never raises: whatever one file holds (a line that is JSON but not an object, binary
    garbage, fields of the wrong type) affects only that file's entry (issue 8.10).
    """
    try:
        fd = open_regular(path)
        with open(fd, "rb", closefd=True) as handle:
            stat = os.fstat(fd)
            session_id = cwd = ""
            title: str | None = None
            parent: str | None = None
            has_turn = False
            forked_from: str | None = None
            at_message: int | None = None
            for raw in _head_lines(handle):
                line = _object_or_none(raw)
                payload = line.get("payload") if line is not None else None
                if line is None or not isinstance(payload, dict):
                    continue
                if line.get("type") == "session_meta":
                    session_id = _text(payload.get("id"))
                    cwd = _text(payload.get("cwd"))
                    parent = _parent_of(payload.get("parent"))
                elif line.get("type") == "turn_context":
                    has_turn = True
                elif line.get("type") == "event" and payload.get("kind") == "forked":
                    source = _text(payload.get("from"))
                    forked_from = source if _valid_session_id(source) else None
                    at = payload.get("atMessage")
                    at_message = at if type(at) is int and at >= 0 else None
                elif (
                    line.get("type") == "response_item"
                    and payload.get("type") == "message"
                    and payload.get("role") == "user"
                ):
                    title = _message_title(payload.get("content"))
                    has_turn = True
                    break
    except (OSError, ValueError) as exc:
        logger.warning("cannot list %s: %s", path.name, exc)
        return None
    if not session_id or not _valid_session_id(session_id):
        return None
    updated = datetime.fromtimestamp(stat.st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return SessionSummary(
        session_id=session_id,
        cwd=cwd,
        title=title,
        updated_at=updated,
        path=path,
        has_turn=has_turn,
        parent_session_id=parent,
        forked_from=forked_from,
        at_message=at_message if forked_from else None,
    )


def _head_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The first `_HEADER_LINES` lines within the first `_HEADER_BYTES`; a line over
    `_HEADER_LINE_BYTES` is skipped (read in pieces, never held)."""
    budget = _HEADER_BYTES
    for _ in range(_HEADER_LINES):
        raw = handle.readline(min(_HEADER_LINE_BYTES, budget))
        budget -= len(raw)
        if not raw:
            return
        if not raw.endswith(b"\n") and len(raw) == _HEADER_LINE_BYTES:
            while budget > 0 and (rest := handle.readline(min(_HEADER_LINE_BYTES, budget))):
                budget -= len(rest)
                if rest.endswith(b"\n"):
                    break
            continue
        if budget <= 0 and not raw.endswith(b"\n"):
            return  # cut by the budget: not a whole line
        yield raw


def _object_or_none(raw: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _parent_of(value: object) -> str | None:
    parent = value.get("sessionId") if isinstance(value, dict) else None
    return parent if isinstance(parent, str) and _valid_session_id(parent) else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _message_title(content: object) -> str | None:
    if not isinstance(content, list):
        return None
    text = "".join(_text(part.get("text")) for part in content if isinstance(part, dict))
    return make_title(text) if text else None
