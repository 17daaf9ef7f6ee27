"""`fileSearch`: find files by a fuzzy match on their paths (like fzf or Codex's file search).

Candidates: `rg --files --hidden` run in the session cwd (tools/ripgrep.py), so the files
are those grepFiles would search plus hidden ones: `.gitignore`, `.ignore` and `.rgignore`
rules apply inside and outside git repositories (a git-ignored file is not a candidate even
when tracked), version-control directories (`.git`, ...) are skipped, symlinks are not
followed, and only regular files are listed. `includeIgnored` drops the ignore rules (the
version-control directories stay skipped). At most `MAX_CANDIDATES` are considered, and the
output says when more existed. Paths are relative to the session cwd, `/`-separated.

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
import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from .base import PathRead, Tool, ToolContext, ToolError, ToolFacts, ToolResult, location
from .ripgrep import rg_error, running_rg

__all__ = ["FileSearchArgs", "FileSearchTool", "rank", "score", "search_paths"]

DEFAULT_LIMIT = 20
MAX_LIMIT = 200
MAX_CANDIDATES = 100_000
VCS_DIRS = (".git", ".hg", ".svn", ".bzr", "_darcs", ".jj")

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
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, defer_build=True
    )

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
    include_ignored: bool = Field(
        default=False,
        alias="includeIgnored",
        description="Also consider files that .gitignore (or .ignore) excludes, such as "
        "dependencies and build output (default false).",
    )


class FileSearchTool(Tool[FileSearchArgs]):
    name = "fileSearch"
    description = (
        "Find files by fuzzy-matching their paths (like fzf): returns paths relative to the "
        "working directory, best match first. Skips git-ignored files unless includeIgnored is "
        "true. Use it to locate a file "
        "whose name you partly know; use grepFiles to search file contents."
    )
    kind = "search"
    facts = ToolFacts(changes="nothing", files="read")
    args_model = FileSearchArgs

    def title(self, args: FileSearchArgs) -> str:
        return f"Find files matching {args.query}"

    def path_reads(self, args: FileSearchArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        """The working directory, whose file names (not contents) it reads."""
        return (PathRead(ctx.cwd),)

    async def run(self, args: FileSearchArgs, ctx: ToolContext) -> ToolResult:
        terms = args.query.split()
        if not terms:
            raise ToolError("the query is empty; give some characters of the path")
        limit = args.limit or DEFAULT_LIMIT
        paths, capped = await _candidates(ctx.cwd, include_ignored=args.include_ignored)
        ranked = await asyncio.to_thread(rank, terms, paths)
        shown = [path for _, path in ranked[:limit]]
        lines = [_shown(path) for path in shown]
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
            },
            locations=[location(ctx.cwd / _shown(path)) for path in shown],
        )


def _shown(path: str) -> str:
    return os.fsencode(path).decode("utf-8", errors="replace")


async def search_paths(cwd: Path, query: str, limit: int) -> tuple[list[str], bool]:
    """The best `limit` paths for `query` among the tool's candidates (`_cody/files/search`:
    a client's `@path` completion), and whether more matched. An empty query lists the
    files nearest the top first. Raises ToolError when the files cannot be listed."""
    paths, _ = await _candidates(cwd, include_ignored=False)
    terms = query.split()
    if terms:
        ranked = [path for _, path in await asyncio.to_thread(rank, terms, paths)]
    else:
        ranked = sorted(paths, key=lambda path: (path.count("/"), len(path), path))
    return [_shown(path) for path in ranked[:limit]], len(ranked) > limit


# --- candidates ------------------------------------------------------------------------


async def _candidates(cwd: Path, *, include_ignored: bool) -> tuple[list[str], bool]:
    """The files to rank (see module doc) and whether there were more than `MAX_CANDIDATES`."""
    argv = ["--files", "--null", "--hidden", "--no-require-git", "--no-ignore-global"]
    argv += ["--no-messages", "--sort=path"]
    argv += [f"--glob=!{name}" for name in VCS_DIRS]
    if include_ignored:
        argv.append("--no-ignore")
    chunks: list[bytes] = []
    names = 0
    capped = False
    async with running_rg(argv, cwd) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.ensure_future(proc.stderr.read())
        try:
            while chunk := await proc.stdout.read(256 * 1024):
                chunks.append(chunk)
                names += chunk.count(b"\0")
                if names > MAX_CANDIDATES:
                    capped = True
                    break
            if not capped and await proc.wait() == 2 and not chunks:
                raise ToolError(f"cannot list files: {rg_error(await errors, 2)}")
        finally:
            errors.cancel()
    listed = b"".join(chunks).split(b"\0")
    if listed and listed[-1] == b"":
        listed.pop()
    paths = [os.fsdecode(name) for name in listed[:MAX_CANDIDATES]]
    return paths, capped


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
