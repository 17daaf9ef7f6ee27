"""Finding and listing sessions of Codex, Claude Code and Cody on disk.

Where they live:
- Codex: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, and archived ones in
  `$CODEX_HOME/archived_sessions/` (flat, or in the same dated folders);
- Claude Code: `$CLAUDE_CONFIG_DIR/projects/<cwd, every non-alphanumeric char -> '-'>/<id>.jsonl`
  (`~/.claude` without the variable; sub-agent files in deeper folders are not sessions);
- Cody: its store, `<data dir>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

Listing reads each file's head (up to `HEAD_BYTES`: id, cwd, start, title) and tail (the last
`TAIL_BYTES`: last update, message density), never the whole of a large file, so its cost
does not grow with file size. `messageCount` is exact for files up to `EXACT_COUNT_BYTES`
(they are parsed whole) and for files a `history/read` has read to the end since they last
changed; otherwise it is estimated from the head and tail and flagged inexact. Summaries are
cached per file identity (device, inode, size, mtime).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidParams, Issue, NotFound
from ..store.reader import make_title
from .base import Parser
from .lines import FileIdentity, SessionFileReader, decode_line
from .model import Msg, sort_key
from .paging import Cursor, iter_chunks
from .parsers import AGENT_OF, new_parser

__all__ = [
    "EXACT_COUNT_BYTES",
    "HEAD_BYTES",
    "TAIL_BYTES",
    "HistoryIndex",
    "HistoryRoots",
    "SessionFile",
    "claude_project_dir",
    "title_of",
]

HEAD_BYTES = 512 * 1024
TAIL_BYTES = 128 * 1024
EXACT_COUNT_BYTES = 1024 * 1024
_VALID_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_STAMP = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]-[0-9][0-9]-[0-9][0-9]"


@dataclass(frozen=True, slots=True)
class HistoryRoots:
    codex_home: Path
    claude_dir: Path
    cody_sessions: Path


@dataclass(frozen=True, slots=True)
class SessionFile:
    agent: str
    format: str
    path: Path
    archived: bool = False


def claude_project_dir(cwd: str) -> str:
    """Claude Code's folder name for a working directory."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def title_of(messages: list[Msg]) -> str | None:
    """The first text the user typed (injected context, summaries, sub-agents skipped)."""
    for msg in messages:
        if msg.role == "user" and not (msg.is_meta or msg.compaction or msg.is_sidechain):
            text = msg.text.strip()
            if text:
                return make_title(text)
    return None


def _check_id(session_id: str) -> None:
    if not _VALID_ID.fullmatch(session_id):
        raise InvalidParams(
            f"Invalid session id {session_id[:80]!r}.",
            [Issue(key="sessionId", message="not a valid session id", value=session_id[:80])],
        )


class HistoryIndex:
    """Enumerates, finds and summarizes session files; caches summaries and exact counts."""

    def __init__(self, roots: HistoryRoots) -> None:
        self.roots = roots
        self._summaries: dict[Path, tuple[FileIdentity, dict[str, Any]]] = {}
        self._exact: dict[tuple[int, int, int, int], int] = {}
        self._lock = threading.Lock()

    # -- enumerating ----------------------------------------------------------------------

    def files(self, agent: str | None, cwd: str | None = None) -> Iterator[SessionFile]:
        if agent in (None, "codex"):
            yield from self._codex_files()
        if agent in (None, "claude"):
            yield from self._claude_files(cwd)
        if agent in (None, "cody"):
            for path in sorted(self.roots.cody_sessions.glob("*/*/*/rollout-*.jsonl")):
                yield SessionFile("cody", "cody-session", path)

    def _codex_files(self) -> Iterator[SessionFile]:
        home = self.roots.codex_home
        for path in sorted((home / "sessions").glob("*/*/*/rollout-*.jsonl")):
            yield SessionFile("codex", "codex-rollout", path)
        archived = home / "archived_sessions"
        for pattern in ("rollout-*.jsonl", "*/*/*/rollout-*.jsonl"):
            for path in sorted(archived.glob(pattern)):
                yield SessionFile("codex", "codex-rollout", path, archived=True)

    def _claude_files(self, cwd: str | None) -> Iterator[SessionFile]:
        projects = self.roots.claude_dir / "projects"
        if cwd is not None:
            names = {claude_project_dir(cwd), claude_project_dir(os.path.realpath(cwd))}
            folders = [projects / name for name in sorted(names)]
        else:
            folders = sorted(p for p in projects.glob("*") if p.is_dir())
        for folder in folders:
            for path in sorted(folder.glob("*.jsonl")):
                yield SessionFile("claude", "claude-session", path)

    # -- finding --------------------------------------------------------------------------

    def find(self, agent: str | None, session_id: str) -> SessionFile:
        """The file of `session_id` (any agent when `agent` is None); NotFound otherwise."""
        _check_id(session_id)
        for candidate in self._candidates(agent, session_id):
            if candidate.path.is_file():
                return candidate
        where = {"codex": "Codex", "claude": "Claude Code", "cody": "Cody"}.get(
            agent or "", "Codex, Claude Code or Cody"
        )
        raise NotFound(
            f"No {where} session {session_id} found. Use _cody/history/list "
            "(`cody-client history list`) to see the sessions on this machine."
        )

    def _candidates(self, agent: str | None, session_id: str) -> Iterator[SessionFile]:
        roots = self.roots
        if agent in (None, "codex"):
            for base, archived in (
                (roots.codex_home / "sessions", False),
                (roots.codex_home / "archived_sessions", True),
            ):
                for pattern in (
                    f"*/*/*/rollout-{_STAMP}-{session_id}.jsonl",
                    f"rollout-{_STAMP}-{session_id}.jsonl",
                ):
                    for path in sorted(base.glob(pattern)):
                        yield SessionFile("codex", "codex-rollout", path, archived)
        if agent in (None, "claude"):
            for path in sorted((roots.claude_dir / "projects").glob(f"*/{session_id}.jsonl")):
                yield SessionFile("claude", "claude-session", path)
        if agent in (None, "cody"):
            for path in sorted(
                roots.cody_sessions.glob(f"*/*/*/rollout-{_STAMP}-{session_id}.jsonl")
            ):
                yield SessionFile("cody", "cody-session", path)

    # -- summaries ------------------------------------------------------------------------

    def remember_count(self, identity: FileIdentity, count: int) -> None:
        """An exact message count learnt by reading the whole file."""
        with self._lock:
            self._exact[_key(identity)] = count

    def exact_count(self, identity: FileIdentity) -> int | None:
        return self._exact.get(_key(identity))

    def summarize(self, entry: SessionFile) -> dict[str, Any] | None:
        """The listing entry of one file (wire shape), or None when it is not a session."""
        try:
            with SessionFileReader.open(entry.path) as reader:
                identity = reader.identity
                cached = self._summaries.get(entry.path)
                if cached is not None and cached[0] == identity:
                    info = dict(cached[1])
                else:
                    fresh = self._summarize(reader, entry)
                    if fresh is None:
                        return None
                    info = fresh
                    with self._lock:
                        self._summaries[entry.path] = (identity, info)
                exact = self.exact_count(identity)
        except (NotFound, InvalidParams):
            return None
        if exact is not None:
            info = {**info, "messageCount": exact, "messageCountExact": True}
        return info

    def _summarize(self, reader: SessionFileReader, entry: SessionFile) -> dict[str, Any] | None:
        size = reader.identity.size
        parser = new_parser(entry.format)
        if size <= EXACT_COUNT_BYTES:
            messages: list[Msg] = []
            last_time: str | None = None
            for chunk in iter_chunks(reader, parser, Cursor()):
                messages.extend(chunk.messages)
            count, exact = len(messages), True
            last_time = _last_time(reader.tail(TAIL_BYTES))
        else:
            messages, head_end = _head(reader, parser)
            tail_lines = reader.tail(TAIL_BYTES)
            last_time = _last_time(tail_lines)
            count, exact = _estimate(entry.format, len(messages), head_end, tail_lines, size), False
        session_id = parser.session_id or _id_from_name(entry)
        if not session_id or (exact and count == 0):
            return None
        info: dict[str, Any] = {
            "agent": AGENT_OF[entry.format],
            "sessionId": session_id,
            "path": str(entry.path),
            "format": entry.format,
            "messageCount": count,
            "messageCountExact": exact,
            "sizeBytes": size,
        }
        title = parser.title or title_of(messages)
        updated = last_time or _mtime(reader.identity)
        for key, value in (
            ("cwd", parser.cwd),
            ("title", title),
            ("startedAt", parser.started_at),
            ("updatedAt", updated),
        ):
            if value:
                info[key] = value
        if entry.archived:
            info["archived"] = True
        return info


def _key(identity: FileIdentity) -> tuple[int, int, int, int]:
    return (identity.device, identity.inode, identity.size, identity.mtime_ns)


def _head(reader: SessionFileReader, parser: Parser) -> tuple[list[Msg], int]:
    messages: list[Msg] = []
    end = 0
    for line in reader.head(HEAD_BYTES):
        end = line.end
        obj = decode_line(line.raw)
        if obj is not None:
            parser.feed(line.number, obj, messages)
    parser.end_chunk(messages, eof=False)
    return messages, end


def _estimate(
    format_name: str, head_count: int, head_end: int, tail: list[bytes], size: int
) -> int:
    """Head count plus the tail's message density over the rest of the file."""
    parser = new_parser(format_name)
    sample: list[Msg] = []
    for number, raw in enumerate(tail, start=1):
        obj = decode_line(raw)
        if obj is not None:
            parser.feed(number, obj, sample)
    parser.end_chunk(sample, eof=False)
    tail_bytes = sum(len(raw) + 1 for raw in tail)
    if not tail_bytes:
        return head_count
    return head_count + round(len(sample) * max(0, size - head_end) / tail_bytes)


def _last_time(lines: list[bytes]) -> str | None:
    for raw in reversed(lines):
        obj = decode_line(raw)
        if obj is None:
            continue
        value = obj.get("timestamp")
        if isinstance(value, str) and sort_key(value) is not None:
            return value
    return None


def _mtime(identity: FileIdentity) -> str:
    stamp = datetime.fromtimestamp(identity.mtime_ns / 1e9, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def _id_from_name(entry: SessionFile) -> str | None:
    stem = entry.path.stem
    if entry.format == "claude-session":
        return stem
    match = re.fullmatch(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)", stem)
    return match.group(1) if match else None
