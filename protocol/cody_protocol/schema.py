"""Generate the checked-in JSON Schemas: the wire models, and `cody-client exec --json` events.

Run `python -m cody_protocol.schema --write` after changing a model or a method; a test fails
when a checked-in file (`protocol/schema/*.schema.json`, the VS Code extension's
`src/protocol/generated.ts`) differs from what this produces. The top-level models are the
method table's (cody_protocol.methods) plus `EXTRA_MODELS`; the schema also carries the table
itself (`x-methods`) and the error codes (`x-error-codes`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from . import commands, errors, exec_events, history, terminal, updates
from .codes import ErrorCode
from .methods import METHODS, Method, resolve_model
from .typescript import render_typescript

__all__ = [
    "EXEC_EVENTS_SCHEMA_PATH",
    "EXTRA_MODELS",
    "HISTORY_MODELS",
    "HISTORY_SCHEMA_PATH",
    "SCHEMA_PATH",
    "TOP_LEVEL_MODELS",
    "VSCODE_TYPES_PATH",
    "generate",
    "generate_exec_events",
    "main",
]

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "cody-protocol.schema.json"
EXEC_EVENTS_SCHEMA_PATH = SCHEMA_PATH.parent / "cody-exec-events.schema.json"
HISTORY_SCHEMA_PATH = SCHEMA_PATH.parent / "cody-history.schema.json"
VSCODE_TYPES_PATH = (
    SCHEMA_PATH.parents[2] / "editor-plugins" / "vscode" / "src" / "protocol" / "generated.ts"
)
"""The VS Code extension's wire types, generated from the protocol schema (typescript.py)."""

EXTRA_MODELS: tuple[type[BaseModel], ...] = (
    commands.AvailableCommandsUpdate,
    terminal.TerminalInfoMeta,
    terminal.TerminalOutputMeta,
    terminal.TerminalExitMeta,
    updates.ToolCallDecision,
    errors.RpcError,
    errors.InvalidParamsData,
    errors.ProviderErrorData,
    errors.AuthRequiredData,
)
"""Top-level models that are no method's params or result (update kinds, `_meta` shapes,
error data)."""


def _method_models(*, history_module: bool) -> tuple[type[BaseModel], ...]:
    """The params and result models of `METHODS`, in table order, each once: those of the
    `history` module (their own schema file) or all the others."""
    refs = dict.fromkeys(ref for method in METHODS.values() for ref in method.models())
    return tuple(resolve_model(ref) for ref in refs if ref.startswith("history:") == history_module)


TOP_LEVEL_MODELS: tuple[type[BaseModel], ...] = (
    *_method_models(history_module=False),
    *EXTRA_MODELS,
)
"""Derived from the method table (cody_protocol.methods), plus `EXTRA_MODELS`."""


def generate() -> dict[str, Any]:
    """Return the schema: one `$defs` entry per model, plus the top-level model names."""
    _, schema = models_json_schema(
        [(model, "validation") for model in TOP_LEVEL_MODELS],
        title="Cody protocol",
        ref_template="#/$defs/{model}",
    )
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["x-top-level"] = [model.__name__ for model in TOP_LEVEL_MODELS]
    schema["x-methods"] = {name: _method_facts(method) for name, method in METHODS.items()}
    schema["x-error-codes"] = {code.name: int(code) for code in ErrorCode}
    return schema


def _method_facts(method: Method) -> dict[str, Any]:
    """One `x-methods` entry: the table's facts, models by their `$defs` name."""
    facts: dict[str, Any] = {
        "sender": method.sender,
        "kind": method.kind,
        "spec": method.spec,
        "stability": method.stability,
    }
    for key in ("params", "result"):
        ref = getattr(method, key)
        if ref is not None:
            facts[key] = ref.partition(":")[2]
    if method.session is not None:
        facts["session"] = method.session
    if method.alias_of is not None:
        facts["aliasOf"] = method.alias_of
    return facts


def generate_exec_events() -> dict[str, Any]:
    """The schema of one `cody-client exec --json` line (a union discriminated by `type`)."""
    schema = exec_events.EXEC_EVENT.json_schema(ref_template="#/$defs/{model}")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"cody-client exec --json event (version {exec_events.EXEC_EVENTS_VERSION})"
    return schema


HISTORY_MODELS: tuple[type[BaseModel], ...] = (
    history.UnifiedMessage,
    *_method_models(history_module=True),
)
"""Unified history (`_cody/history/*`, `_cody/session/history`): its own schema file."""


def generate_history() -> dict[str, Any]:
    _, schema = models_json_schema(
        [(model, "validation") for model in HISTORY_MODELS],
        title="Cody unified history",
        ref_template="#/$defs/{model}",
    )
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["x-top-level"] = [model.__name__ for model in HISTORY_MODELS]
    return schema


def render_history() -> str:
    return json.dumps(generate_history(), indent=2, sort_keys=True) + "\n"


def render() -> str:
    return json.dumps(generate(), indent=2, sort_keys=True) + "\n"


def render_vscode_types() -> str:
    """From the schema file's text (not the dict): the types follow exactly what is published."""
    return render_typescript(json.loads(render()))


def render_exec_events() -> str:
    return json.dumps(generate_exec_events(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"write {SCHEMA_PATH.name}, {EXEC_EVENTS_SCHEMA_PATH.name}, "
        f"{HISTORY_SCHEMA_PATH.name} and the VS Code extension's {VSCODE_TYPES_PATH.name}",
    )
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        EXEC_EVENTS_SCHEMA_PATH.write_text(render_exec_events(), encoding="utf-8")
        HISTORY_SCHEMA_PATH.write_text(render_history(), encoding="utf-8")
        if VSCODE_TYPES_PATH.parent.is_dir():  # a checkout (not an installed package)
            VSCODE_TYPES_PATH.write_text(render_vscode_types(), encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
