"""A call whose arguments the user edited when approving it (`_meta.cody.updatedInput`).

Invariants:
- the edited arguments are parsed by the same tool (an edit cannot change which tool runs)
  and described afresh (title, files touched);
- they go through the same `policy.approval.decide` as the model's own arguments, with facts
  gathered afresh (engine/approvals.py): the allowlist, a login-file refusal, the sandbox, a
  deny rule and a session rejection refuse them exactly as they would refuse the model's
  call, so a client cannot pass a different command past the policy by approving an edit;
  only "ask" is settled by the user's answer; whether the edited call leaves the sandbox
  (`escalate`, a write outside the writable roots) is the edited call's own;
- an "allow always" remembers the edited call's grant key, not the model's;
- the model is told that its call ran with other arguments (`edited_note`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..policy.approval import CallFacts, Deny, Grants, decide
from ..tools.base import Tool, ToolResult
from ..tools.registry import ToolRegistry
from .toolcalls import DescribedCall, describe_call, unusable_arguments

__all__ = ["EditRefused", "EditedCall", "check_edit", "edited_note"]


@dataclass(frozen=True, slots=True)
class EditedCall:
    """The edited call may run (the policy would ask, or allows it)."""

    info: DescribedCall
    """Its description; `info.args` are the arguments to run."""
    facts: CallFacts
    """What the decision knew about the edited call (its grant key, its escalation)."""


@dataclass(frozen=True, slots=True)
class EditRefused:
    """The edited call may not run."""

    reason: str
    """Why, as the session file records decisions (`sandbox`, `rule`, `invalid edit`, ...)."""
    message: str
    """What the model is told."""
    verdict: Deny | None = None
    """The decision that refused the edited call (None: its arguments were unusable)."""


async def check_edit(
    tool: Tool[Any],
    updated_input: dict[str, Any],
    *,
    cwd: Path,
    facts_for: Callable[[Any], Awaitable[CallFacts]],
    grants: Grants,
) -> EditedCall | EditRefused:
    """Decide on the edited arguments as on the model's (see the module docstring)."""
    # Described by the same tool alone: an edit cannot change which tool runs.
    info = describe_call(ToolRegistry([tool]), tool.name, json.dumps(updated_input), cwd=cwd)
    if info.error is not None or info.args is None or info.tool is not tool:
        why = info.error or "not arguments of this tool"
        message = f"The arguments the user edited are not valid for {tool.name}: {why}"
        return _invalid(message)
    try:
        facts = await facts_for(info.args)
    except Exception as exc:  # e.g. a NUL byte in an edited path
        return _invalid(unusable_arguments(tool.name, exc))
    verdict = decide(facts, grants)
    if isinstance(verdict, Deny):
        return EditRefused(verdict.reason, verdict.message, verdict)
    return EditedCall(info=info, facts=facts)


def _invalid(message: str) -> EditRefused:
    return EditRefused("invalid edit", message)


def edited_note(result: ToolResult, raw_input: Any) -> ToolResult:
    """`result` telling the model (and the client's `rawOutput`) that the user changed the
    call's arguments before it ran, and to what."""
    shown = json.dumps(raw_input, ensure_ascii=False)
    note = f"(The user edited this call before approving it; it ran with the arguments {shown}.)"
    return replace(
        result,
        output=f"{note}\n{result.output}",
        raw_output={**(result.raw_output or {}), "editedInput": raw_input},
    )
