"""Agent profile files in the peers' formats, read as data: Markdown with front matter (Cody's
and Claude Code's `agents/*.md`) and Codex's `agents/*.toml`.

Only fields are read, never evaluated: the front matter's small YAML subset (`key: value`,
`[a, b]` and `- a` lists, quoted strings) and TOML through `tomllib`. A value is a `str` or
a `list[str]`; anything else is dropped. The peers' tool names map to Cody's
(`PEER_TOOLS`); a tool with an argument pattern (`Bash(git diff:*)`) is left out, since
Cody cannot hold a call to that pattern (the profile then simply lacks the tool).

Invariants: pure functions of the text; at most `MAX_FRONT_MATTER_LINES` lines of front
matter are looked at.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection
from typing import Final

__all__ = [
    "MAX_FRONT_MATTER_LINES",
    "PEER_TOOLS",
    "Fields",
    "cody_tool_names",
    "markdown_profile",
    "toml_profile",
]

MAX_FRONT_MATTER_LINES: Final = 200

Fields = dict[str, str | list[str]]

PEER_TOOLS: Final[dict[str, tuple[str, ...]]] = {
    "bash": ("exec",),
    "read": ("readFile",),
    "edit": ("applyPatch",),
    "multiedit": ("applyPatch",),
    "write": ("writeFile",),
    "grep": ("grepFiles",),
    "glob": ("fileSearch",),
    "ls": ("listDir",),
    "webfetch": ("fetchUrl",),
    "websearch": ("webSearch",),
    "todowrite": ("updatePlan",),
    "task": ("task", "taskResult"),
    "agent": ("task", "taskResult"),
}
"""Claude Code's (and OpenCode's) tool names, lower-cased, -> Cody's."""

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*)|\s*)$")
_ITEM = re.compile(r"^\s*-\s+(.*)$")


def markdown_profile(text: str) -> tuple[Fields, str]:
    """The front matter's fields and the body of a Markdown profile (`({}, text)` without
    front matter)."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    for end in range(1, min(len(lines), MAX_FRONT_MATTER_LINES + 1)):
        if lines[end].rstrip() in ("---", "..."):
            return _fields(lines[1:end]), "\n".join(lines[end + 1 :])
    return {}, text


def toml_profile(text: str) -> tuple[Fields, str]:
    """A Codex custom agent file: its fields, and `developer_instructions` as the body.
    Raises ValueError when it is not TOML."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc})") from None
    fields: Fields = {}
    for key, value in data.items():
        if isinstance(value, str):
            fields[key] = value
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            fields[key] = list(value)
    body = fields.pop("developer_instructions", "")
    return fields, body if isinstance(body, str) else ""


def cody_tool_names(
    value: str | list[str], known: Collection[str]
) -> tuple[frozenset[str], list[str]]:
    """The Cody tools a profile's `tools` names (a list, or a comma-separated string), and
    the names that were left out (unknown, or with an argument pattern)."""
    names = value if isinstance(value, list) else value.split(",")
    tools: set[str] = set()
    left_out: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if "(" in name:
            left_out.append(name)
            continue
        if name in known or name.startswith("mcp__"):
            tools.add(name)
            continue
        mapped = PEER_TOOLS.get(name.lower())
        if mapped is None:
            left_out.append(name)
        else:
            tools.update(tool for tool in mapped if tool in known)
    return frozenset(tools), left_out


def _fields(lines: list[str]) -> Fields:
    fields: Fields = {}
    index = 0
    while index < len(lines):
        match = _KEY.match(lines[index].rstrip())
        index += 1
        if match is None:
            continue
        key, raw = match.group(1), (match.group(2) or "").strip()
        if raw and not raw.startswith("#"):
            fields[key] = _flow_list(raw) if raw.startswith("[") else _scalar(raw)
            continue
        items: list[str] = []
        while index < len(lines) and (item := _ITEM.match(lines[index])) is not None:
            items.append(_scalar(item.group(1)))
            index += 1
        if items:
            fields[key] = items
    return fields


def _flow_list(raw: str) -> list[str]:
    inner = raw[1 : raw.rindex("]")] if "]" in raw else raw[1:]
    return [_scalar(part) for part in inner.split(",") if part.strip()]


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    comment = raw.find(" #")
    return raw[:comment].rstrip() if comment >= 0 else raw
