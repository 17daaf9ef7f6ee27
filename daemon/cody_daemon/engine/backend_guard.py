"""What Cody checks and hides on a backend CLI's events and approvals (engine/backend_turn.py).

A CLI's model sees what its tools print before Cody does, so it may repeat a secret anywhere:
in its text, its thoughts, a later command line. Invariants:
- every string a CLI reports (text and thought deltas, plan entries, tool titles, arguments,
  inputs, previews, live output, results) is redacted with the turn's `SecretGuard`
  (policy/secrets.py) before it reaches the session file or the client, as Cody's own tool
  results are (`redact_event`, `redact_ask`);
- a call that would read a login file (`ApprovalAsk.reads`) is refused in every policy and
  mode, as for Cody's own file tools (`credential_refusal`), never asked;
- a call of a Cody tool that Cody's own loop runs without approval (readFile, listDir,
  grepFiles, fileSearch, updatePlan, ...: the tools whose facts do not ask, `tool_facts`
  from the tool registry) needs none here either; every other call, a tool Cody does not
  know included, does;
- `protected` are Cody's own config and data directories, which no backend edit may write
  (with every `.git` and `.cody` of the workspace, policy/protected.py), as for Cody's tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..backends.base import (
    ApprovalAsk,
    BackendEvent,
    PlanUpdated,
    TextDelta,
    ThoughtDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from ..core.tooling import ToolFacts
from ..policy.secrets import SecretGuard
from ..tools.base import PathRead
from .secrets import credential_refusal, redact_content

__all__ = ["BackendGuard"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendGuard:
    secrets: SecretGuard
    tool_facts: Mapping[str, ToolFacts] = field(default_factory=dict)
    """What Cody's tools can do, by name (`ToolRegistry.facts()`): the approvals and the
    phases' tool lists a CLI gets are derived from them."""
    protected: tuple[Path, ...] = ()

    def requires_approval(self, ask: ApprovalAsk) -> bool:
        facts = self.tool_facts.get(ask.cody_tool) if ask.cody_tool is not None else None
        return facts is None or facts.asks

    def credential_refusal(self, ask: ApprovalAsk) -> str | None:
        reads = [
            PathRead(Path(read.path), contents_below=read.contents_below) for read in ask.reads
        ]
        return credential_refusal(self.secrets, reads)

    def redact_event(self, event: BackendEvent) -> BackendEvent:
        redact = self.secrets.redact
        if isinstance(event, TextDelta | ThoughtDelta):
            return replace(event, text=redact(event.text))
        if isinstance(event, ToolOutput):
            return replace(event, text=redact(event.text))
        if isinstance(event, ToolStarted):
            return replace(
                event,
                title=redact(event.title),
                raw_input=self._json(event.raw_input),
                arguments=redact(event.arguments),
                content=self._content(event.content),
            )
        if isinstance(event, ToolFinished):
            return replace(
                event,
                output=redact(event.output),
                content=self._content(event.content),
                raw_output=self._json(event.raw_output),
            )
        if isinstance(event, PlanUpdated):
            return PlanUpdated(tuple((redact(text), status) for text, status in event.entries))
        return event

    def redact_ask(self, ask: ApprovalAsk) -> ApprovalAsk:
        return replace(
            ask,
            title=self.secrets.redact(ask.title),
            raw_input=self._json(ask.raw_input),
            content=redact_content(self.secrets, ask.content),
        )

    def _json(self, value: Any) -> Any:
        return self.secrets.redact_json(value) if value is not None else None

    def _content(self, content: Any) -> Any:
        return redact_content(self.secrets, content) if content else content
