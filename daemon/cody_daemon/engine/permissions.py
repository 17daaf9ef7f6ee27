"""`_cody/permissions/list` and `_cody/permissions/remove`: the rules a user has, and removing
one that Cody wrote (docs/protocol.md "Extensions").

Listing shows every rule as written with its file, decision and project, without judging
its syntax (a rule Cody cannot apply is listed too; sessions report it). Only rules of the
user config can be removed: other agents' files and a project's own config are read-only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from cody_protocol.extensions import PermissionRuleInfo

from ..config.loader import (
    PermissionLayer,
    load_effective_config,
    load_user_config,
    user_permission_layers,
)
from ..config.rule_writer import RuleWriteError, remove_rule
from ..errors import InvalidParams, Issue
from ..policy.foreign_rules import ForeignRules, read_claude_settings, read_codex_rules
from .deps import EngineDeps

__all__ = ["list_permission_rules", "remove_permission_rule"]

_CLAUDE_PROJECT_FILES = (Path(".claude") / "settings.json", Path(".claude") / "settings.local.json")


def list_permission_rules(
    deps: EngineDeps, cwd: str | None
) -> tuple[list[PermissionRuleInfo], list[str]]:
    """The rules that apply in `cwd` (None: every rule of the user config, all projects)."""
    warnings: list[str] = []
    if cwd is not None:
        if not os.path.isdir(cwd):
            raise InvalidParams(
                f"cwd {cwd} is not an existing directory.",
                [Issue(key="cwd", message="not an existing directory", value=cwd)],
            )
        loaded = load_effective_config(cwd=Path(cwd), paths=deps.paths)
        layers = loaded.permissions
        trusted = loaded.project_trusted
        warnings += [w for w in loaded.warnings if "permissions" in w]
    else:
        user = load_user_config(deps.paths)
        layers = user_permission_layers(user, str(deps.paths.config_file), cwd=None)
        trusted = False
    rules = [info for layer in layers for info in _layer_rules(layer)]
    foreign = ForeignRules()
    read_codex_rules(deps.codex_home / "rules", foreign)
    read_claude_settings(deps.claude_dir / "settings.json", foreign)
    if cwd is not None and trusted:
        for name in _CLAUDE_PROJECT_FILES:
            read_claude_settings(Path(cwd) / name, foreign)
    warnings += foreign.warnings
    rules += [
        PermissionRuleInfo(
            rule=entry.text,
            decision=entry.decision,  # type: ignore[arg-type]
            source=entry.source,
            read_only=True,
        )
        for entry in foreign.rules
    ]
    return rules, warnings


def _layer_rules(layer: PermissionLayer) -> list[PermissionRuleInfo]:
    permissions = layer.permissions
    lists: tuple[tuple[Literal["allow", "ask", "deny"], list[str]], ...] = (
        ("allow", permissions.allow),
        ("ask", permissions.ask),
        ("deny", permissions.deny),
    )
    return [
        PermissionRuleInfo(
            rule=text,
            decision=decision,
            source=layer.source,
            project=layer.key if layer.key is not None else layer.project,
            read_only=not layer.writable,
        )
        for decision, texts in lists
        for text in texts
    ]


def remove_permission_rule(
    deps: EngineDeps, *, rule: str, decision: str, source: str, project: str | None
) -> bool:
    """Remove one rule from the user config; False when it is not there (blocking: call it
    off the event loop)."""
    config_file = deps.paths.config_file
    if os.path.realpath(source) != os.path.realpath(config_file):
        raise InvalidParams(
            f"Only rules in Cody's user config ({config_file}) can be removed; {source} is "
            "read-only for Cody: edit it yourself.",
            [Issue(key="source", message="not Cody's user config", value=source)],
        )
    try:
        return remove_rule(config_file, rule, decision, project)
    except RuleWriteError as exc:
        raise InvalidParams(str(exc), [Issue(key="source", message=str(exc))]) from None
