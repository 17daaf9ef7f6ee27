"""What an approval callback returns: `Allow`, `Deny` or `Cancel` (docs/protocol.md "Approvals").

    async def on_permission(request):
        if request.tool_call.kind == "read":
            return Allow()
        if "rm -rf" in str(request.tool_call.raw_input):
            return Deny(message="never delete recursively; list what you would remove")
        return Allow(updated_input={"command": "git status"})  # run this instead

`Allow(updated_input=...)` runs other arguments than the model's: the daemon decides on them
again exactly as on the model's (sandbox, permission rules, session rejections, allowlist), so
an edit never runs what the policy forbids. `Deny(message=...)` tells the model why.
`always=True` remembers the answer for calls with the same grant key for the rest of the
session; `Allow(project=True)` also saves the allow rules the request offers for its project
(`allow_project`, offered when `request.meta.cody.project_rules` is set), so later sessions
there do not ask.

Invariants: a decision becomes exactly one permission answer, or raises `InvalidDecision`;
nothing else is ever sent. A bare option id (`"allow_once"`, ...) is still taken when the
request offers it, and `"cancelled"` stops the turn; any other string (a typo) raises, so a
mistake is never silently answered as a rejection of every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cody_protocol.permission import MAX_DENY_MESSAGE_CHARS, RequestPermissionParams

__all__ = ["Allow", "Cancel", "Decision", "Deny", "InvalidDecision", "permission_answer"]


@dataclass(frozen=True, slots=True)
class Allow:
    """Run the call (`allow_once`; with `always`, `allow_always`; with `project`,
    `allow_project`)."""

    always: bool = False
    project: bool = False
    """Also save the offered allow rules for the project (only where the request offers it)."""
    updated_input: Mapping[str, Any] | None = None
    """The tool's arguments to run instead of the model's (decided on again by the daemon)."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the call; the turn goes on (`reject_once`; with `always`, `reject_always`)."""

    message: str | None = None
    """Why, for the model: it gets `User denied approval: <message>`."""
    always: bool = False


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop the whole turn (the prompt ends `cancelled`)."""


Decision = Allow | Deny | Cancel


class InvalidDecision(ValueError):
    """The approval callback returned something that is not a decision for this request."""


def permission_answer(decision: object, request: RequestPermissionParams) -> dict[str, Any]:
    """The `session/request_permission` result for `decision` (see the module docstring)."""
    offered = [option.option_id for option in request.options]
    if isinstance(decision, str):
        if decision == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        return _selected(_offered(decision, offered))
    if isinstance(decision, Cancel):
        return {"outcome": {"outcome": "cancelled"}}
    if isinstance(decision, Allow):
        option = (
            "allow_project"
            if decision.project
            else "allow_always"
            if decision.always
            else "allow_once"
        )
        answer = _selected(_offered(option, offered))
        if decision.updated_input is not None:
            if not isinstance(decision.updated_input, Mapping):
                raise InvalidDecision(
                    "Allow(updated_input=...) takes the tool's arguments as a dict"
                )
            answer["_meta"] = {"cody": {"updatedInput": dict(decision.updated_input)}}
        return answer
    if isinstance(decision, Deny):
        answer = _selected(_offered("reject_always" if decision.always else "reject_once", offered))
        if decision.message is not None:
            if not isinstance(decision.message, str):
                raise InvalidDecision("Deny(message=...) takes a string")
            if len(decision.message) > MAX_DENY_MESSAGE_CHARS:
                raise InvalidDecision(
                    f"Deny(message=...) is {len(decision.message)} characters long; "
                    f"at most {MAX_DENY_MESSAGE_CHARS} are sent to the model"
                )
            answer["_meta"] = {"cody": {"message": decision.message}}
        return answer
    raise InvalidDecision(
        f"the approval callback returned {decision!r}: return Allow(), Deny() or Cancel() "
        "(from cody_client)"
    )


def _offered(option_id: str, offered: list[str]) -> str:
    if option_id not in offered:
        raise InvalidDecision(
            f"the approval callback answered {option_id!r}, which this request does not offer "
            f"(it offers {', '.join(offered)}, or 'cancelled'); return Allow(), Deny() or "
            "Cancel() (from cody_client)"
        )
    return option_id


def _selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}
