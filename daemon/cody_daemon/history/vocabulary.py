"""Tool names and inputs mapped to one vocabulary: Claude Code's (the only table; documented
in docs/history.md, which a unit test keeps in step with `TOOL_TABLE`).

`map_tool(agent, name, input)` returns the unified name and input. Inputs are converted only
where the meaning is the same (`cmd` / argv `command` -> a `command` string, `dir_path` ->
`path`, a plan's `step` -> a todo's `content`, ...); keys without an equivalent are kept as they
are. Unknown tools keep their name and input. Claude Code's own names are the vocabulary.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TOOL_TABLE", "ToolMapping", "command_string", "map_tool"]

Converter = Callable[[dict[str, Any]], dict[str, Any]]

_SHELLS = {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/bin/zsh", "/usr/bin/zsh"}


def command_string(command: Any) -> str:
    """An argv (or a string) as one shell command: `["bash", "-lc", "ls"]` -> `ls`."""
    if isinstance(command, str):
        return command
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        if len(command) == 3 and command[0] in _SHELLS and command[1] in ("-lc", "-c"):
            script: str = command[2]
            return script
        return shlex.join(command)
    return str(command)


def _renamed(
    mapping: dict[str, str], values: dict[str, Callable[[Any], Any]] | None = None
) -> Converter:
    """Keys renamed per `mapping` (the first of two keys landing on one name wins); the
    values of the (new) keys in `values` converted."""

    def convert(data: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in data.items():
            new_key = mapping.get(key, key)
            convert_value = values.get(new_key) if values is not None else None
            out.setdefault(new_key, value if convert_value is None else convert_value(value))
        return out

    return convert


def _shell(keys: dict[str, str]) -> Converter:
    return _renamed(keys, {"command": command_string})


def _plan(data: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in data.items() if key not in ("plan", "explanation")}
    steps = data.get("plan")
    todos = []
    if isinstance(steps, list):
        for step in steps:
            if isinstance(step, dict):
                todos.append(
                    {
                        "content": str(step.get("step", "")),
                        "status": str(step.get("status", "pending")),
                        "activeForm": str(step.get("step", "")),
                    }
                )
    out["todos"] = todos
    if data.get("explanation"):
        out["explanation"] = data["explanation"]
    return out


def _patch(data: dict[str, Any]) -> dict[str, Any]:
    if "input" in data and "patch" not in data:
        rest = {key: value for key, value in data.items() if key != "input"}
        return {"patch": data["input"], **rest}
    return dict(data)


@dataclass(frozen=True, slots=True)
class ToolMapping:
    agent: str
    name: str
    unified: str
    convert: Converter | None
    inputs: str
    """How the input changes, in words (the documentation table)."""


TOOL_TABLE: tuple[ToolMapping, ...] = (
    ToolMapping("codex", "shell", "Bash", _shell({"workdir": "cwd", "timeout_ms": "timeout"}),
                "argv `command` -> `command` string; `workdir` -> `cwd`; `timeout_ms` -> `timeout`"),
    ToolMapping("codex", "container.exec", "Bash", _shell({"workdir": "cwd", "timeout_ms": "timeout"}),
                "as `shell`"),
    ToolMapping("codex", "local_shell", "Bash", _shell({"working_directory": "cwd", "timeout_ms": "timeout"}),
                "argv `command` -> `command` string; `working_directory` -> `cwd`"),
    ToolMapping("codex", "shell_command", "Bash", _shell({"workdir": "cwd", "timeout_ms": "timeout"}),
                "`command` string kept; `workdir` -> `cwd`"),
    ToolMapping("codex", "exec_command", "Bash", _shell({"cmd": "command", "workdir": "cwd"}),
                "`cmd` -> `command`; `workdir` -> `cwd`"),
    ToolMapping("codex", "apply_patch", "Edit", _patch, "the patch text -> `patch`"),
    ToolMapping("codex", "update_plan", "TodoWrite", _plan,
                "`plan[{step, status}]` -> `todos[{content, status, activeForm}]`"),
    ToolMapping("codex", "view_image", "Read", _renamed({"path": "file_path"}), "`path` -> `file_path`"),
    ToolMapping("codex", "read_file", "Read", None, "unchanged (`file_path`, `offset`, `limit`)"),
    ToolMapping("codex", "list_dir", "LS", _renamed({"dir_path": "path"}), "`dir_path` -> `path`"),
    ToolMapping("codex", "grep_files", "Grep", _renamed({"include": "glob"}), "`include` -> `glob`"),
    ToolMapping("codex", "web_search", "WebSearch", None, "unchanged (`query`)"),
    ToolMapping("cody", "exec", "Bash", _shell({"timeout_ms": "timeout"}),
                "argv `command` -> `command` string; `timeout_ms` -> `timeout`"),
    ToolMapping("cody", "readFile", "Read", None, "unchanged (`file_path`, `offset`, `limit`)"),
    ToolMapping("cody", "writeFile", "Write", None, "unchanged (`file_path`, `content`)"),
    ToolMapping("cody", "applyPatch", "Edit", None, "unchanged (`patch`)"),
    ToolMapping("cody", "updatePlan", "TodoWrite", _plan,
                "`plan[{step, status}]` -> `todos[{content, status, activeForm}]`"),
    ToolMapping("cody", "listDir", "LS", _renamed({"dir_path": "path"}), "`dir_path` -> `path`"),
    ToolMapping("cody", "fileSearch", "Glob", _renamed({"query": "pattern"}), "`query` -> `pattern`"),
    ToolMapping("cody", "grepFiles", "Grep", _renamed({"include": "glob"}), "`include` -> `glob`"),
    ToolMapping("cody", "webSearch", "WebSearch", None, "unchanged (`query`)"),
    ToolMapping("cody", "fetchUrl", "WebFetch", None, "unchanged (`url`)"),
)  # fmt: skip
"""Every mapping. Claude Code's tools (`Bash`, `Read`, `Write`, `Edit`, `Glob`, `Grep`, `LS`,
`TodoWrite`, `WebSearch`, `WebFetch`, ...) are the vocabulary itself and pass unchanged."""

_BY_AGENT: dict[tuple[str, str], ToolMapping] = {(m.agent, m.name): m for m in TOOL_TABLE}


def map_tool(agent: str, name: str, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The unified name and input of `agent`'s tool call `name(tool_input)`."""
    mapping = _BY_AGENT.get((agent, name))
    if mapping is None:
        return name, tool_input
    if mapping.convert is None:
        return mapping.unified, tool_input
    return mapping.unified, mapping.convert(tool_input)
