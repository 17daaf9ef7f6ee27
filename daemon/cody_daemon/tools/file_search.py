"""`fileSearch`: find files by a fuzzy match on their paths (like fzf or Codex's file search).

Candidates: inside a git work tree, `git ls-files -co --exclude-standard` run in the session
cwd (tracked plus untracked-but-not-ignored files; deleted files and submodule directories
are dropped); elsewhere, or when git fails, `ignore.walk_files` (gitignore-aware, hidden
entries skipped). At most `MAX_CANDIDATES` are considered, and the output says when more
existed. Paths are relative to the session cwd, `/`-separated.

Matching (`score`): the query is split on whitespace into terms; every term must match.
A term matches a path when all its characters appear in it in order (a subsequence),
case-insensitively unless the query has an uppercase letter (smart case). The score of a
term is that of its best alignment, found by dynamic programming as in fzf's algorithm v2
with its `--scheme=path` constants: each matched character earns `SCORE_MATCH` plus a bonus
for where it sits: after `/` or at the start (`BONUS_DELIMITER`), after another non-word
character such as `_ - .` (`BONUS_BOUNDARY`), at a camelCase or letter-to-digit step
(`BONUS_CAMEL`); the first query character's bonus counts `FIRST_CHAR_MULTIPLIER` times;
a character continuing a run keeps the run's opening bonus (at least `BONUS_CONSECUTIVE`);
a gap costs `GAP_START` plus `GAP_EXTENSION` per extra skipped character; and a character
matched in the file name (after the last `/`) earns `BONUS_FILENAME` more, so `fs` prefers
`file_search.py` over `files/s.txt` (the same preference as fzf's `pathname` tiebreak).
Results are sorted by total score (higher first), then shorter path, then path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..policy.git_repo import is_inert_for_git
from .base import Tool, ToolContext, ToolError, ToolResult
from .ignore import walk_files

__all__ = ["FileSearchArgs", "FileSearchTool", "rank", "score"]

DEFAULT_LIMIT = 20
MAX_LIMIT = 200
MAX_CANDIDATES = 100_000

SCORE_MATCH = 16
GAP_START = -3
GAP_EXTENSION = -1
BONUS_DELIMITER = 9
BONUS_BOUNDARY = 8
BONUS_NON_WORD = 8
BONUS_CAMEL = 7
BONUS_CONSECUTIVE = -(GAP_START + GAP_EXTENSION)
FIRST_CHAR_MULTIPLIER = 2
BONUS_FILENAME = 2

_WHITE, _NON_WORD, _DELIMITER, _LOWER, _UPPER, _LETTER, _NUMBER = range(7)


class FileSearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    query: str = Field(
        min_length=1,
        description="Fuzzy query: characters that appear in order in the path, e.g. `fsrch` "
        "for `file_search.py`. Case-insensitive unless it contains an uppercase letter; "
        "spaces separate terms that must all match.",
    )
    limit: Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT})
    ] = Field(
        default=None,
        ge=1,
        le=MAX_LIMIT,
        description=f"Maximum number of paths to return (default {DEFAULT_LIMIT}).",
    )


class FileSearchTool(Tool[FileSearchArgs]):
    name = "fileSearch"
    description = (
        "Find files by fuzzy-matching their paths (like fzf): returns paths relative to the "
        "working directory, best match first. Respects .gitignore. Use it to locate a file "
        "whose name you partly know; use grepFiles to search file contents."
    )
    kind = "search"
    requires_approval = False
    args_model = FileSearchArgs

    def title(self, args: FileSearchArgs) -> str:
        return f"Find files matching {args.query}"

    async def run(self, args: FileSearchArgs, ctx: ToolContext) -> ToolResult:
        terms = args.query.split()
        if not terms:
            raise ToolError("the query is empty; give some characters of the path")
        limit = args.limit or DEFAULT_LIMIT
        listed = await _git_files(ctx.cwd)
        source = "git"
        if listed is None:
            source = "walk"
            listed = await asyncio.to_thread(_walk, ctx.cwd)
        paths, capped = listed
        ranked = await asyncio.to_thread(rank, terms, paths)
        lines = [_shown(path) for _, path in ranked[:limit]]
        if not lines:
            lines.append("No files matched.")
        if len(ranked) > limit:
            lines.append(
                f"\n[{len(ranked)} files matched; showing the best {limit}. "
                "Refine the query (or raise limit) to see others.]"
            )
        if capped:
            lines.append(
                f"\n[Only the first {MAX_CANDIDATES} files were considered; "
                "results may be incomplete.]"
            )
        return ToolResult(
            output="\n".join(lines),
            raw_output={
                "matches": len(ranked),
                "shown": min(limit, len(ranked)),
                "candidates": len(paths),
                "candidatesCapped": capped,
                "source": source,
            },
        )


def _shown(path: str) -> str:
    return os.fsencode(path).decode("utf-8", errors="replace")


# --- candidates ------------------------------------------------------------------------


async def _git_files(cwd: Path) -> tuple[list[str], bool] | None:
    """`git ls-files -co --exclude-standard` in `cwd`, or None outside a work tree, and in a
    repository whose own configuration could make git run a program (`core.fsmonitor` runs
    on `ls-files`; policy/git_repo.py): a read-only tool never runs a repository's code."""
    git = shutil.which("git")
    if git is None or not await asyncio.to_thread(is_inert_for_git, cwd, os.environ):
        return None
    inside = await _git_output(git, cwd, ["rev-parse", "--is-inside-work-tree"], 1024)
    if inside is None or inside[0].strip() != b"true":
        return None
    listed = await _git_output(git, cwd, ["ls-files", "-z", "-c", "-o", "--exclude-standard"], None)
    if listed is None:
        return None
    raw, truncated = listed
    names = raw.split(b"\0")
    if names and names[-1] == b"":
        names.pop()
    capped = truncated or len(names) > MAX_CANDIDATES
    paths = await asyncio.to_thread(_existing_files, cwd, names[:MAX_CANDIDATES])
    return paths, capped


async def _git_output(
    git: str, cwd: Path, argv: list[str], max_bytes: int | None
) -> tuple[bytes, bool] | None:
    """Stdout of a git command (None when it fails) and whether it was cut short.

    Reading stops once `MAX_CANDIDATES` NUL-terminated names (or `max_bytes`) have arrived.
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            git,
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return None
    assert proc.stdout is not None
    chunks: list[bytes] = []
    names = size = 0
    truncated = False
    try:
        while chunk := await proc.stdout.read(256 * 1024):
            chunks.append(chunk)
            size += len(chunk)
            names += chunk.count(b"\0")
            if names > MAX_CANDIDATES or (max_bytes is not None and size > max_bytes):
                truncated = True
                break
    finally:
        if proc.returncode is None and truncated:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)  # not proc.kill(): see grep_files
        code = await proc.wait()
    if code != 0 and not truncated:
        return None
    return b"".join(chunks), truncated


def _existing_files(cwd: Path, names: list[bytes]) -> list[str]:
    """Decoded names that exist as non-directories (deleted files, submodules dropped)."""
    paths: list[str] = []
    seen: set[bytes] = set()
    base = os.fsencode(cwd)
    for name in names:
        if name in seen:
            continue  # a file with merge conflicts is listed once per stage
        seen.add(name)
        try:
            mode = os.lstat(os.path.join(base, name)).st_mode
        except OSError:
            continue
        if not stat.S_ISDIR(mode):
            paths.append(os.fsdecode(name))
    return paths


def _walk(cwd: Path) -> tuple[list[str], bool]:
    paths: list[str] = []
    for path in walk_files(cwd):
        if len(paths) == MAX_CANDIDATES:
            return paths, True
        paths.append(path)
    return paths, False


# --- scoring ---------------------------------------------------------------------------


def rank(terms: list[str], paths: list[str]) -> list[tuple[int, str]]:
    """(score, path) for every path matching all `terms`, best first (see module doc)."""
    sensitive = any(ch.isupper() for term in terms for ch in term)
    folded_terms = terms if sensitive else [_fold(term) for term in terms]
    found: list[tuple[int, str]] = []
    for path in paths:
        folded = path if sensitive else _fold(path)
        total = 0
        for term in folded_terms:
            value = _score_term(term, path, folded)
            if value is None:
                break
            total += value
        else:
            found.append((total, path))
    found.sort(key=lambda item: (-item[0], len(item[1]), item[1]))
    return found


def score(query: str, path: str) -> int | None:
    """The score of `path` for `query` (None when it does not match), as `rank` uses it."""
    ranked = rank(query.split(), [path])
    return ranked[0][0] if ranked else None


def _fold(text: str) -> str:
    """Lowercase `text` without changing its length (so indexes still line up)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)


def _char_class(ch: str) -> int:
    if ch.islower():
        return _LOWER
    if ch.isupper():
        return _UPPER
    if ch.isdigit():
        return _NUMBER
    if ch.isalpha():
        return _LETTER
    if ch == "/":
        return _DELIMITER
    if ch.isspace():
        return _WHITE
    return _NON_WORD


def _bonus(text: str, pos: int) -> int:
    """fzf's `bonusFor` for the character at `pos` (the start counts as after a `/`)."""
    prev = _char_class(text[pos - 1]) if pos else _DELIMITER
    cur = _char_class(text[pos])
    if cur > _NON_WORD:
        if prev == _DELIMITER:
            return BONUS_DELIMITER
        if prev in (_WHITE, _NON_WORD):
            return BONUS_BOUNDARY
    if (prev == _LOWER and cur == _UPPER) or (prev != _NUMBER and cur == _NUMBER):
        return BONUS_CAMEL
    if cur in (_NON_WORD, _DELIMITER, _WHITE):
        return BONUS_NON_WORD
    return 0


def _score_term(term: str, text: str, folded: str) -> int | None:
    """The best alignment score of `term` in `text` (`folded` is what is compared)."""
    pos = -1
    for ch in term:  # cheap rejection first
        pos = folded.find(ch, pos + 1)
        if pos < 0:
            return None
    name_start = text.rfind("/") + 1
    # One entry per position where the current term character can end an alignment:
    # (position, best score so far, bonus of the run it ends).
    entries: list[tuple[int, int, int]] = []
    pos = folded.find(term[0])
    while pos >= 0:
        bonus = _bonus(text, pos)
        start = SCORE_MATCH + bonus * FIRST_CHAR_MULTIPLIER
        entries.append((pos, start + (BONUS_FILENAME if pos >= name_start else 0), bonus))
        pos = folded.find(term[0], pos + 1)
    for ch in term[1:]:
        following: list[tuple[int, int, int]] = []
        j = 0
        # max of (score - GAP_EXTENSION * position) over the entries ending before pos - 1
        best_gap: int | None = None
        pos = folded.find(ch, entries[0][0] + 1)
        while pos >= 0:
            while j < len(entries) and entries[j][0] < pos - 1:
                candidate = entries[j][1] - GAP_EXTENSION * entries[j][0]
                best_gap = candidate if best_gap is None else max(best_gap, candidate)
                j += 1
            bonus = _bonus(text, pos)
            value: int | None = None
            run_bonus = bonus
            if best_gap is not None:  # a gap of g >= 1 costs GAP_START + (g-1) * GAP_EXTENSION
                gap = GAP_START - GAP_EXTENSION + GAP_EXTENSION * (pos - 1)
                value = best_gap + gap + SCORE_MATCH + bonus
            if j < len(entries) and entries[j][0] == pos - 1:
                _, previous, opening = entries[j]
                if bonus >= BONUS_BOUNDARY and bonus > opening:
                    opening = bonus
                consecutive = previous + SCORE_MATCH + max(bonus, opening, BONUS_CONSECUTIVE)
                if value is None or consecutive >= value:
                    value, run_bonus = consecutive, opening
            if value is not None:
                value += BONUS_FILENAME if pos >= name_start else 0
                following.append((pos, value, run_bonus))
            pos = folded.find(ch, pos + 1)
        if not following:
            return None
        entries = following
    return max(entry[1] for entry in entries)
