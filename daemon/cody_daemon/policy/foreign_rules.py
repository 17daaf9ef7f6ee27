"""Reading other agents' permission rules, read-only: Codex `prefix_rule`s and Claude Code
`settings.json` `permissions` (policy/rule_sources.py turns them into Cody rules).

These files may be hostile (a cloned project's `.claude/settings.json`) or simply strange,
so, invariants:
- only regular files are read (a FIFO, a device or a directory is skipped without blocking:
  opened with O_NONBLOCK, checked with fstat), at most `MAX_FILE_BYTES` each (a larger file
  is skipped with a warning), at most `MAX_RULE_FILES` `.rules` files per directory;
- nothing is evaluated: a `.rules` file is Starlark, read by a small tokenizer that accepts
  only calls with keyword arguments whose values are strings, lists (nested at most
  `MAX_DEPTH`) and `True`/`False`/`None`; any other construct skips the whole file with a
  warning (never half a file: a dropped `forbidden` rule must not leave its `allow`s);
- a `prefix_rule` pattern with alternatives expands to at most `MAX_EXPANSIONS` prefixes;
- JSON that is not an object, too deep (RecursionError) or not UTF-8 skips the file.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_FILE_BYTES",
    "ForeignRule",
    "ForeignRules",
    "UnreadableFile",
    "read_claude_settings",
    "read_codex_rules",
    "read_regular_file",
]

MAX_FILE_BYTES = 1024 * 1024
MAX_RULE_FILES = 100
MAX_DEPTH = 4
MAX_EXPANSIONS = 64
_CODEX_DECISIONS = {"allow": "allow", "prompt": "ask", "forbidden": "deny"}


@dataclass(frozen=True, slots=True)
class ForeignRule:
    text: str
    """In Cody's syntax (`exec(git push:*)`, or the Claude Code rule as written)."""
    decision: str
    source: str


@dataclass(slots=True)
class ForeignRules:
    rules: list[ForeignRule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    found: bool = False
    """Some file with rules exists (for "ignored because the project is not trusted")."""


class UnreadableFile(Exception):
    """The file cannot be used; the message says why."""


def read_regular_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most `limit` bytes; None when it
    does not exist. Raises `UnreadableFile` (anything else: not a file, too large, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnreadableFile(f"cannot open it: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file")
        if info.st_size > limit:
            raise UnreadableFile(f"larger than {limit} bytes")
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, 65536):
            total += len(chunk)
            if total > limit:
                raise UnreadableFile(f"larger than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


# -- Claude Code ------------------------------------------------------------------------------


def read_claude_settings(path: Path, into: ForeignRules) -> None:
    """`permissions.allow/ask/deny` of a Claude Code settings file, rules as written."""
    try:
        raw = read_regular_file(path)
        if raw is None:
            return
        data = json.loads(raw.decode("utf-8"))
    except UnreadableFile as exc:
        into.warnings.append(f"ignored {path}: {exc}")
        return
    except (UnicodeDecodeError, ValueError, RecursionError):
        into.warnings.append(f"ignored {path}: not a JSON file Cody can read")
        return
    permissions = data.get("permissions") if isinstance(data, dict) else None
    if not isinstance(permissions, dict):
        return
    for decision in ("allow", "ask", "deny"):
        entries = permissions.get(decision)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if isinstance(entry, str):
                into.found = True
                into.rules.append(ForeignRule(entry, decision, str(path)))


# -- Codex ------------------------------------------------------------------------------------


def read_codex_rules(directory: Path, into: ForeignRules) -> None:
    """Every `prefix_rule` of `<directory>/*.rules` (Codex's `~/.codex/rules`)."""
    try:
        with os.scandir(directory) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".rules"))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        into.warnings.append(f"ignored {directory}: {exc.strerror or exc}")
        return
    if len(names) > MAX_RULE_FILES:
        into.warnings.append(f"read only the first {MAX_RULE_FILES} rule files of {directory}")
    for name in names[:MAX_RULE_FILES]:
        path = directory / name
        try:
            raw = read_regular_file(path)
            if raw is None:
                continue
            calls = _parse_starlark_calls(raw.decode("utf-8"))
            rules = [rule for call in calls for rule in _prefix_rules(call, str(path))]
        except UnreadableFile as exc:
            into.warnings.append(f"ignored {path}: {exc}")
            continue
        except UnicodeDecodeError:
            into.warnings.append(f"ignored {path}: not UTF-8 text")
            continue
        into.found = into.found or bool(rules)
        into.rules.extend(rules)


def _prefix_rules(call: tuple[str, dict[str, Any]], source: str) -> list[ForeignRule]:
    name, kwargs = call
    if name != "prefix_rule":
        return []  # host_executable(), network_rule(): not rules Cody applies
    pattern = kwargs.get("pattern")
    decision = _CODEX_DECISIONS.get(kwargs.get("decision", "allow"))
    if not isinstance(pattern, list) or not pattern or decision is None:
        raise UnreadableFile(
            "a prefix_rule needs a non-empty pattern and decision allow|prompt|forbidden"
        )
    choices: list[list[str]] = []
    for token in pattern:
        options = token if isinstance(token, list) else [token]
        if not options or not all(isinstance(option, str) and option for option in options):
            raise UnreadableFile("a prefix_rule pattern holds strings or lists of strings only")
        choices.append(options)
    count = 1
    for options in choices:
        count *= len(options)
    if count > MAX_EXPANSIONS:
        raise UnreadableFile(f"a prefix_rule pattern has more than {MAX_EXPANSIONS} alternatives")
    return [
        ForeignRule(f"exec({shlex.join(words)}:*)", decision, source) for words in product(*choices)
    ]


def _parse_starlark_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """`name(key=value, ...)` statements; raises UnreadableFile on anything else."""
    tokens = list(_tokens(text))
    calls: list[tuple[str, dict[str, Any]]] = []
    index = 0

    def expect(kind: str) -> Any:
        nonlocal index
        if index >= len(tokens) or tokens[index][0] != kind:
            raise UnreadableFile(f"expected {kind!r} (only prefix_rule(...) calls are understood)")
        value = tokens[index][1]
        index += 1
        return value

    def peek(kind: str) -> bool:
        return index < len(tokens) and tokens[index][0] == kind

    def value(depth: int) -> Any:
        nonlocal index
        if depth > MAX_DEPTH:
            raise UnreadableFile("lists nested too deep")
        if peek("str"):
            return expect("str")
        if peek("name"):
            word = expect("name")
            constants = {"True": True, "False": False, "None": None}
            if word not in constants:
                raise UnreadableFile(f"unsupported value {word!r}")
            return constants[word]
        expect("[")
        items: list[Any] = []
        while not peek("]"):
            items.append(value(depth + 1))
            if not peek("]"):
                expect(",")
        expect("]")
        return items

    while index < len(tokens):
        name = expect("name")
        expect("(")
        kwargs: dict[str, Any] = {}
        while not peek(")"):
            key = expect("name")
            expect("=")
            kwargs[key] = value(1)
            if not peek(")"):
                expect(",")
        expect(")")
        calls.append((name, kwargs))
    return calls


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}


def _tokens(text: str) -> Iterator[tuple[str, Any]]:
    index, n = 0, len(text)
    while index < n:
        ch = text[index]
        if ch in " \t\r\n;":
            index += 1
        elif ch == "#":
            end = text.find("\n", index)
            index = n if end < 0 else end
        elif ch in "()[],=":
            yield ch, ch
            index += 1
        elif ch in "\"'":
            if text.startswith(ch * 3, index):
                raise UnreadableFile("triple-quoted strings are not supported")
            out: list[str] = []
            index += 1
            while True:
                if index >= n or text[index] == "\n":
                    raise UnreadableFile("unterminated string")
                c = text[index]
                if c == ch:
                    index += 1
                    break
                if c == "\\":
                    if index + 1 >= n or text[index + 1] not in _ESCAPES:
                        raise UnreadableFile("unsupported escape in a string")
                    out.append(_ESCAPES[text[index + 1]])
                    index += 2
                    continue
                out.append(c)
                index += 1
            yield "str", "".join(out)
        elif ch.isalpha() or ch == "_":
            start = index
            while index < n and (text[index].isalnum() or text[index] == "_"):
                index += 1
            yield "name", text[start:index]
        else:
            raise UnreadableFile(f"unexpected character {ch!r}")
