"""Generate the checked-in JSON Schemas: the wire models, and `cody-client exec --json` events.

Run `python -m cody_protocol.schema --write` after changing a model; a test fails when the
checked-in file (`protocol/schema/cody-protocol.schema.json`) differs from what this produces.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from . import (
    commands,
    errors,
    exec_events,
    extensions,
    files,
    history,
    initialize,
    permission,
    prompt,
    session,
    terminal,
    updates,
)

__all__ = [
    "EXEC_EVENTS_SCHEMA_PATH",
    "HISTORY_MODELS",
    "HISTORY_SCHEMA_PATH",
    "SCHEMA_PATH",
    "TOP_LEVEL_MODELS",
    "generate",
    "generate_exec_events",
    "main",
]

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "cody-protocol.schema.json"
EXEC_EVENTS_SCHEMA_PATH = SCHEMA_PATH.parent / "cody-exec-events.schema.json"
HISTORY_SCHEMA_PATH = SCHEMA_PATH.parent / "cody-history.schema.json"

TOP_LEVEL_MODELS: tuple[type[BaseModel], ...] = (
    initialize.InitializeParams,
    initialize.InitializeResult,
    initialize.AuthenticateParams,
    initialize.LogoutResult,
    session.NewSessionParams,
    session.NewSessionResult,
    session.LoadSessionParams,
    session.SessionStateResult,
    session.ListSessionsParams,
    session.ListSessionsResult,
    session.SessionIdParams,
    session.SetModeParams,
    session.SetConfigOptionParams,
    session.SetConfigOptionResult,
    session.ForkSessionParams,
    session.ForkSessionResult,
    prompt.PromptParams,
    prompt.PromptResult,
    prompt.CancelParams,
    updates.SessionNotification,
    permission.RequestPermissionParams,
    permission.RequestPermissionResult,
    files.ReadTextFileParams,
    files.ReadTextFileResult,
    files.WriteTextFileParams,
    commands.AvailableCommandsUpdate,
    terminal.TerminalInfoMeta,
    terminal.TerminalOutputMeta,
    terminal.TerminalExitMeta,
    extensions.ToolsListParams,
    extensions.ToolsListResult,
    extensions.ModelsListResult,
    extensions.AgentsListResult,
    extensions.McpStatusNotification,
    extensions.CompactSessionParams,
    extensions.CompactSessionResult,
    extensions.PermissionsListParams,
    extensions.PermissionsListResult,
    extensions.PermissionsRemoveParams,
    extensions.PermissionsRemoveResult,
    updates.ToolCallDecision,
    errors.RpcError,
    errors.InvalidParamsData,
    errors.ProviderErrorData,
    errors.AuthRequiredData,
)


def generate() -> dict[str, Any]:
    """Return the schema: one `$defs` entry per model, plus the top-level model names."""
    _, schema = models_json_schema(
        [(model, "validation") for model in TOP_LEVEL_MODELS],
        title="Cody protocol",
        ref_template="#/$defs/{model}",
    )
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["x-top-level"] = [model.__name__ for model in TOP_LEVEL_MODELS]
    return schema


def generate_exec_events() -> dict[str, Any]:
    """The schema of one `cody-client exec --json` line (a union discriminated by `type`)."""
    schema = exec_events.EXEC_EVENT.json_schema(ref_template="#/$defs/{model}")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"cody-client exec --json event (version {exec_events.EXEC_EVENTS_VERSION})"
    return schema


HISTORY_MODELS: tuple[type[BaseModel], ...] = (
    history.UnifiedMessage,
    history.HistoryListParams,
    history.HistoryListResult,
    history.HistoryReadParams,
    history.HistoryReadResult,
    history.SessionHistoryParams,
    history.HistoryImportParams,
    history.HistoryImportResult,
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


def render_exec_events() -> str:
    return json.dumps(generate_exec_events(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"write {SCHEMA_PATH.name}, {EXEC_EVENTS_SCHEMA_PATH.name}, {HISTORY_SCHEMA_PATH.name}",
    )
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        EXEC_EVENTS_SCHEMA_PATH.write_text(render_exec_events(), encoding="utf-8")
        HISTORY_SCHEMA_PATH.write_text(render_history(), encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
