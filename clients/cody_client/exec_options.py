"""What `cody-client exec`'s options for CI mean: `-c key=value`, `--max-turns`,
`-o/--output-last-message` and the turn's final text.

- `-c key=value` (repeatable) sets a config key for the new session, as a line of
  `config.toml` would: the value is read as TOML (`-c max_tool_iterations=5`, `-c
  'tools.exec.timeout_s=60'`, `-c 'model="gpt-5.5"'`), and a value that is not TOML is a
  string (`-c model=gpt-5.5`). Dotted keys name tables. The daemon validates the result as it
  validates a config file (`_meta.cody.config`).
- `--max-turns N` is `-c max_tool_iterations=N`: at most N model calls, then the turn stops
  with `max_turn_requests` (exit code 6).
- The final text is the turn's last agent message: the text the model wrote after its last
  tool call (or thought). `-o FILE` writes it when the turn completed (an empty file when there
  is none); nothing is written when the run fails before. With `--output-schema` it is the
  validated answer, as one line of JSON.
- `--output-schema FILE`: a JSON Schema (a JSON object); a file that cannot be read or is not
  a JSON object is a usage error (exit code 2). The daemon checks that it is a schema.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cody_protocol.content import TextContent
from cody_protocol.updates import AgentMessageChunk, SessionUpdate

__all__ = [
    "ConfigOverrideError",
    "FinalText",
    "config_overrides",
    "read_output_schema",
    "write_last_message",
]


class ConfigOverrideError(ValueError):
    """A `-c` argument that is not `key=value` (a usage error: exit code 2)."""


def config_overrides(pairs: Sequence[str], max_turns: int | None = None) -> dict[str, Any]:
    """The `config.toml`-shaped table for `-c` pairs and `--max-turns` (module docstring)."""
    table: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        names = [name.strip() for name in key.split(".")]
        if not sep or not all(names):
            raise ConfigOverrideError(
                f"-c {pair!r}: expected key=value, e.g. -c max_tool_iterations=5 or "
                "-c tools.exec.timeout_s=60"
            )
        node = table
        for name in names[:-1]:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                raise ConfigOverrideError(f"-c {pair!r}: {name} is already set to a value")
            node = child
        node[names[-1]] = _value(raw.strip())
    if max_turns is not None:
        if max_turns < 1:
            raise ConfigOverrideError(f"--max-turns {max_turns}: must be at least 1")
        table["max_tool_iterations"] = max_turns
    return table


def read_output_schema(path: str) -> dict[str, Any]:
    """The JSON Schema in `path` (raises ConfigOverrideError, a usage error, when it is not
    a readable JSON object)."""
    import json

    try:
        schema = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigOverrideError(f"--output-schema {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigOverrideError(f"--output-schema {path}: not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise ConfigOverrideError(f"--output-schema {path}: a JSON Schema is a JSON object")
    return schema


def _value(raw: str) -> Any:
    import tomllib  # only when -c is given: exec imports this module on every run

    try:
        return tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw


class FinalText:
    """Follows a turn's updates; `text` is its last agent message so far (None once a tool
    call or a thought follows it, until the model writes again)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._message_id: str | None = None

    def add(self, update: SessionUpdate) -> None:
        if isinstance(update, AgentMessageChunk):
            if update.message_id != self._message_id:
                self._parts = []
                self._message_id = update.message_id
            if isinstance(update.content, TextContent):
                self._parts.append(update.content.text)
        elif update.session_update in ("tool_call", "agent_thought_chunk"):
            self._parts = []
            self._message_id = None

    @property
    def text(self) -> str | None:
        return "".join(self._parts) if self._parts else None


def write_last_message(path: str, text: str | None) -> None:
    """Write `text` (or nothing: an empty file) to `path`, created or replaced as a whole."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_text(text or "", encoding="utf-8")
    os.replace(temporary, target)
