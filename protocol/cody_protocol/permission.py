"""`session/request_permission` (docs/protocol.md "Approvals"), sent by the daemon to the client."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._base import WireModel
from .content import ToolCallContent
from .updates import ToolCallLocation, ToolCallStatus, ToolKind

__all__ = [
    "LEGACY_OPTION_IDS",
    "PERMISSION_OPTIONS",
    "ALLOW_PROJECT",
    "MAX_DENY_MESSAGE_CHARS",
    "CancelledOutcome",
    "CodyPermissionAnswerMeta",
    "CodyPermissionMeta",
    "PermissionAnswerMeta",
    "PermissionMeta",
    "PermissionOption",
    "PermissionOptionId",
    "PermissionOutcome",
    "PermissionToolCall",
    "RequestPermissionParams",
    "RequestPermissionResult",
    "SelectedOutcome",
    "allow_project_option",
]

PermissionOptionId = Literal[
    "allow_once", "allow_always", "allow_project", "reject_once", "reject_always"
]
"""Option ids equal their kinds (some ACP clients, avante.nvim, decide by the id alone), except
`allow_project`, a second option of kind `allow_always`: it also writes an allow rule to the
user's config for the call's project (docs/protocol.md "Approvals")."""

LEGACY_OPTION_IDS: dict[str, PermissionOptionId] = {
    "allow_session": "allow_always",
    "reject_session": "reject_always",
}
"""Ids older Cody releases sent; still accepted as answers from older clients."""


class PermissionOption(WireModel):
    option_id: str
    name: str
    kind: Literal["allow_once", "allow_always", "reject_once", "reject_always"]


ALLOW_PROJECT = "allow_project"
"""The id of the option that adds an allow rule for the project (offered when one can be
derived from the call: `CodyPermissionMeta.project_rules`)."""


def allow_project_option(rules: list[str], project: str) -> PermissionOption:
    """`Always allow `<rule>` in <project>`: the option that saves `rules` for `project`."""
    shown = ", ".join(f"`{rule}`" for rule in rules)
    return PermissionOption(
        option_id=ALLOW_PROJECT, name=f"Always allow {shown} in {project}", kind="allow_always"
    )


PERMISSION_OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(
        option_id="reject_always", name="Reject for this session", kind="reject_always"
    ),
)


class PermissionToolCall(WireModel):
    tool_call_id: str
    title: str
    kind: ToolKind
    status: ToolCallStatus = "pending"
    raw_input: Any = None
    content: list[ToolCallContent] = Field(default_factory=list)
    locations: list[ToolCallLocation] | None = None
    """The files the call would touch (absolute paths; editors show the right file)."""


class CodyPermissionMeta(WireModel):
    request_id: str | int
    """Repeats the JSON-RPC id, for clients (Neovim) that never see ids."""
    grant_key: str | None = None
    """What `allow_always`/`reject_always` would remember, in words."""
    sandboxed: bool | None = None
    """For `exec`: whether the command would run inside the sandbox."""
    justification: str | None = None
    """Why the model asks to run the command outside the sandbox (`exec` with `escalate`)."""
    project_rules: list[str] | None = None
    """The allow rules `allow_project` would add (`exec(npm run test:*)`), when offered."""
    project: str | None = None
    """The project root those rules would apply to (`[projects."<root>".permissions]`)."""


class PermissionMeta(WireModel):
    cody: CodyPermissionMeta


class RequestPermissionParams(WireModel):
    session_id: str
    tool_call: PermissionToolCall
    options: list[PermissionOption]
    meta: PermissionMeta | None = Field(default=None, alias="_meta")


class SelectedOutcome(WireModel):
    outcome: Literal["selected"] = "selected"
    option_id: str


class CancelledOutcome(WireModel):
    outcome: Literal["cancelled"] = "cancelled"


PermissionOutcome = Annotated[SelectedOutcome | CancelledOutcome, Field(discriminator="outcome")]


MAX_DENY_MESSAGE_CHARS = 4000
"""The longest `_meta.cody.message` a permission answer may carry."""


class CodyPermissionAnswerMeta(WireModel):
    """What a client may add to its permission answer (docs/protocol.md "Approvals")."""

    message: str | None = Field(default=None, max_length=MAX_DENY_MESSAGE_CHARS)
    """With a reject option: the reason, for the model (`User denied approval: <message>`)."""
    updated_input: dict[str, Any] | None = None
    """With an allow option: the tool's arguments to run instead of the model's. They go
    through the same approval decision as the model's (rules, sandbox, session rejections)."""


class PermissionAnswerMeta(WireModel):
    cody: CodyPermissionAnswerMeta | None = None


class RequestPermissionResult(WireModel):
    outcome: PermissionOutcome
    meta: PermissionAnswerMeta | None = Field(default=None, alias="_meta")
