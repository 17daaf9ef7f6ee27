"""The simple commands a shell command runs, for permission rules (policy/rules.py).

Rules match the same normalised argv as grant keys (`commands.normalize_command`), one simple
command at a time, so `git diff && rm -rf x` is allowed by rules only when both `git diff`
and `rm -rf x` are. Two views:

- `split_command` (for allow rules): the exact parts, or None when the command cannot be
  split safely: command or process substitution, `${...}`, subshells, background jobs,
  here-documents, `eval` / `source` / `.`, an unterminated quote, or a redirection that
  writes outside the writable roots (`may_write`). Invariant: every program the command can
  run is the first word of one part (a part's words after the first may be dynamic, e.g.
  `$FILE`; their expansion can add arguments but never start another command).
- `loose_parts` (for deny and ask rules): every run of words that *might* be a command,
  including inside substitutions and after assignments or wrappers such as `env` and
  `sudo`. Over-matching here only asks or refuses more; it is a best effort, not a sandbox
  (a command built at run time, `$(echo rm) -rf x`, cannot be recognised).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .commands import _ASSIGNMENT, _SHELL_FLAG, _SHELLS, _lex, _Unsafe, _Word, system_program
from .commands import normalize_command as _normalize

__all__ = ["CommandPart", "loose_parts", "part_shape", "split_command"]

_SEPARATORS = frozenset({"&&", "||", ";", "|", "|&", "\n"})
_WRITES = frozenset({">", ">>", ">|", "&>", "<>"})
_READS = frozenset({"<"})
_DUPS = frozenset({">&", "<&"})
_CODE_RUNNERS = frozenset({"eval", "source", "."})
"""Programs that run a string or a file as shell code: what they run is not a part."""
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_MAX_DEPTH = 4
_LOOSE_BREAKS = re.compile(r"\$\(|<\(|>\(|`|[;&|(){}\n]")
_WRAPPERS = frozenset({"env", "command", "builtin", "exec", "nohup", "sudo", "doas", "time"})


@dataclass(frozen=True, slots=True)
class CommandPart:
    """One simple command: its words after quote removal, and which of them are dynamic
    (an unquoted glob, tilde or `$` expansion: the value is known only when it runs)."""

    words: tuple[str, ...]
    dynamic: tuple[bool, ...]

    @classmethod
    def literal(cls, words: tuple[str, ...]) -> CommandPart:
        return cls(words, (False,) * len(words))


def split_command(
    command: list[str] | str, *, cwd: Path, may_write: Callable[[Path], bool]
) -> tuple[CommandPart, ...] | None:
    """The simple commands `command` runs (see the module doc); None: it cannot be split."""
    key = _normalize(command)
    script = _script_of(key)
    if script is None:
        if system_program(key[0]) in _CODE_RUNNERS:
            return None
        return (CommandPart.literal(key),)
    return _split_script(script, cwd, may_write, 0)


def _script_of(words: tuple[str, ...] | list[str]) -> str | None:
    """The script of `<system shell> -c <script>` (as `normalize_command` keeps it)."""
    if len(words) != 3 or _SHELL_FLAG.match(words[1]) is None:
        return None
    return words[2] if system_program(words[0]) in _SHELLS else None


def _split_script(
    script: str, cwd: Path, may_write: Callable[[Path], bool], depth: int
) -> tuple[CommandPart, ...] | None:
    if depth > _MAX_DEPTH:
        return None
    try:
        tokens = _lex(script.strip(" \t\n"))
    except _Unsafe:
        return None
    parts: list[CommandPart] = []
    words: list[_Word] = []

    def close(separator: str) -> bool:
        if not words:
            return separator == "\n"  # a blank line; `&& ls` or `; ;` is not a command
        nested = _part(words, cwd, may_write, depth)
        if nested is None:
            return False
        parts.extend(nested)
        words.clear()
        return True

    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if isinstance(token, _Word):
            words.append(token)
            continue
        op = token.text
        if op in _SEPARATORS:
            if not close(op):
                return None
            continue
        if op in _WRITES | _READS | _DUPS:
            if index >= len(tokens):
                return None
            target = tokens[index]
            index += 1
            if not isinstance(target, _Word) or target.dynamic:
                return None
            if op in _DUPS and (target.text.isdigit() or target.text == "-"):
                continue  # `2>&1`, `>&-`: a file descriptor, not a file
            if op in _READS:
                continue
            path = Path(os.path.realpath(cwd / os.path.expanduser(target.text)))
            if str(path) not in _HARMLESS_TARGETS and not may_write(path):
                return None
            continue
        return None  # `&`, `(`, `)`, `<<`, `;;`: background, subshell, here-document, case
    if words and not close(";"):
        return None
    return tuple(parts) or None


def _part(
    words: list[_Word], cwd: Path, may_write: Callable[[Path], bool], depth: int
) -> tuple[CommandPart, ...] | None:
    """One simple command; a plain `<shell> -c <script>` is replaced by the script's parts."""
    texts = tuple(word.text for word in words)
    if words[0].dynamic or system_program(texts[0]) in _CODE_RUNNERS:
        return None
    nested = _script_of(texts)
    if nested is not None and not any(word.dynamic for word in words):
        return _split_script(nested, cwd, may_write, depth + 1)
    return (CommandPart(texts, tuple(word.dynamic for word in words)),)


# -- the loose view (deny and ask rules) ------------------------------------------------------


def loose_parts(command: list[str] | str) -> list[tuple[str, ...]]:
    """Every run of words that might be a command (see the module doc), wrappers stripped."""
    key = _normalize(command)
    found: list[tuple[str, ...]] = []
    _loose_argv(key, found, 0)
    return found


def _loose_argv(words: tuple[str, ...], found: list[tuple[str, ...]], depth: int) -> None:
    words = _unwrapped(words)
    if not words:
        return
    found.append(words)
    name = os.path.basename(words[0])
    if depth < _MAX_DEPTH and name in _SHELLS:
        for index, word in enumerate(words[1:-1], start=1):
            if _SHELL_FLAG.match(word):
                _loose_script(words[index + 1], found, depth + 1)
                break
    elif depth < _MAX_DEPTH and name in _CODE_RUNNERS and len(words) > 1:
        _loose_script(" ".join(words[1:]), found, depth + 1)


def _loose_script(script: str, found: list[tuple[str, ...]], depth: int) -> None:
    for segment in _LOOSE_BREAKS.split(script):
        try:
            words = shlex.split(segment, comments=False, posix=True)
        except ValueError:
            words = segment.split()
        words = [w for w in words if not w.startswith((">", "<")) and not _is_fd_redirect(w)]
        if words:
            _loose_argv(tuple(words), found, depth)


def _is_fd_redirect(word: str) -> bool:
    return bool(re.match(r"^\d*[<>]", word))


def _unwrapped(words: tuple[str, ...]) -> tuple[str, ...]:
    """`words` without leading assignments and wrappers (`env -i X=1`, `sudo`, `nohup`...)."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
        elif os.path.basename(word) in _WRAPPERS:
            index += 1
            while index < len(words) and words[index].startswith("-"):
                index += 1
        else:
            break
    return words[index:]


def part_shape(part: CommandPart) -> str:
    """The part as a shell would read it (for messages)."""
    return shlex.join(part.words)
