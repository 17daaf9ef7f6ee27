"""Which files a search looks at: ripgrep's ignore rules, in pure Python.

`walk_files` yields the files ripgrep would search under a root when run as
`rg --no-require-git --no-ignore-global --sort path [--glob G] [--max-filesize N]`, in
the same order. It exists so `grepFiles` gives the same answer with or without `rg`
installed, and so `fileSearch` can list files outside a git work tree.

Supported (mirroring the `ignore` crate that ripgrep uses):
- Ignore files in every directory from `/` down: `.gitignore`, `.ignore`, `.rgignore`, and
  `.git/info/exclude` of a repository (a directory holding `.git`). `.gitignore` and the
  exclude file stop applying above the first directory that holds `.git`; `.ignore` and
  `.rgignore` do not. Precedence: `.rgignore` > `.ignore` > `.gitignore` > exclude; within
  one kind, the deepest file with a matching line decides, and in a file the last
  matching line wins.
- Line syntax: `#` comments, blank lines, trailing spaces (kept when escaped as `\\ `),
  `!` negation, `\\!` / `\\#` escapes, a leading `/` or a `/` in the middle anchors the
  pattern to the file's directory (otherwise it matches at any depth), a trailing `/`
  matches directories only, `**/`, `/**/`, `/**`, `*`, `?`, `[...]` (`!` or `^` negates),
  `{a,b}` alternatives and `\\` escapes. A line that is not a valid glob is skipped.
- Hidden entries (name starts with `.`) are skipped unless an ignore file whitelists them
  (`!.github/`) or the override glob matches them. Symlinks are never followed or listed;
  only regular files are yielded. Ignored directories are not descended into, so nothing
  below them can be re-included (as in git).
- An override glob (`grepFiles`' `include`, ripgrep's `--glob`) beats everything: a match
  includes the entry even if ignored or hidden, a `!glob` match excludes it, and when the
  override has a positive glob, files (never directories) that do not match are skipped.

Not supported: the global excludes file (`core.excludesFile`; ripgrep is told to skip it
too), `.git` files pointing elsewhere (worktrees: their exclude file is not read, as with
ripgrep 13), case-insensitive globs. Order: entries sorted by the bytes of their names
within each directory, depth first (ripgrep's `--sort path`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GlobError", "IgnoreRules", "Override", "glob_to_regex", "walk_files"]

NONE, IGNORE, WHITELIST = 0, 1, 2
"""Results of matching a path against ignore rules."""

_KINDS = (".rgignore", ".ignore", ".gitignore")
"""Per-directory ignore files, highest precedence first (the exclude file comes last)."""


class GlobError(ValueError):
    """A glob that cannot be parsed (the message says why)."""


def glob_to_regex(glob: str) -> str:
    """A Python regex (for `fullmatch`) equivalent to `glob` in globset's gitignore mode.

    `*` and `?` never match `/`; `**` is recursive only as a whole path component (else it
    is two `*`); `{a,b}` groups cannot nest; `\\` escapes the next character.
    """
    branches: list[list[str]] = [[]]  # the pattern, then the branches of an open `{`
    i, n = 0, len(glob)
    prev: str | None = None
    while i < n:
        c = glob[i]
        i += 1
        tokens = branches[-1]
        if c == "?":
            tokens.append("[^/]")
        elif c == "*":
            i = _star(glob, i, prev, branches)
        elif c == "[":
            i, token = _parse_class(glob, i)
            tokens.append(token)
        elif c == "{":
            if len(branches) > 1:
                raise GlobError(f"nested {{...}} groups are not supported in {glob!r}")
            branches.append([])
        elif c == "}" and len(branches) > 1:
            alternatives = ["".join(branch) for branch in branches[1:]]
            del branches[1:]
            kept = [alt for alt in alternatives if alt]
            if kept:
                branches[0].append("(?:" + "|".join(kept) + ")")
        elif c == "," and len(branches) > 1:
            branches.append([])
        elif c == "\\":
            if i >= n:
                raise GlobError(f"dangling backslash at the end of {glob!r}")
            c = glob[i]
            i += 1
            tokens.append(re.escape(c))
        else:
            tokens.append(re.escape(c))
        prev = glob[i - 1]
    if len(branches) > 1:
        raise GlobError(f"unclosed {{ in {glob!r}")
    if branches[0] == [_PREFIX]:
        return ".*"
    return "".join(branches[0])


_PREFIX = "(?:/?|.*/)"
_SUFFIX = "/.*"
_MIDDLE = "(?:/|/.*/)"
_STAR = "[^/]*"


def _star(glob: str, i: int, prev: str | None, branches: list[list[str]]) -> int:
    """Parse a `*` (at `i - 1`) as globset does; returns the index after it."""
    tokens = branches[-1]
    peek = glob[i] if i < len(glob) else None
    if peek != "*":
        tokens.append(_STAR)
        return i
    i += 1
    peek = glob[i] if i < len(glob) else None
    if not tokens:
        if peek is not None and peek != "/":
            tokens += [_STAR, _STAR]
            return i
        tokens.append(_PREFIX)
        return i + (peek is not None)
    in_group = len(branches) > 1
    if prev != "/" and (not in_group or prev not in (",", "{")):
        tokens += [_STAR, _STAR]
        return i
    if peek is None:
        is_suffix = True
    elif peek in (",", "}") and in_group:
        is_suffix = True  # the `,` / `}` is left for the caller
    elif peek == "/":
        is_suffix = False
        i += 1
    else:
        tokens += [_STAR, _STAR]
        return i
    last = tokens.pop()
    if last in (_PREFIX, _SUFFIX):
        tokens.append(last)
    else:
        tokens.append(_SUFFIX if is_suffix else _MIDDLE)
    return i


def _parse_class(glob: str, i: int) -> tuple[int, str]:
    """Parse a `[...]` class starting after `[`; returns (index after `]`, regex)."""
    n = len(glob)
    negated = i < n and glob[i] in "!^"
    i += negated
    ranges: list[tuple[str, str]] = []
    first = True
    in_range = False
    while True:
        if i >= n:
            raise GlobError(f"unclosed character class in {glob!r}")
        c = glob[i]
        i += 1
        if c == "]" and not first:
            break
        if c == "-" and not first and not in_range:
            in_range = True
        elif in_range:
            lo = ranges[-1][0]
            if c < lo:
                raise GlobError(f"invalid range {lo}-{c} in {glob!r}")
            ranges[-1] = (lo, c)
            in_range = False
        else:
            ranges.append((c, c))
        first = False
    if in_range:
        ranges.append(("-", "-"))
    body = "".join(
        re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in ranges
    )
    return i, f"[{'^' if negated else ''}{body}]"


@dataclass(frozen=True)
class _Rule:
    regex: str
    whitelist: bool
    dir_only: bool


def _parse_line(line: str) -> _Rule | None:
    """One gitignore line as the `ignore` crate reads it (None: comment or blank).

    Raises GlobError when the line is not a valid glob.
    """
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line:
        return None
    whitelist = anchored = dir_only = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
        anchored = line.startswith("/")
    else:
        if line.startswith("!"):
            whitelist = True
            line = line[1:]
        if line.startswith("/"):
            line = line[1:]
            anchored = True
    if line.endswith("/"):
        dir_only = True
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    actual = line
    if not anchored and "/" not in line and not (line.startswith("**/") or line == "**"):
        actual = "**/" + line
    if actual.endswith("/**"):
        actual += "/*"
    return _Rule(glob_to_regex(actual), whitelist, dir_only)


def _parse_lenient(line: str) -> _Rule | None:
    try:
        return _parse_line(line)
    except GlobError:
        return None  # as git and ripgrep do, a bad line is skipped


class IgnoreRules:
    """The lines of one ignore file (or override globs); the last matching line wins."""

    def __init__(self, text: str, *, strict: bool = False) -> None:
        """Parse `text`; with `strict`, a bad glob raises GlobError instead of being skipped."""
        text = text.removeprefix("\ufeff")
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        parse = _parse_line if strict else _parse_lenient
        rules = [rule for rule in map(parse, lines) if rule is not None]
        self.ignore_rules = sum(not rule.whitelist for rule in rules)
        self._dir = _combine(rules)
        self._file = _combine([r for r in rules if not r.dir_only])

    def __bool__(self) -> bool:
        return self._dir is not None

    def match(self, rel: str, is_dir: bool) -> int:
        """NONE, IGNORE or WHITELIST for `rel` (a `/`-separated path relative to the file)."""
        combined = self._dir if is_dir else self._file
        if combined is None:
            return NONE
        found = combined[0].fullmatch(rel)
        if found is None:
            return NONE
        return WHITELIST if combined[1][(found.lastindex or 1) - 1] else IGNORE


def _combine(rules: list[_Rule]) -> tuple[re.Pattern[str], list[bool]] | None:
    """One regex trying the rules last-first (so the first match found is the winner)."""
    if not rules:
        return None
    ordered = rules[::-1]
    pattern = "|".join(f"({rule.regex})" for rule in ordered)
    return re.compile(pattern), [rule.whitelist for rule in ordered]


class Override:
    """An override glob (ripgrep `--glob`): include on match, `!glob` excludes on match."""

    def __init__(self, glob: str) -> None:
        """Raises GlobError for an invalid glob."""
        self._rules = IgnoreRules(glob, strict=True)

    def match(self, rel: str, is_dir: bool) -> int:
        found = self._rules.match(rel, is_dir)
        if found == IGNORE:
            return WHITELIST
        if found == WHITELIST:
            return IGNORE
        if self._rules.ignore_rules and not is_dir:
            return IGNORE
        return NONE


@dataclass(frozen=True)
class _Frame:
    """The ignore files of one directory (`prefix` is its path with a trailing `/`)."""

    prefix: str
    has_git: bool
    rules: tuple[IgnoreRules | None, ...]
    """`.rgignore`, `.ignore`, `.gitignore`, `.git/info/exclude`."""


def _read_rules(path: str) -> IgnoreRules | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(4 * 1024 * 1024)
    except OSError:
        return None
    rules = IgnoreRules(data.decode("utf-8", errors="replace"))
    return rules if rules else None


def _frame(directory: str) -> _Frame | None:
    prefix = directory if directory.endswith("/") else directory + "/"
    git = prefix + ".git"
    has_git = os.path.exists(git)
    rules = [_read_rules(prefix + name) for name in _KINDS]
    rules.append(_read_rules(git + "/info/exclude") if os.path.isdir(git) else None)
    if not has_git and not any(rules):
        return None
    return _Frame(prefix, has_git, tuple(rules))


def _ignore_match(chain: tuple[_Frame, ...], path: str, is_dir: bool) -> int:
    """The decision of the ignore files in `chain` (deepest first) for absolute `path`."""
    found = [NONE, NONE, NONE, NONE]
    saw_git = False
    for frame in chain:
        rel = path[len(frame.prefix) :]
        for kind, rules in enumerate(frame.rules):
            if rules is not None and not found[kind] and (kind < 2 or not saw_git):
                found[kind] = rules.match(rel, is_dir)
        if found[0]:
            return found[0]
        saw_git = saw_git or frame.has_git
    return next((m for m in found if m), NONE)


def _ancestor_chain(root: str) -> tuple[_Frame, ...]:
    frames: list[_Frame] = []
    current = root
    while True:
        frame = _frame(current)
        if frame is not None:
            frames.append(frame)
        parent = os.path.dirname(current)
        if parent == current:
            return tuple(frames)
        current = parent


def walk_files(
    root: Path, *, override: Override | None = None, max_filesize: int | None = None
) -> Iterator[str]:
    """Paths (relative to `root`, `/`-separated) of the files a search of `root` covers.

    `root` must be an absolute, resolved directory; it is never itself filtered out.
    Unreadable directories are skipped silently.
    """
    top = str(root)
    stack: list[tuple[str, tuple[_Frame, ...], Iterator[os.DirEntry[str]]]] = []

    def enter(directory: str, rel: str, chain: tuple[_Frame, ...]) -> None:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: os.fsencode(e.name))
        except OSError:
            return
        stack.append((rel, chain, iter(entries)))

    enter(top, "", _ancestor_chain(top))
    while stack:
        rel_dir, chain, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        try:
            if entry.is_symlink():
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and not entry.is_file(follow_symlinks=False):
                continue  # sockets, devices, pipes
            rel = rel_dir + entry.name
            if _skipped(entry, rel, is_dir, chain, override):
                continue
            if is_dir:
                child = _frame(entry.path)
                enter(entry.path, rel + "/", chain if child is None else (child, *chain))
            elif max_filesize is None or entry.stat(follow_symlinks=False).st_size <= max_filesize:
                yield rel
        except OSError:
            continue


def _skipped(
    entry: os.DirEntry[str],
    rel: str,
    is_dir: bool,
    chain: tuple[_Frame, ...],
    override: Override | None,
) -> bool:
    if override is not None:
        decided = override.match(rel, is_dir)
        if decided:
            return decided == IGNORE
    decided = _ignore_match(chain, entry.path, is_dir)
    if decided:
        return decided == IGNORE
    return entry.name.startswith(".")
