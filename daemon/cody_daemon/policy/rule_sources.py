"""Where a session's permission rules come from (docs/protocol.md "Approvals").

Sources, all applied together (deny > ask > allow, policy/rules.py):
- the user config: `[permissions]`, and `[projects."<root>".permissions]` of every project
  that holds the workspace (written by `allow_project`);
- a trusted project's `.cody/config.toml` `[permissions]` (an untrusted one's are dropped by
  the config loader, with a warning);
- read-only: Codex's `$CODEX_HOME/rules/*.rules` `prefix_rule`s, Claude Code's
  `$CLAUDE_CONFIG_DIR/settings.json` `permissions`, and a *trusted* project's
  `.claude/settings.json` and `.claude/settings.local.json` (an untrusted project's are
  ignored with a warning: a cloned repository must not allow itself anything).

Invariants: a rule Cody's own config spells wrong is an error naming it (`InvalidParams`);
a rule of another agent's file that Cody cannot apply (a tool it does not have) is skipped
with one warning per file. Reading foreign files never blocks or reads without bound
(policy/foreign_rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..config.loader import PermissionLayer
from ..errors import InvalidParams, Issue
from .foreign_rules import ForeignRules, read_claude_settings, read_codex_rules
from .rules import Rule, RuleError, RuleSet, parse_rule

__all__ = ["RuleContext", "RulesLoaded", "load_rules"]

_DECISIONS: tuple[Literal["allow", "ask", "deny"], ...] = ("allow", "ask", "deny")
_CLAUDE_PROJECT_FILES = (Path(".claude") / "settings.json", Path(".claude") / "settings.local.json")


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleContext:
    cwd: Path
    """The session's workspace (real path): relative rule paths start here."""
    home: Path
    codex_home: Path | None
    claude_dir: Path | None
    project_trusted: bool


@dataclass(slots=True)
class RulesLoaded:
    rules: RuleSet
    warnings: list[str] = field(default_factory=list)


def load_rules(layers: list[PermissionLayer], context: RuleContext) -> RulesLoaded:
    """The rules of `layers` (Cody's config files) plus the other agents' files."""
    rules: list[Rule] = []
    problems: list[Issue] = []
    for layer in layers:
        base = Path(layer.project) if layer.project else context.cwd
        where = f'projects."{layer.key}".' if layer.key is not None else ""
        for decision in _DECISIONS:
            for index, text in enumerate(getattr(layer.permissions, decision)):
                try:
                    rules.append(
                        parse_rule(
                            text,
                            decision,
                            source=layer.source,
                            base=base,
                            home=context.home,
                            project=layer.project,
                            read_only=not layer.writable,
                        )
                    )
                except RuleError as exc:
                    problems.append(
                        Issue(
                            key=f"{where}permissions.{decision}[{index}]",
                            message=f"invalid rule: {exc}",
                            value=text,
                            source=layer.source,
                        )
                    )
    if problems:
        lines = "\n".join(
            f"invalid configuration: {p.key} = {p.value!r} in {p.source}: {p.message}"
            for p in problems
        )
        raise InvalidParams(lines, problems)
    warnings: list[str] = []
    foreign = ForeignRules()
    if context.codex_home is not None:
        read_codex_rules(context.codex_home / "rules", foreign)
    if context.claude_dir is not None:
        read_claude_settings(context.claude_dir / "settings.json", foreign)
    rules += _foreign(foreign, context, project=None, warnings=warnings)
    project = ForeignRules()
    for name in _CLAUDE_PROJECT_FILES:
        read_claude_settings(context.cwd / name, project)
    if context.project_trusted:
        rules += _foreign(project, context, project=str(context.cwd), warnings=warnings)
    elif project.found:
        warnings.append(
            f"ignored the permission rules of {context.cwd / '.claude'}: this project is not "
            "trusted (add it to trusted_projects in Cody's config to use them)"
        )
    else:
        warnings += project.warnings
    return RulesLoaded(RuleSet(rules), warnings)


def _foreign(
    found: ForeignRules, context: RuleContext, *, project: str | None, warnings: list[str]
) -> list[Rule]:
    warnings += found.warnings
    rules: list[Rule] = []
    skipped: dict[str, list[str]] = {}
    for entry in found.rules:
        try:
            rules.append(
                parse_rule(
                    entry.text,
                    entry.decision,  # type: ignore[arg-type]
                    source=entry.source,
                    base=context.cwd,
                    home=context.home,
                    project=project,
                    read_only=True,
                )
            )
        except RuleError:
            skipped.setdefault(entry.source, []).append(entry.text)
    for source, texts in skipped.items():
        shown = ", ".join(f"`{text[:60]}`" for text in texts[:3])
        more = f" and {len(texts) - 3} more" if len(texts) > 3 else ""
        warnings.append(
            f"ignored {len(texts)} rule(s) of {source} Cody cannot apply: {shown}{more}"
        )
    return rules
