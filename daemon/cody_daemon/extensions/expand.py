"""A custom command's text with the user's arguments in place (docs/extensions.md
"Arguments"), each source numbering them as its own agent does:

- Claude Code (`.claude/commands`, skills) and Cody (`.cody/commands`): `$ARGUMENTS` is the
  whole argument text; `$ARGUMENTS[N]` and `$N` are the words (split as a shell would), `$0`
  the first;
- Codex (`$CODEX_HOME/prompts`): `$1`..`$9` are the words, `$1` the first, `$ARGUMENTS` all of
  them, `$$` stays `$$`; a prompt with named placeholders (`$FILE`, upper case) takes
  `KEY=value` words instead and refuses to run without every one of them.
Arguments given to a text that uses none of these are not dropped: `ARGUMENTS: <text>` is
appended (as Claude Code does).

`` !`command` `` in the file is taken out before any argument is put in (an argument cannot
become a command of its own), replaced by a placeholder the engine fills with the command's
output once it ran through the approvals; arguments used inside it are put in. `@path`
references are found in the result (the engine attaches the files, project files only).

Invariants: pure functions; a placeholder is `SHELL_MARK` + number + `SHELL_MARK` (NUL cannot
occur in a command file: extensions/files.py refuses binary text).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Final

from .files import Origin

__all__ = ["SHELL_MARK", "Expanded", "ExpansionError", "expand", "file_references"]

SHELL_MARK: Final = "\0"
_SHELL = re.compile(r"!`([^`\n]+)`")
_CLAUDE_ARG = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)")
_CODEX_NAMED = re.compile(r"(?<!\$)\$([A-Z][A-Z0-9_]*)")
_CODEX_ARG = re.compile(r"\$\$|\$([1-9])|\$ARGUMENTS")
_FILE_REF = re.compile(r"(?:(?<=\s)|^)@([^\s`'\"<>@]+)")
_TRAILING = ".,;:!?)]}"


class ExpansionError(Exception):
    """The arguments do not fit the command (a Codex prompt's missing `KEY=value`)."""


@dataclass(frozen=True, slots=True)
class Expanded:
    text: str
    shell: tuple[str, ...] = ()
    """The `` !`command` ``s, in order; placeholder i in `text` stands for `shell[i]`."""


def expand(body: str, arguments: str, origin: Origin, *, name: str) -> Expanded:
    """`body` with `arguments` in place (`name`: the command, for error messages)."""
    commands: list[str] = []

    def take(match: re.Match[str]) -> str:
        commands.append(match.group(1))
        return f"{SHELL_MARK}{len(commands) - 1}{SHELL_MARK}"

    text = _SHELL.sub(take, body)
    if origin == "codex":
        text, used = _codex(text, arguments, name)
        done = [_codex(command, arguments, name) for command in commands]
    else:
        text, used = _claude(text, arguments)
        done = [_claude(command, arguments) for command in commands]
    commands = [command for command, _ in done]
    used = used or any(put for _, put in done)
    if arguments.strip() and not used:
        text = f"{text.rstrip()}\n\nARGUMENTS: {arguments.strip()}"
    return Expanded(text=text, shell=tuple(commands))


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unclosed quote: plain words
        return arguments.split()


def _claude(text: str, arguments: str) -> tuple[str, bool]:
    words = _words(arguments)
    used = False

    def put(match: re.Match[str]) -> str:
        nonlocal used
        used = True
        index = match.group(1) or match.group(2)
        if index is None:
            return arguments.strip()
        position = int(index)
        return words[position] if position < len(words) else ""

    return _CLAUDE_ARG.sub(put, text), used


def _codex(text: str, arguments: str, name: str) -> tuple[str, bool]:
    named = [n for n in dict.fromkeys(_CODEX_NAMED.findall(text)) if n != "ARGUMENTS"]
    if named:
        values: dict[str, str] = {}
        for token in _words(arguments):
            key, equals, value = token.partition("=")
            if not equals or not key:
                raise ExpansionError(
                    f"/{name} takes KEY=value arguments ({', '.join(named)}), not {token!r}; "
                    "quote values that hold spaces"
                )
            values[key] = value
        missing = [n for n in named if n not in values]
        if missing:
            raise ExpansionError(
                f"/{name} needs {', '.join(missing)}: give them as KEY=value "
                "(quote values that hold spaces)"
            )

        def put_named(match: re.Match[str]) -> str:
            return values.get(match.group(1), match.group(0))

        return _CODEX_NAMED.sub(put_named, text), True
    words = _words(arguments)
    used = False

    def put(match: re.Match[str]) -> str:
        nonlocal used
        whole = match.group(0)
        if whole == "$$":
            return whole
        used = True
        if match.group(1) is None:
            return " ".join(words)
        position = int(match.group(1)) - 1
        return words[position] if position < len(words) else ""

    return _CODEX_ARG.sub(put, text), used


def file_references(text: str) -> list[str]:
    """The `@path` references of `text`, in order, each once (trailing punctuation is not
    part of a path; `name@host` is not a reference)."""
    found: list[str] = []
    for match in _FILE_REF.finditer(text):
        path = match.group(1).rstrip(_TRAILING)
        if path and path not in found:
            found.append(path)
    return found
