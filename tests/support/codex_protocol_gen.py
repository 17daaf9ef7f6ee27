"""Generates daemon/cody_daemon/backends/codex_protocol.py from the pinned Codex CLI.

`codex app-server generate-json-schema --experimental` prints the JSON Schema of every
app-server message. Cody reads and sends a few of them, and of those only some fields: `SPEC`
names them (a type, where it is in the schema, and the fields Cody uses). The generated module
holds one `TypedDict` per entry (a field the schema does not require is `NotRequired`), the
enums and tagged unions among them as `Literal`s and unions of the variants Cody reads, and the
method names Cody uses as `Literal`s checked against the schema's request and notification
lists. No pydantic, nothing checked at run time: the backend reads the CLI's JSON through
these types (`cast`), mypy checks every access, and tests/unit/test_codex_protocol.py
regenerates the file from the pinned CLI and fails when it differs.

A field, type or method in `SPEC` that the schema does not have is an error, so a Codex
release that renames what Cody reads fails here, loudly, before any turn does.

    uv run python -m tests.support.codex_protocol_gen --write   # after changing SPEC or the pin
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["OUTPUT", "SPEC", "SchemaDrift", "generate_schema", "render"]

OUTPUT = (
    Path(__file__).resolve().parents[2]
    / "daemon"
    / "cody_daemon"
    / "backends"
    / "codex_protocol.py"
)
BUNDLE = "codex_app_server_protocol.schemas.json"


class SchemaDrift(Exception):
    """The schema lacks something Cody reads or sends (renamed or removed by Codex)."""


@dataclass(frozen=True)
class Entry:
    name: str
    """The Python name."""
    where: str
    """A definition (`v2/Turn`), or a tagged variant of one by its title (`v2/ThreadItem#X`)."""
    fields: tuple[str, ...] = ()
    """The fields Cody uses (empty for an enum or a union)."""
    variants: tuple[str, ...] = ()
    """For a union: the entries (Python names) of the variants Cody reads."""


def _e(name: str, where: str, *fields: str) -> Entry:
    return Entry(name, where, fields)


SPEC: tuple[Entry, ...] = (
    # -- what Cody sends ----------------------------------------------------------------
    _e("InitializeParams", "InitializeParams", "clientInfo", "capabilities"),
    _e("ClientInfo", "ClientInfo", "name", "title", "version"),
    _e("InitializeCapabilities", "InitializeCapabilities", "experimentalApi"),
    _e("AskForApproval", "v2/AskForApproval"),
    _e("ReasoningEffort", "v2/ReasoningEffort"),
    _e("LegacyAppPathString", "v2/LegacyAppPathString"),
    _e(
        "ThreadStartParams", "v2/ThreadStartParams", "cwd", "approvalPolicy", "model", "permissions"
    ),
    _e(
        "ThreadResumeParams",
        "v2/ThreadResumeParams",
        "threadId",
        "cwd",
        "approvalPolicy",
        "model",
        "permissions",
    ),
    _e("TextUserInput", "v2/UserInput#TextUserInput", "type", "text"),
    Entry("UserInput", "v2/UserInput", variants=("TextUserInput",)),
    _e(
        "TurnStartParams",
        "v2/TurnStartParams",
        "threadId",
        "input",
        "approvalPolicy",
        "permissions",
        "model",
        "effort",
    ),
    _e("TurnInterruptParams", "v2/TurnInterruptParams", "threadId", "turnId"),
    _e("CommandExecutionApprovalDecision", "CommandExecutionApprovalDecision"),
    _e(
        "CommandExecutionRequestApprovalResponse",
        "CommandExecutionRequestApprovalResponse",
        "decision",
    ),
    _e("FileChangeApprovalDecision", "FileChangeApprovalDecision"),
    _e("FileChangeRequestApprovalResponse", "FileChangeRequestApprovalResponse", "decision"),
    # -- answers Cody reads -------------------------------------------------------------
    _e("Thread", "v2/Thread", "id", "model", "modelProvider"),
    _e("ActivePermissionProfile", "v2/ActivePermissionProfile", "id"),
    _e("ThreadStartResponse", "v2/ThreadStartResponse", "thread", "activePermissionProfile"),
    _e("ThreadResumeResponse", "v2/ThreadResumeResponse", "thread", "activePermissionProfile"),
    _e("TurnStatus", "v2/TurnStatus"),
    _e("TurnError", "v2/TurnError", "message", "codexErrorInfo", "additionalDetails"),
    _e("Turn", "v2/Turn", "id", "status", "error"),
    _e("TurnStartResponse", "v2/TurnStartResponse", "turn"),
    # -- notifications ------------------------------------------------------------------
    _e("ErrorNotification", "v2/ErrorNotification", "error", "willRetry", "turnId"),
    _e(
        "AgentMessageDeltaNotification",
        "v2/AgentMessageDeltaNotification",
        "itemId",
        "delta",
        "turnId",
    ),
    _e(
        "ReasoningSummaryTextDeltaNotification",
        "v2/ReasoningSummaryTextDeltaNotification",
        "itemId",
        "delta",
        "turnId",
    ),
    _e(
        "ReasoningTextDeltaNotification",
        "v2/ReasoningTextDeltaNotification",
        "itemId",
        "delta",
        "turnId",
    ),
    _e(
        "ReasoningSummaryPartAddedNotification",
        "v2/ReasoningSummaryPartAddedNotification",
        "summaryIndex",
        "turnId",
    ),
    _e(
        "CommandExecutionOutputDeltaNotification",
        "v2/CommandExecutionOutputDeltaNotification",
        "itemId",
        "delta",
        "turnId",
    ),
    _e("TurnPlanStepStatus", "v2/TurnPlanStepStatus"),
    _e("TurnPlanStep", "v2/TurnPlanStep", "step", "status"),
    _e("TurnPlanUpdatedNotification", "v2/TurnPlanUpdatedNotification", "plan", "turnId"),
    _e(
        "TokenUsageBreakdown",
        "v2/TokenUsageBreakdown",
        "inputTokens",
        "outputTokens",
        "cachedInputTokens",
        "cacheWriteInputTokens",
        "reasoningOutputTokens",
    ),
    _e("ThreadTokenUsage", "v2/ThreadTokenUsage", "last", "modelContextWindow"),
    _e(
        "ThreadTokenUsageUpdatedNotification",
        "v2/ThreadTokenUsageUpdatedNotification",
        "tokenUsage",
        "turnId",
    ),
    _e("TurnCompletedNotification", "v2/TurnCompletedNotification", "turn"),
    # -- the items of a turn ------------------------------------------------------------
    _e("AgentMessageThreadItem", "v2/ThreadItem#AgentMessageThreadItem", "type", "id", "text"),
    _e("ReasoningThreadItem", "v2/ThreadItem#ReasoningThreadItem", "type", "id", "summary"),
    _e("CommandExecutionStatus", "v2/CommandExecutionStatus"),
    _e("AbsolutePathBuf", "v2/AbsolutePathBuf"),
    _e(
        "CommandExecutionThreadItem",
        "v2/ThreadItem#CommandExecutionThreadItem",
        "type",
        "id",
        "command",
        "cwd",
        "status",
        "exitCode",
        "aggregatedOutput",
        "durationMs",
    ),
    _e("AddPatchChangeKind", "v2/PatchChangeKind#AddPatchChangeKind", "type"),
    _e("DeletePatchChangeKind", "v2/PatchChangeKind#DeletePatchChangeKind", "type"),
    _e("UpdatePatchChangeKind", "v2/PatchChangeKind#UpdatePatchChangeKind", "type"),
    Entry(
        "PatchChangeKind",
        "v2/PatchChangeKind",
        variants=("AddPatchChangeKind", "DeletePatchChangeKind", "UpdatePatchChangeKind"),
    ),
    _e("FileUpdateChange", "v2/FileUpdateChange", "path", "kind", "diff"),
    _e("PatchApplyStatus", "v2/PatchApplyStatus"),
    _e(
        "FileChangeThreadItem",
        "v2/ThreadItem#FileChangeThreadItem",
        "type",
        "id",
        "changes",
        "status",
    ),
    _e("McpToolCallStatus", "v2/McpToolCallStatus"),
    _e(
        "McpToolCallThreadItem",
        "v2/ThreadItem#McpToolCallThreadItem",
        "type",
        "id",
        "server",
        "tool",
        "arguments",
        "status",
        "result",
        "error",
    ),
    _e("WebSearchThreadItem", "v2/ThreadItem#WebSearchThreadItem", "type", "id", "query"),
    Entry(
        "ThreadItem",
        "v2/ThreadItem",
        variants=(
            "AgentMessageThreadItem",
            "ReasoningThreadItem",
            "CommandExecutionThreadItem",
            "FileChangeThreadItem",
            "McpToolCallThreadItem",
            "WebSearchThreadItem",
        ),
    ),
    _e("ItemStartedNotification", "v2/ItemStartedNotification", "item", "turnId"),
    _e("ItemCompletedNotification", "v2/ItemCompletedNotification", "item", "turnId"),
    # -- what the CLI asks --------------------------------------------------------------
    _e(
        "CommandExecutionRequestApprovalParams",
        "CommandExecutionRequestApprovalParams",
        "itemId",
        "turnId",
        "command",
        "cwd",
        "reason",
        "additionalPermissions",
        "networkApprovalContext",
    ),
    _e(
        "FileChangeRequestApprovalParams",
        "FileChangeRequestApprovalParams",
        "itemId",
        "turnId",
        "reason",
        "grantRoot",
    ),
)

METHODS: dict[str, dict[str, str]] = {
    # the schema's list -> method -> the params type Cody gives or reads for it
    "ClientRequest": {
        "initialize": "InitializeParams",
        "thread/start": "v2/ThreadStartParams",
        "thread/resume": "v2/ThreadResumeParams",
        "turn/start": "v2/TurnStartParams",
        "turn/interrupt": "v2/TurnInterruptParams",
    },
    "ClientNotification": {"initialized": ""},
    "ServerNotification": {
        "error": "v2/ErrorNotification",
        "item/started": "v2/ItemStartedNotification",
        "item/completed": "v2/ItemCompletedNotification",
        "item/agentMessage/delta": "v2/AgentMessageDeltaNotification",
        "item/reasoning/summaryTextDelta": "v2/ReasoningSummaryTextDeltaNotification",
        "item/reasoning/textDelta": "v2/ReasoningTextDeltaNotification",
        "item/reasoning/summaryPartAdded": "v2/ReasoningSummaryPartAddedNotification",
        "item/commandExecution/outputDelta": "v2/CommandExecutionOutputDeltaNotification",
        "turn/plan/updated": "v2/TurnPlanUpdatedNotification",
        "thread/tokenUsage/updated": "v2/ThreadTokenUsageUpdatedNotification",
        "turn/completed": "v2/TurnCompletedNotification",
    },
    "ServerRequest": {
        "item/commandExecution/requestApproval": "CommandExecutionRequestApprovalParams",
        "item/fileChange/requestApproval": "FileChangeRequestApprovalParams",
    },
}
_METHOD_TYPES = {
    "ClientRequest": "ClientMethod",
    "ClientNotification": "ClientNotificationMethod",
    "ServerNotification": "NotificationMethod",
    "ServerRequest": "ServerRequestMethod",
}

HEADER = '''"""The Codex app-server messages Cody reads and sends, typed (pinned Codex CLI {version}).

Generated by `uv run python -m tests.support.codex_protocol_gen --write` from `codex
app-server generate-json-schema --experimental` of the CLI pinned in tests/agents; do not
edit: tests/unit/test_codex_protocol.py regenerates it and fails when it differs. Only the
fields Cody uses are here (tests/support/codex_protocol_gen.py `SPEC`); unions hold only the
variants Cody reads. These are views for mypy, nothing is checked at run time: values from
the CLI are still read defensively (`.get`, `str(...)`).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
{names}
]
'''


# -- reading the schema -------------------------------------------------------------------


class _Schema:
    def __init__(self, bundle: dict[str, Any], spec: tuple[Entry, ...]) -> None:
        self.defs: dict[str, Any] = bundle["definitions"]
        self.spec = spec
        self.by_where = {entry.where: entry.name for entry in spec}

    def find(self, where: str) -> dict[str, Any]:
        path, _, title = where.partition("#")
        node: Any = self.defs
        for part in path.split("/"):
            if not isinstance(node, dict) or part not in node:
                raise SchemaDrift(f"no definition {path!r} in the schema")
            node = node[part]
        if not title:
            return dict(node)
        for variant in node.get("oneOf") or node.get("anyOf") or []:
            if variant.get("title") == title:
                return dict(variant)
        raise SchemaDrift(f"{path!r} has no variant titled {title!r}")

    def ref_name(self, ref: str) -> str | None:
        where = ref.removeprefix("#/definitions/")
        return self.by_where.get(where)

    def python_type(self, node: Any) -> str:
        if not isinstance(node, dict) or not node:
            return "Any"
        if "$ref" in node:
            name = self.ref_name(node["$ref"])
            return name if name is not None else "Any"
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.python_type(node["allOf"][0])
        for key in ("anyOf", "oneOf"):
            if key in node:
                return _union([self.python_type(option) for option in node[key]])
        if "enum" in node:
            return _literal(node["enum"])
        kinds = node.get("type")
        if isinstance(kinds, list):
            return _union([self.python_type({**node, "type": kind}) for kind in kinds])
        if kinds == "array":
            return f"list[{self.python_type(node.get('items'))}]"
        return _SCALARS.get(str(kinds), "Any")


_SCALARS = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
    "object": "dict[str, Any]",
}


def _union(parts: list[str]) -> str:
    if "Any" in parts:
        return "Any"
    unique = list(dict.fromkeys(parts))
    literals = [p for p in unique if p.startswith("Literal[")]
    if len(literals) > 1:  # Literal["a"] | Literal["b"] -> Literal["a", "b"]
        merged = ", ".join(p[len("Literal[") : -1] for p in literals)
        unique = [
            f"Literal[{merged}]" if p == literals[0] else p for p in unique if p not in literals[1:]
        ]
    if "None" in unique:  # `X | None` reads best with None last
        unique = [p for p in unique if p != "None"] + ["None"]
    return " | ".join(unique)


def _literal(values: list[Any]) -> str:
    return "Literal[" + ", ".join(json.dumps(value) for value in values) + "]"


# -- writing the module -------------------------------------------------------------------


def _definition(schema: _Schema, entry: Entry) -> str:
    node = schema.find(entry.where)
    if entry.variants:
        missing = [v for v in entry.variants if v not in {e.name for e in schema.spec}]
        if missing:
            raise SchemaDrift(f"{entry.name}: no entries for variants {missing}")
        return f"{entry.name} = {' | '.join(entry.variants)}\n"
    if not entry.fields and node.get("type") in _SCALARS and "enum" not in node:
        return f"{entry.name} = {_SCALARS[node['type']]}\n"  # a named scalar (a path, an id)
    if not entry.fields:
        values = node.get("enum")
        if values is None:  # a oneOf of string forms and object forms: the strings
            values = [v for option in node.get("oneOf") or [] for v in option.get("enum") or []]
        if not values:
            raise SchemaDrift(f"{entry.where} is not an enum any more")
        return f"{entry.name} = {_literal(values)}\n"
    properties: dict[str, Any] = node.get("properties") or {}
    required = set(node.get("required") or [])
    lines = [f"class {entry.name}(TypedDict):"]
    description = _first_sentence(str(node.get("description") or ""))
    if description:
        wrapped = textwrap.wrap(description, 88)
        lines.append(
            '    """' + "\n    ".join(wrapped) + ('"""' if len(wrapped) == 1 else '\n    """')
        )
        lines.append("")
    for field in entry.fields:
        if field not in properties:
            raise SchemaDrift(f"{entry.where} has no field {field!r}")
        if not field.isidentifier() or keyword.iskeyword(field):
            raise SchemaDrift(f"{entry.where}: {field!r} cannot be a TypedDict field")
        kind = schema.python_type(properties[field])
        lines.append(f"    {field}: {kind if field in required else f'NotRequired[{kind}]'}")
    return "\n".join(lines) + "\n"


def _first_sentence(text: str) -> str:
    flat = " ".join(text.replace('"""', "").split())
    end = re.search(r"(?<![0-9])\.\s", flat)
    return flat if end is None else flat[: end.start() + 1]


def _methods(schema: _Schema) -> list[str]:
    out = []
    for listing, wanted in METHODS.items():
        offered: dict[str, str] = {}
        for option in schema.find(listing).get("oneOf") or []:
            props = option.get("properties") or {}
            for method in (props.get("method") or {}).get("enum") or []:
                params = (props.get("params") or {}).get("$ref", "")
                offered[method] = params.removeprefix("#/definitions/")
        for method, params in wanted.items():
            if method not in offered:
                raise SchemaDrift(f"{listing} has no method {method!r}")
            if params and offered[method] != params:
                raise SchemaDrift(f"{method} takes {offered[method]!r} now, not {params!r}")
        out.append(f"{_METHOD_TYPES[listing]} = {_literal(sorted(wanted))}\n")
    return out


def render(bundle: dict[str, Any], version: str, spec: tuple[Entry, ...] = SPEC) -> str:
    """The whole generated module, formatted as ruff formats it (deterministic)."""
    schema = _Schema(bundle, spec)
    names = [entry.name for entry in spec] + sorted(_METHOD_TYPES.values())
    parts = [HEADER.format(version=version, names="\n".join(f'    "{n}",' for n in sorted(names)))]
    parts += [_definition(schema, entry) for entry in spec]
    parts += _methods(schema)
    return _ruff_format("\n\n".join(parts))


def _ruff_format(text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(OUTPUT), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def generate_schema(cli: Path) -> tuple[dict[str, Any], str]:
    """(the schema bundle, the CLI's version) from `cli`, run with a throw-away HOME."""
    with tempfile.TemporaryDirectory(prefix="cody-codex-schema-") as tmp:
        root = Path(tmp)
        env = {"HOME": str(root), "CODEX_HOME": str(root / "codex"), "PATH": "/usr/bin:/bin"}
        (root / "codex").mkdir()
        run = [str(cli), "app-server", "generate-json-schema", "--experimental"]
        subprocess.run(
            [*run, "--out", str(root / "out")], env=env, check=True, capture_output=True, timeout=60
        )
        bundle = json.loads((root / "out" / BUNDLE).read_text(encoding="utf-8"))
        version = subprocess.run(
            [str(cli), "--version"], env=env, check=True, capture_output=True, text=True, timeout=60
        ).stdout.split()[-1]
    return bundle, version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {OUTPUT.name}")
    parser.add_argument("--cli", type=Path, help="the codex executable (default: the pinned one)")
    args = parser.parse_args(argv)
    cli = args.cli
    if cli is None:
        from .agent_clis import codex

        cli = codex()
    text = render(*generate_schema(cli))
    if args.write:
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
