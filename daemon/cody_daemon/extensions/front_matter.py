"""Front matter: the `---` block at the top of a command file or a `SKILL.md`.

The peers write it in YAML (`description: ...`, `argument-hint: [name]`, `allowed-tools:`
with a list). Only the small part of YAML they use is read here, by hand: top-level keys with
a plain, quoted, flow-list (`[a, b]`), block-list (`- a`) or block (`|`, `>`) value. Nested
tables (`metadata:` with indented keys) are skipped; nothing is ever evaluated (no tags, no
anchors or aliases), so a hostile file can only give odd strings.

Invariants: a pure function of the text; at most `MAX_LINES` lines of front matter are
looked at (a file whose block does not close by then has no front matter, and its whole
text is the body); a value is a `str` or a `list[str]`, never anything else.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_LINES", "FlowList", "FrontMatter", "flag", "split_front_matter", "text_field"]

MAX_LINES: Final = 400
"""How many lines a front-matter block may have (real ones have a handful)."""

FrontMatter = dict[str, str | list[str]]


class FlowList(list[str]):
    """A `[a, b]` value; `source` is the text as written (`argument-hint: [name]` is meant to
    be shown as `[name]`)."""

    source: str = ""


_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*)|\s*)$")
_ITEM = re.compile(r"^\s+-\s?(.*)$|^-\s(.*)$")
_BLOCK = re.compile(r"^[|>][+-]?\d*$")


def split_front_matter(text: str) -> tuple[FrontMatter, str]:
    """The fields of `text`'s front matter and the body after it (`({}, text)` when the text
    has none). Only the block's own lines are split: a long body costs nothing here."""
    text = text.removeprefix("\ufeff")
    end = text.find("\n")
    if end < 0 or text[:end].rstrip() != "---":
        return {}, text
    lines: list[str] = []
    start = end + 1
    while len(lines) < MAX_LINES:
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if line.rstrip() in ("---", "..."):
            return _parse(lines), "" if end < 0 else text[end + 1 :]
        if end < 0:
            break
        lines.append(line)
        start = end + 1
    return {}, text


def text_field(fields: FrontMatter, *names: str, as_written: bool = False) -> str | None:
    """The first of `names` that is set, as one line of text (a list is joined with ", ";
    `as_written`: a `[a, b]` value as it was written)."""
    for name in names:
        value = fields.get(name)
        if as_written and isinstance(value, FlowList):
            value = value.source
        if isinstance(value, list):
            value = ", ".join(value)
        if value is not None and value.strip():
            return " ".join(value.split())
    return None


def flag(fields: FrontMatter, name: str, default: bool) -> bool:
    """A yes/no field (`true`, `false`, YAML's other spellings); anything else: `default`."""
    value = fields.get(name)
    if not isinstance(value, str):
        return default
    word = value.strip().lower()
    if word in ("true", "yes", "on"):
        return True
    if word in ("false", "no", "off"):
        return False
    return default


def _parse(lines: list[str]) -> FrontMatter:
    fields: FrontMatter = {}
    index = 0
    while index < len(lines):
        line = lines[index].rstrip()
        index += 1
        match = _KEY.match(line)
        if match is None:
            continue  # a comment, a blank line, or what we do not read
        key, raw = match.group(1), (match.group(2) or "").strip()
        block, index = _indented(lines, index)
        if _BLOCK.match(raw):
            fields[key] = _block_scalar(raw, block)
        elif raw == "" or raw.startswith("#"):
            items = [_ITEM.match(entry) for entry in block if entry.strip()]
            if items and all(items):
                fields[key] = [_scalar(m.group(1) or m.group(2) or "") for m in items if m]
            # else: a nested table, or nothing: skipped
        elif raw.startswith("["):
            fields[key] = _flow_list(raw)
        else:
            continuation = " ".join(entry.strip() for entry in block if entry.strip())
            fields[key] = _scalar(f"{raw} {continuation}" if continuation else raw)
    return fields


def _indented(lines: list[str], index: int) -> tuple[list[str], int]:
    """The lines after a key that belong to its value (indented, blank, or a top-level `- `
    list item), and the index after them."""
    block: list[str] = []
    while index < len(lines):
        line = lines[index]
        if line.strip() and not line[0].isspace() and not line.startswith("- "):
            break
        block.append(line)
        index += 1
    while block and not block[-1].strip():
        block.pop()
    return block, index


def _block_scalar(indicator: str, block: list[str]) -> str:
    indent = min((len(line) - len(line.lstrip()) for line in block if line.strip()), default=0)
    rows = [line[indent:] for line in block]
    if indicator.startswith(">"):
        return " ".join(" ".join(row.split()) for row in rows if row.strip())
    return "\n".join(rows)


def _flow_list(raw: str) -> FlowList:
    inner = raw[1 : raw.rindex("]")] if "]" in raw else raw[1:]
    items: list[str] = []
    current: list[str] = []
    quote = ""
    for char in inner:
        if quote:
            if char == quote:
                quote = ""
            current.append(char)
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    found = FlowList(_scalar(item) for item in items if item.strip())
    found.source = raw[: raw.rindex("]") + 1] if "]" in raw else raw
    return found


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        inner = raw[1:-1]
        return (
            inner.replace("\\\\", "\0")
            .replace('\\"', '"')
            .replace("\\n", "\n")
            .replace("\\t", "\t")
            .replace("\0", "\\")
        )
    comment = raw.find(" #")
    return raw[:comment].rstrip() if comment >= 0 else raw
