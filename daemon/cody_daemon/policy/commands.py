"""Command normalisation (approval grant keys) and the shell lexer it shares with
`safe_commands.py` (the known-safe command list).

`normalize_command` gives the grant key of an `exec` command (PROTOCOL.md "Grant keys"): the
argv a user would recognise as "the same command", whatever the spelling (argv list, shell
string, `bash -lc "..."`, `VAR=value` / `env` prefixes). It is a *key*, not a security
decision: two commands share a grant only when their normalised argv is identical.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["UNPARSABLE", "normalize_command"]

UNPARSABLE = "<unparsable>"
"""First word of the grant key of a shell string that cannot be split into words."""

_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_SHELL_FLAG = re.compile(r"^-[li]*c[li]*$")
"""`-c` possibly combined with `-l` / `-i` (`-lc`, `-ic`, `-lic`, ...)."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


class _Unparsable(Exception):
    """A shell string that cannot be split into words (unbalanced quotes, ...)."""


# --- normalisation -------------------------------------------------------------------------


def normalize_command(command: list[str] | str) -> tuple[str, ...]:
    """The approval grant key of `command` (without the leading `"exec"`).

    A string is split with `shlex` (the words `bash -c` would see); leading `VAR=value`
    words and an `env` prefix (with its own `VAR=value` words) are dropped; `sh|bash|zsh|dash
    -c|-lc|-ic "<string>"` (any path to the shell) is unwrapped into the string's words,
    recursively. A string that cannot be split gives `("<unparsable>", command)`, which
    matches no other command.
    """
    if isinstance(command, str):
        try:
            words = _split(command)
        except _Unparsable:
            return (UNPARSABLE, command)
    else:
        words = list(command)
    while True:
        words = _strip_env_prefix(words)
        script = _shell_script(words)
        if script is None:
            return tuple(words)
        try:
            words = _split(script)
        except _Unparsable:
            return (UNPARSABLE, script)


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise _Unparsable(str(exc)) from None


def _strip_env_prefix(words: list[str]) -> list[str]:
    """Drop leading `VAR=value` words and an `env` prefix; never returns an empty argv."""
    rest = words
    while rest and _ASSIGNMENT.match(rest[0]):
        rest = rest[1:]
    if len(rest) > 1 and os.path.basename(rest[0]) == "env" and not rest[1].startswith("-"):
        rest = rest[1:]
        while rest and _ASSIGNMENT.match(rest[0]):
            rest = rest[1:]
    return rest if rest else words


def _shell_script(words: Sequence[str]) -> str | None:
    """The script of a `bash -c "<script>"` style argv, else None."""
    if (
        len(words) == 3
        and os.path.basename(words[0]) in _SHELLS
        and _SHELL_FLAG.match(words[1]) is not None
    ):
        return words[2]
    return None


# --- a small shell lexer that keeps quoting information ------------------------------------


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    """The word after quote removal."""
    dynamic: bool = False
    """Contains an unquoted glob / brace, or a `$` expansion: its final value is unknown."""


@dataclass(frozen=True, slots=True)
class _Op:
    text: str


class _Unsafe(Exception):
    """The string uses a shell feature that can write or run arbitrary code."""


_OPERATORS = ("&&", "||", ";;", ";&", "|&", ">>", "<<", "&>", ">&", "<&", "<>", ">|")
_OPERATOR_CHARS = frozenset(";&|<>()")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "|&", "\n"})
_GLOB_CHARS = frozenset("*?[{")


def _lex(text: str) -> list[_Word | _Op]:
    """Split a shell string into words and operators, as bash would (conservatively).

    Raises `_Unsafe` for command substitution, `${...}` / `$((...))` expansions and
    unterminated quotes: they are never needed by a known-safe command.
    """
    tokens: list[_Word | _Op] = []
    buf: list[str] = []
    in_word = False
    dynamic = False
    i, n = 0, len(text)

    def end_word() -> None:
        nonlocal in_word, dynamic
        if in_word:
            tokens.append(_Word("".join(buf), dynamic))
        buf.clear()
        in_word = False
        dynamic = False

    def dollar(at: int) -> bool:
        """Check a `$` at `at`; True when it starts a (plain) parameter expansion."""
        nxt = text[at + 1] if at + 1 < n else ""
        if nxt in ("(", "{", "["):
            raise _Unsafe("command substitution or complex expansion")
        if nxt in ("'", '"'):
            raise _Unsafe("$'...' / $\"...\" quoting")
        return nxt.isalnum() or nxt in "_@*#?$!-"

    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2  # line continuation
                continue
            buf.append(text[i + 1] if i + 1 < n else "")
            in_word = True
            i += 2
        elif ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise _Unsafe("unterminated quote")
            buf.append(text[i + 1 : end])
            in_word = True
            i = end + 1
        elif ch == '"':
            i += 1
            while True:
                if i >= n:
                    raise _Unsafe("unterminated quote")
                c = text[i]
                if c == '"':
                    i += 1
                    break
                if c == "`":
                    raise _Unsafe("command substitution")
                if c == "$" and dollar(i):
                    dynamic = True
                if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
                    buf.append(text[i + 1])
                    i += 2
                    continue
                buf.append(c)
                i += 1
            in_word = True
        elif ch == "`":
            raise _Unsafe("command substitution")
        elif ch in " \t":
            end_word()
            i += 1
        elif ch == "\n":
            end_word()
            tokens.append(_Op("\n"))
            i += 1
        elif ch == "#" and not in_word:
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif ch in _OPERATOR_CHARS:
            end_word()
            op = next((o for o in _OPERATORS if text.startswith(o, i)), ch)
            tokens.append(_Op(op))
            i += len(op)
        else:
            if (ch == "$" and dollar(i)) or ch in _GLOB_CHARS:
                dynamic = True
            buf.append(ch)
            in_word = True
            i += 1
    end_word()
    return tokens


def _commands(text: str) -> list[list[_Word]]:
    """The simple commands of a shell string joined by `&&`, `||`, `;`, `|` or newlines.

    Raises `_Unsafe` for any other operator (redirections, background `&`, subshells).
    """
    parts: list[list[_Word]] = [[]]
    for token in _lex(text):
        if isinstance(token, _Word):
            parts[-1].append(token)
        elif token.text in _SEPARATORS:
            if not parts[-1]:
                if token.text == "\n":
                    continue  # blank line
                raise _Unsafe(f"empty command before {token.text!r}")
            parts.append([])
        else:
            raise _Unsafe(f"shell operator {token.text!r}")
    if not parts[-1]:
        parts.pop()
    return parts
