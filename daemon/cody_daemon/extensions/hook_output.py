"""What a hook answered: its exit code and output read as Claude Code documents them.

- exit 0: stdout may be a JSON object (`continue`, `stopReason`, `systemMessage`,
  `decision: "block"` + `reason`, `hookSpecificOutput` with `permissionDecision`,
  `permissionDecisionReason`, `additionalContext`, or PermissionRequest's
  `decision: {behavior, message, interrupt}`); plain stdout is context for the events that
  take it (SessionStart, UserPromptSubmit) and is ignored for the others;
- exit 2: a blocking answer, its reason the hook's stderr;
- anything else (another exit code, a timeout, a hook that did not start, stdout that looks
  like JSON but is not): a failure, which blocks nothing unless the hook is `failClosed`
  (the engine decides what a failure does for its event).

Invariants: a pure function of the run; every text is cut to `MAX_TEXT` characters (a hook
cannot flood the model's context or the client).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from .hook_runner import HookRun
from .hooks_config import HookSpec

__all__ = ["MAX_TEXT", "HookAnswer", "read_answer"]

MAX_TEXT: Final = 10_000
_PLAIN_CONTEXT_EVENTS: Final = frozenset({"SessionStart", "UserPromptSubmit"})

Decision = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HookAnswer:
    spec: HookSpec
    failure: str | None = None
    """Why the hook failed (None: it answered)."""
    blocked: bool = False
    """Exit 2, `decision: "block"`, or a `deny`."""
    reason: str = ""
    """Why it blocked or decided (stderr on exit 2)."""
    decision: Decision | None = None
    """PreToolUse `permissionDecision`; PermissionRequest `behavior` (allow or deny)."""
    context: str = ""
    """Text for the model (`additionalContext`, or plain stdout where the event takes it)."""
    system_message: str | None = None
    """For the user (`systemMessage`)."""
    stop_turn: bool = False
    """`continue: false` (or PermissionRequest's `interrupt`): the turn stops."""
    stop_reason: str | None = None


def read_answer(spec: HookSpec, run: HookRun) -> HookAnswer:
    if run.error is not None:
        return HookAnswer(spec=spec, failure=run.error)
    if run.timed_out:
        return HookAnswer(spec=spec, failure=f"timed out after {spec.timeout_s:g} s")
    if run.exit_code == 2:
        reason = _cut(run.stderr.strip()) or f"the hook `{spec.command}` exited with code 2"
        return HookAnswer(spec=spec, blocked=True, reason=reason)
    if run.exit_code != 0:
        detail = _cut(run.stderr.strip().splitlines()[-1]) if run.stderr.strip() else ""
        why = f"exited with code {run.exit_code}" + (f": {detail}" if detail else "")
        return HookAnswer(spec=spec, failure=why)
    text = run.stdout.strip()
    if not text.startswith("{"):
        plain = _cut(text) if spec.event in _PLAIN_CONTEXT_EVENTS else ""
        return HookAnswer(spec=spec, context=plain)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return HookAnswer(spec=spec, failure="its output looks like JSON but is not valid JSON")
    if not isinstance(data, dict):
        return HookAnswer(spec=spec, failure="its JSON output is not an object")
    return _from_json(spec, data)


def _from_json(spec: HookSpec, data: dict[str, Any]) -> HookAnswer:
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = _text(data.get("reason"))
    blocked = data.get("decision") == "block"
    decision: Decision | None = None
    if data.get("decision") == "approve":  # Claude Code's older PreToolUse spelling
        decision = "allow"
    elif blocked and spec.event == "PreToolUse":
        decision = "deny"
    stop_turn = data.get("continue") is False
    if spec.event == "PreToolUse":
        chosen = specific.get("permissionDecision")
        if chosen in ("allow", "deny", "ask"):
            decision = chosen
            reason = _text(specific.get("permissionDecisionReason")) or reason
            blocked = chosen == "deny"
    elif spec.event == "PermissionRequest":
        verdict = specific.get("decision")
        if isinstance(verdict, dict) and verdict.get("behavior") in ("allow", "deny"):
            decision = verdict["behavior"]
            reason = _text(verdict.get("message")) or reason
            blocked = decision == "deny"
            stop_turn = stop_turn or (decision == "deny" and verdict.get("interrupt") is True)
    return HookAnswer(
        spec=spec,
        blocked=blocked,
        reason=reason,
        decision=decision,
        context=_text(specific.get("additionalContext")),
        system_message=_text(data.get("systemMessage")) or None,
        stop_turn=stop_turn,
        stop_reason=_text(data.get("stopReason")) or None,
    )


def _text(value: Any) -> str:
    return _cut(value.strip()) if isinstance(value, str) else ""


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n[... cut: the hook wrote {len(text):,} characters]"
