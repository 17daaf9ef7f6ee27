"""Deciding one tool call of Cody's own loop: the facts, the rules, the question to the client
when the policy asks, and the record of what decided (docs/protocol.md "Approvals").

Invariants:
- every call gets exactly one `CallDecision` (by rule, grant, policy, sandbox, allowlist,
  user or timeout, with a detail in words), written to the session file as an `approval`
  event before the call runs or is refused, and sent on the call's next update;
- an answer is remembered under the key of what was asked (`approval.remembered_key`): a
  session grant to run a command outside the sandbox covers the sandboxed run, never the
  reverse;
- `allow_project` is offered only when a rule can be derived that would allow the call
  (policy/rule_proposals.py) and no ask rule forced the question (an allow rule could not
  change that); the rules are saved to the user config (config/rule_writer.py) off the event
  loop and apply from then on; when saving fails the call still runs (the user allowed it),
  it is remembered for the session, and the decision's detail says why nothing was saved;
- the request shows what the call will do and, when it leaves the sandbox, says so with the
  model's justification; every text from the model or a tool is redacted first;
- a call of a tool whose facts say it reads or writes files, and which never says which
  (`tools.base.undeclared_files`), asks as a call the sandbox does not contain (fail closed);
- an answer that edits the call's arguments (`_meta.cody.updatedInput`) runs the edited call
  only if the whole decision, rules included, would not refuse it (engine/edited_input.py);
  the grant, the escalation and the rule `allow_project` saves are the edited call's; a
  rejection's `_meta.cody.message` is given to the model after "User denied approval: ".
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cody_protocol.content import ContentToolCallContent, TextContent, ToolCallContent

from ..config.rule_writer import RuleWriteError, add_project_rules
from ..policy.approval import (
    Allow,
    Ask,
    CallFacts,
    Deny,
    Escalation,
    HookDecision,
    decide,
    decided_by,
    remembered_key,
)
from ..policy.rule_proposals import propose_rules
from ..policy.rules import allow_rule_void
from ..policy.secrets import SecretGuard
from ..tools.base import GrantKey, Tool, ToolContext, undeclared_files
from .edited_input import EditRefused, check_edit
from .events import CallDecision
from .ports import ApprovalAnswer, ApprovalReply, ApprovalRequest, ClientLink
from .secrets import credential_refusal, redact_content
from .session import Session
from .toolcalls import DescribedCall, describe_grant
from .turn_hooks import TurnHooks, hook_input

__all__ = ["DENIED", "CallGate", "Decided", "Rerun", "TurnCancelled", "save_project_rules"]

logger = logging.getLogger(__name__)

DENIED = "User denied approval"
PREVIEW_TIMEOUT_S = 15.0
"""How long an approval preview may wait for the client's file read (then: the disk's)."""


class TurnCancelled(Exception):
    """The client answered an approval with `cancelled`: the turn stops."""


@dataclass(frozen=True, slots=True)
class Rerun:
    """`on-failure`: a command failed in the sandbox; ask to run it again outside."""

    exit_code: int | None
    output_tail: str


@dataclass(frozen=True, slots=True)
class Decided:
    run: bool
    decision: CallDecision
    message: str = DENIED
    """What the model is told when the call does not run."""
    refused: str = "user"
    """`rawOutput.refused` when the call does not run."""
    outside_sandbox: bool = False
    write_anywhere: frozenset[Path] = frozenset()
    edited: DescribedCall | None = None
    """The call as the user edited it when approving (`info.args` run instead of the
    model's); None: the model's own arguments run."""


_ANSWER_DETAIL: dict[str, tuple[str, Literal["allow", "deny"]]] = {
    "allow_once": ("allowed once", "allow"),
    "allow_session": ("allowed for this session", "allow"),
    "allow_project": ("allowed for this project", "allow"),
    "reject_once": ("rejected", "deny"),
    "reject_session": ("rejected for this session", "deny"),
    "cancelled": ("cancelled the turn", "deny"),
}


async def save_project_rules(
    rules_file: Path,
    project: str,
    rules: list[str],
    refresh: Callable[[], Awaitable[None]] | None,
    detail: str,
) -> str:
    """`allow_project`: add `rules` for `project` to the user config (off the event loop),
    then re-read the session's rules; the decision's detail says what happened."""
    shown = ", ".join(f"`{rule}`" for rule in rules)
    try:
        await asyncio.to_thread(add_project_rules, rules_file, project, rules)
    except RuleWriteError as exc:
        logger.warning("could not save the allow rule: %s", exc)
        return f"{detail}; could not save {shown}: {exc} (allowed for this session instead)"
    if refresh is not None:
        await refresh()
    return f'{detail}: saved {shown} to [projects."{project}"] in {rules_file}'


class CallGate:
    """The decisions of one turn's calls in one session."""

    def __init__(
        self,
        session: Session,
        link: ClientLink,
        *,
        turn_id: str,
        allowed: frozenset[str] | None,
        secrets: SecretGuard,
        rules_file: Path | None = None,
        refresh_rules: Callable[[], Awaitable[None]] | None = None,
        hooks: TurnHooks | None = None,
    ) -> None:
        self.session = session
        self.hooks = hooks
        """The turn's hooks: PreToolUse in the facts, PermissionRequest before the question."""
        self.link = link
        self.turn_id = turn_id
        self.allowed = allowed
        self.secrets = secrets
        self.rules_file = rules_file
        """The user config, where `allow_project` saves rules (None: not offered)."""
        self.refresh_rules = refresh_rules

    async def decide(
        self,
        *,
        call_id: str,
        info: DescribedCall,
        ctx: ToolContext,
        failure_seen: bool,
        rerun: Rerun | None = None,
    ) -> Decided:
        """Decide the call, asking the client when the policy says so. May raise on
        arguments the file system refuses (a NUL byte in a path), or TurnCancelled."""
        tool, args = info.tool, info.args
        assert tool is not None and args is not None
        facts = await self._facts(tool, args, ctx, failure_seen=failure_seen, rerun=rerun)
        verdict = decide(facts, self.session.grants)
        key = remembered_key(facts.grant_key, facts.escalation)
        if isinstance(verdict, Deny):
            by, detail = decided_by(verdict)
            decision = CallDecision(by, detail, "deny")  # type: ignore[arg-type]
            self._record(
                call_id,
                tool=tool.name,
                decision="deny",
                reason=verdict.reason,
                grant_key=key,
                audit=decision,
            )
            return Decided(False, decision, verdict.message, verdict.reason)
        if isinstance(verdict, Allow):
            by, detail = decided_by(verdict)
            decision = CallDecision(by, detail, "allow")  # type: ignore[arg-type]
            self._record(
                call_id,
                tool=tool.name,
                decision="allow",
                reason=verdict.reason,
                grant_key=key,
                audit=decision,
            )
            return self._allowed(decision, facts)
        proposal = None
        if verdict.rule is None and verdict.hook is None and self.rules_file is not None:
            proposal = propose_rules(
                tool.name, tool.permission_subject(args, ctx), self.session.cwd, tool.facts
            )
        return await self._ask(
            call_id=call_id,
            info=info,
            ctx=ctx,
            facts=facts,
            verdict=verdict,
            key=key,
            proposal=proposal,
            rerun=rerun,
            failure_seen=failure_seen,
        )

    async def _facts(
        self,
        tool: Tool[Any],
        args: Any,
        ctx: ToolContext,
        *,
        failure_seen: bool,
        rerun: Rerun | None,
    ) -> CallFacts:
        """What `policy.approval.decide` needs to know about a call (the model's, or the
        arguments the user edited); may raise on arguments the file system refuses."""
        settings = self.session.settings
        undeclared = undeclared_files(tool)
        needs: tuple[Escalation, str] | None
        if rerun is not None:
            needs = ("rerun", "the command failed inside the sandbox")
        elif undeclared is not None:
            needs = ("other", undeclared)  # fail closed: the sandbox cannot vouch for it
        else:
            needs = tool.escalation(args, ctx)
        escalation: Escalation | None = needs[0] if needs is not None else None
        subject = tool.permission_subject(args, ctx)
        known_safe = (
            settings.approval_policy == "untrusted"
            and needs is None
            and await asyncio.to_thread(tool.known_safe, args, ctx)
        )
        rule = settings.rules.evaluate(tool.name, subject, tool.facts)
        void = await asyncio.to_thread(allow_rule_void, rule, subject, os.environ) if rule else None
        return CallFacts(
            tool_name=tool.name,
            requires_approval=tool.requires_approval or undeclared is not None,
            allowed_by_allowlist=self.allowed is None or tool.name in self.allowed,
            sandbox_violation=None if rerun else tool.sandbox_check(args, ctx),
            credential_refusal=credential_refusal(self.secrets, tool.path_reads(args, ctx)),
            unsandboxed=tool.runs_unsandboxed(args, ctx) and escalation is None,
            sandbox_unavailable=settings.sandbox_unavailable,
            known_safe=known_safe,
            grant_key=tool.grant_key(args, ctx),
            policy=settings.approval_policy,
            failure_seen=failure_seen,
            contained=needs is None,
            escalation=escalation,
            outside_reason=needs[1] if needs is not None else None,
            rule=rule,
            allow_rule_void=void,
            hook=None if rerun is not None else await self._pre_tool_hook(tool, args, ctx),
        )

    async def _pre_tool_hook(
        self, tool: Tool[Any], args: Any, ctx: ToolContext
    ) -> HookDecision | None:
        """What the PreToolUse hooks say about the call (policy/approval.py weighs it)."""
        if self.hooks is None or not self.hooks.wants("PreToolUse"):
            return None
        verdict = await self.hooks.pre_tool(tool.name, hook_input(args, ctx.cwd), ctx.call_id)
        if verdict is None:
            return None
        return HookDecision(verdict.decision, verdict.reason, verdict.command)

    @staticmethod
    def _allowed(
        decision: CallDecision, facts: CallFacts, edited: DescribedCall | None = None
    ) -> Decided:
        paths: frozenset[Path] = frozenset()
        if facts.escalation == "write" and facts.grant_key[:1] == ("paths",):
            paths = frozenset(Path(path) for path in facts.grant_key[1:])
        return Decided(
            True,
            decision,
            outside_sandbox=facts.escalation in ("escalate", "rerun"),
            write_anywhere=paths,
            edited=edited,
        )

    async def _ask(
        self,
        *,
        call_id: str,
        info: DescribedCall,
        ctx: ToolContext,
        facts: CallFacts,
        verdict: Ask,
        key: GrantKey,
        proposal: list[str] | None,
        rerun: Rerun | None,
        failure_seen: bool,
    ) -> Decided:
        tool, args = info.tool, info.args
        assert tool is not None and args is not None
        answered = await self._permission_hook(
            call_id, tool=tool, args=args, ctx=ctx, facts=facts, key=key
        )
        if answered is not None:
            return answered
        request = ApprovalRequest(
            call_id=call_id,
            title=info.title,
            kind=info.kind,
            raw_input=info.raw_input,
            content=redact_content(
                self.secrets, await self._content(tool, args, ctx, facts, rerun)
            ),
            grant_key=describe_grant(key),
            sandboxed=(
                (not verdict.unsandboxed and facts.escalation is None)
                if tool.kind == "execute"
                else None
            ),
            locations=info.locations or None,
            justification=self.secrets.redact(getattr(args, "justification", None) or "") or None,
            project_rules=proposal,
            project=str(self.session.cwd) if proposal else None,
        )
        by: Literal["user", "timeout"] = "user"
        reason = "user"
        try:
            reply = await asyncio.wait_for(
                self.link.request_approval(self.session.id, request),
                timeout=self.session.settings.approval_timeout_s,
            )
        except TimeoutError:
            reply, reason, by = ApprovalReply("reject_once"), "timeout", "timeout"
        answer: ApprovalAnswer = reply.answer
        if answer == "invalid" or (answer == "allow_project" and not proposal):
            answer, reason = "reject_once", "invalid answer"
        detail, outcome = _ANSWER_DETAIL[answer]
        if by == "timeout":
            detail = f"no answer within {self.session.settings.approval_timeout_s:g} s"
        elif reason == "invalid answer":
            detail = "an invalid answer (counts as a rejection)"
        if verdict.rule is not None:
            detail += f"; asked because of the rule {verdict.rule.describe()}"
        if verdict.hook is not None:
            detail += f"; asked because of the PreToolUse hook `{verdict.hook.command}`"
        edited: DescribedCall | None = None
        if outcome == "allow" and reply.updated_input is not None:
            # The user's edit is decided on as the model's call would be: rules, sandbox,
            # rejections; only the question is settled by the answer.
            check = await check_edit(
                tool,
                reply.updated_input,
                cwd=self.session.cwd,
                facts_for=lambda edited_args: self._facts(
                    tool, edited_args, ctx, failure_seen=failure_seen, rerun=rerun
                ),
                grants=self.session.grants,
            )
            if isinstance(check, EditRefused):
                return self._edit_refused(call_id, tool.name, key, check)
            edited, facts = check.info, check.facts
            key = remembered_key(facts.grant_key, facts.escalation)
            reason = "user (edited input)"
            detail += "; with the arguments the user edited"
            if answer == "allow_project":
                assert edited.args is not None
                subject = tool.permission_subject(edited.args, ctx)
                proposal = propose_rules(tool.name, subject, self.session.cwd, tool.facts)
                if not proposal:
                    detail = (
                        "allowed for this session with the arguments the user edited (no "
                        "rule can allow the edited call, so none was saved)"
                    )
        if answer == "allow_project" and proposal:
            detail = await self._save(proposal, detail)
        decision = CallDecision(by, detail, outcome)
        self._record(
            call_id, tool=tool.name, decision=answer, reason=reason, grant_key=key, audit=decision
        )
        if answer == "cancelled":
            raise TurnCancelled()
        grants = self.session.grants
        if answer in ("allow_session", "allow_project"):
            grants.allowed.add(key)
        elif answer == "reject_session":
            grants.rejected.add(key)
        elif answer == "reject_once":
            grants.turn_rejected.add(key)
        if outcome == "deny":
            message = f"{DENIED}: {reply.message}" if reply.message else DENIED
            return Decided(False, decision, message)
        return self._allowed(decision, facts, edited)

    async def _permission_hook(
        self,
        call_id: str,
        *,
        tool: Tool[Any],
        args: Any,
        ctx: ToolContext,
        facts: CallFacts,
        key: GrantKey,
    ) -> Decided | None:
        """A PermissionRequest hook's answer in the user's place (recorded, never remembered
        as a grant: the hook is asked again next time); None: ask the user (the Notification
        hooks hear that an approval waits)."""
        if self.hooks is None:
            return None
        verdict = None
        if self.hooks.wants("PermissionRequest"):
            verdict = await self.hooks.permission_request(
                tool.name, hook_input(args, ctx.cwd), call_id
            )
        if verdict is None:
            self.hooks.notify("permission_prompt", f"Cody needs your permission to use {tool.name}")
            return None
        named = f"the PermissionRequest hook `{verdict.command}`"
        outcome: Literal["allow", "deny"] = "allow" if verdict.decision == "allow" else "deny"
        decision = CallDecision(
            "hook", named + (f": {verdict.reason}" if verdict.reason else ""), outcome
        )
        self._record(
            call_id, tool=tool.name, decision=outcome, reason="hook", grant_key=key, audit=decision
        )
        if outcome == "allow":
            return self._allowed(decision, facts)
        return Decided(False, decision, verdict.reason or f"refused by {named}", "hook")

    def _edit_refused(
        self, call_id: str, tool: str, key: GrantKey, refused: EditRefused
    ) -> Decided:
        """The user approved an edit the decision refuses: the call does not run."""
        by, why = (
            decided_by(refused.verdict)
            if refused.verdict is not None
            else ("user", refused.message)
        )
        decision = CallDecision(
            by,  # type: ignore[arg-type]
            f"the arguments the user edited were refused: {why}",
            "deny",
        )
        self._record(
            call_id,
            tool=tool,
            decision="deny",
            reason=refused.reason,
            grant_key=key,
            audit=decision,
        )
        return Decided(False, decision, refused.message, refused.reason)

    async def _content(
        self, tool: Tool[Any], args: Any, ctx: ToolContext, facts: CallFacts, rerun: Rerun | None
    ) -> list[ToolCallContent]:
        try:  # an edit's diff against the editor's buffer: a silent editor gets the disk's
            preview = await asyncio.wait_for(tool.preview_async(args, ctx), PREVIEW_TIMEOUT_S)
        except TimeoutError:
            preview = tool.preview(args, ctx)
        note = None
        if rerun is not None:
            code = "?" if rerun.exit_code is None else str(rerun.exit_code)
            note = (
                f"This command failed inside the sandbox (exit code {code}). Run it again "
                "OUTSIDE the sandbox, with full access to your files and the network?"
                + (f"\n\nIts output ended with:\n{rerun.output_tail}" if rerun.output_tail else "")
            )
        elif facts.escalation == "write":
            note = f"OUTSIDE THE SANDBOX: {facts.outside_reason}"
        if note is None:
            return preview
        return [ContentToolCallContent(content=TextContent(text=note)), *preview]

    async def _save(self, rules: list[str], detail: str) -> str:
        assert self.rules_file is not None
        return await save_project_rules(
            self.rules_file, str(self.session.cwd), rules, self.refresh_rules, detail
        )

    def _record(
        self,
        call_id: str,
        *,
        tool: str,
        decision: str,
        reason: str,
        grant_key: GrantKey,
        audit: CallDecision,
    ) -> None:
        self.session.file.append(
            "event",
            {
                "kind": "approval",
                "turnId": self.turn_id,
                "callId": call_id,
                "tool": tool,
                "decision": decision,
                "reason": reason,
                "grantKey": list(grant_key),
                "by": audit.by,
                "detail": audit.detail,
            },
        )
