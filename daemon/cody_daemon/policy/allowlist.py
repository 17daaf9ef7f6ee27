"""Tool allowlists per session (seed 004): an explicit `allowedTools` list beats the phase.

Phases: `research` (read and search tools only), `plan` (research + updatePlan),
`implement` (everything). `None` means every tool is allowed.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["PHASE_TOOLS", "allowed_tools"]

_RESEARCH = frozenset(
    {
        "readFile",
        "listDir",
        "grepFiles",
        "fileSearch",
        "symbols",
        "readMcpResource",
        "webSearch",
        "perplexitySearch",
        "fetchUrl",
    }
)

PHASE_TOOLS: dict[str, frozenset[str] | None] = {
    "research": _RESEARCH,
    "plan": _RESEARCH | {"updatePlan"},
    "implement": None,
}


def allowed_tools(explicit: Collection[str] | None, phase: str | None) -> frozenset[str] | None:
    if explicit is not None:
        return frozenset(explicit)
    if phase is not None:
        return PHASE_TOOLS.get(phase)
    return None
