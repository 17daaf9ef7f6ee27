"""Tool allowlists per session (seed 004): an explicit `allowedTools` list beats the phase.

Phases: `research` (the tools that change nothing: reading and searching files, the web,
MCP resources, language servers), `plan` (research + the tools that change only the
session's plan), `implement` (everything). `None` means every tool is allowed.

A phase's tools are derived from what each tool declares (`ToolFacts`, core/tooling.py),
never listed by name: a new read-only tool joins `research` by saying it changes nothing.
The facts come from the caller (`ToolRegistry.facts()`: the registered tools and the MCP
session tools); an MCP server's own `mcp__*` tools are in no phase's list.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from ..core.tooling import ToolFacts

__all__ = ["PHASES", "allowed_tools", "phase_tools"]

_PHASE_TAKES: dict[str, Callable[[ToolFacts], bool] | None] = {
    "research": lambda facts: facts.read_only,
    "plan": lambda facts: facts.read_only or facts.changes == "plan",
    "implement": None,
}

PHASES: tuple[str, ...] = tuple(_PHASE_TAKES)


def phase_tools(phase: str, facts: Mapping[str, ToolFacts]) -> frozenset[str] | None:
    """The names among `facts` that `phase` allows (None: every tool; an unknown phase
    allows every tool too, as it always has: settings validate phase names)."""
    takes = _PHASE_TAKES.get(phase)
    if takes is None:
        return None
    return frozenset(name for name, tool in facts.items() if takes(tool))


def allowed_tools(
    explicit: Collection[str] | None, phase: str | None, facts: Mapping[str, ToolFacts]
) -> frozenset[str] | None:
    if explicit is not None:
        return frozenset(explicit)
    if phase is not None:
        return phase_tools(phase, facts)
    return None
