"""Command normalisation (approval grant keys) and the shell lexer it shares with
`safe_commands.py` (the known-safe command list).

`normalize_command` gives the grant key of an `exec` command (docs/protocol.md "Grant keys"). It is
a *key*, not a security decision, but a session grant covers every command with the same key,
so the key keeps everything that can change what runs. Invariant: two commands share a key only
when they run the same program with the same arguments and the same environment changes:

- leading `VAR=value` words and an `env` prefix (with its options) stay part of the key
  (`PATH=...`, `BASH_ENV=...`, `GIT_CONFIG_*=...` or `LD_PRELOAD=...` change what runs);
- `sh|bash|zsh|dash -c|-lc|-ic "<script>"` is unwrapped into the script's words only when the
  shell is a system one (a bare name or `/bin`, `/usr/bin`, `/usr/local/bin`) and the script is
  one plain simple command: words with no expansion, substitution, glob, tilde, operator or
  redirection, so the words the key shows are exactly the argv the shell runs;
- any other script keeps its exact text: `("<shell>", "-c", script)`, where `<shell>` is the
  shell's name (`bash` for a string command, which exec runs with `bash -c`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TRUSTED_BIN_DIRS", "normalize_command", "system_program"]

_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_SHELL_FLAG = re.compile(r"^-[li]*c[li]*$")
"""`-c` possibly combined with `-l` / `-i` (`-lc`, `-ic`, `-lic`, ...)."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_STRING_SHELL = "bash"
"""The shell `exec` runs a string command with (`bash -c <string>`)."""

TRUSTED_BIN_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin"})
"""Directories whose programs are the system's, not the workspace's."""


def system_program(word: str) -> str | None:
    """The program name of a command word: the word itself when it has no `/`, the base name
    for a path in `TRUSTED_BIN_DIRS`, else None (a path that may be the workspace's own)."""
    if "/" not in word:
        return word
    directory, name = os.path.split(word)
    return name if directory in TRUSTED_BIN_DIRS else None


# --- normalisation -------------------------------------------------------------------------


def normalize_command(command: list[str] | str) -> tuple[str, ...]:
    """The approval grant key of `command` (without the leading `"exec"`); see the module doc.

    A string runs as `bash -c <string>`, so it gets the key of that argv.
    """
    words = [_STRING_SHELL, "-c", command] if isinstance(command, str) else list(command)
    while True:
        shell = _shell_of(words)
        if shell is None:
            return tuple(words)
        script = words[2]
        plain = _plain_words(script)
        if plain is None:
            return (shell, "-c", script)
        words = plain


def _shell_of(words: Sequence[str]) -> str | None:
    """The shell's name when `words` is `<system shell> -c|-lc|-ic <script>`, else None."""
    if len(words) != 3 or _SHELL_FLAG.match(words[1]) is None:
        return None
    name = system_program(words[0])
    return name if name in _SHELLS else None


def _plain_words(script: str) -> list[str] | None:
    """The words of `script` when it is one plain simple command (see the module doc)."""
    try:
        tokens = _lex(script.strip(" \t\n"))
    except _Unsafe:
        return None
    words: list[str] = []
    for token in tokens:
        if isinstance(token, _Op) or token.dynamic:
            return None
        words.append(token.text)
    return words or None


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
"""Unquoted, these make a word's value unknown (globs and brace expansion)."""


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
            elif ch == "~" and (not in_word or (buf and buf[-1] in "=:")):
                dynamic = True  # tilde expansion (word start, or after `=` / `:`)
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
