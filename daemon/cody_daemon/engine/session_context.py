"""The environment and permissions item: what the model is told about where it runs and what
it may do, generated from the session's real settings (texts in `prompts/permissions/`).

`PermissionFacts` holds everything the text depends on, taken from the settings and the
sandbox the session's tools really run under (never from the repository); `permissions_text`
turns them into sentences. A setting that changes what may run belongs in `PermissionFacts`
and in one paragraph here: the item is re-sent exactly when this text changes.

Invariants:
- the text is a pure function of `PermissionFacts`: the same settings always give the same
  bytes (no date, no path order that could vary), so an unchanged session never re-sends it;
- `refresh` appends a new item (engine/context_items.py) only when the text differs from the
  last one sent, at the start of a turn; earlier requests are never rewritten.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cody_protocol.settings import ApprovalPolicy, SandboxMode, SandboxUnavailable

from ..core.project import project_root
from .context_items import latest, record, session_context_entry
from .prompt_files import prompt, render

if TYPE_CHECKING:
    from ..policy.sandbox import SandboxPolicy
    from ..tools.base import Tool
    from .session import Session

__all__ = ["PermissionFacts", "environment_text", "permissions_text", "refresh"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionFacts:
    sandbox_mode: SandboxMode
    approval_policy: ApprovalPolicy
    writable_roots: tuple[str, ...] = ()
    """Where commands and file tools may write (`workspace-write`)."""
    network_access: bool = False
    """Sandboxed commands reach the network."""
    sandbox_available: bool = True
    """Commands can be isolated here (bubblewrap works)."""
    sandbox_unavailable: SandboxUnavailable = "ask"
    """What happens to a command when they cannot."""
    can_escalate: bool = False
    """`exec` takes `escalate` (run outside the sandbox, after the user's approval)."""

    @classmethod
    def of(
        cls,
        session: Session,
        sandbox: SandboxPolicy,
        tools: Sequence[Tool[Any]],
        *,
        sandbox_available: bool,
    ) -> PermissionFacts:
        """The facts of `session` as its next turn runs: the `sandbox` its tools get, and the
        `tools` offered to the model."""
        settings = session.settings
        exec_tool = next((tool for tool in tools if tool.name == "exec"), None)
        properties = exec_tool.spec().parameters.get("properties", {}) if exec_tool else {}
        return cls(
            sandbox_mode=settings.sandbox_mode,
            approval_policy=settings.approval_policy,
            writable_roots=tuple(str(root) for root in sandbox.writable_roots()),
            network_access=sandbox.network,
            sandbox_available=sandbox_available,
            sandbox_unavailable=settings.sandbox_unavailable,
            can_escalate="escalate" in properties,
        )


def permissions_text(facts: PermissionFacts) -> str:
    mode = facts.sandbox_mode
    sandboxed = mode != "danger-full-access"
    parts: list[str] = []
    if mode == "workspace-write":
        roots = [f"`{root}`" for root in facts.writable_roots]
        listed = ", ".join(roots[:-1]) + f" and {roots[-1]}" if len(roots) > 1 else "".join(roots)
        parts.append(render("permissions/sandbox_workspace_write", writable_roots=listed))
    else:
        parts.append(prompt(f"permissions/sandbox_{mode.replace('-', '_')}"))
    if sandboxed:
        parts.append(prompt(f"permissions/network_{'on' if facts.network_access else 'off'}"))
        if not facts.sandbox_available:
            parts.append(prompt(f"permissions/no_sandbox_{facts.sandbox_unavailable}"))
    policy = facts.approval_policy
    escalates = sandboxed and facts.sandbox_available and facts.can_escalate
    if policy == "on-request":
        clause = ', and a command run with `"escalate": true`' if escalates else ""
        parts.append(render("permissions/approval_on_request", escalate_clause=clause))
    else:
        parts.append(prompt(f"permissions/approval_{policy.replace('-', '_')}"))
    if sandboxed and facts.sandbox_available and policy in ("on-request", "untrusted"):
        parts.append(prompt("permissions/escalate" if escalates else "permissions/no_escalate"))
    parts.append(prompt("permissions/denial"))
    return "\n\n".join(parts)


def environment_text(cwd: Path, now: datetime | None = None) -> str:
    root = project_root(cwd)
    git = (cwd / ".git").exists() or (root / ".git").exists()
    return render(
        "environment",
        cwd=str(cwd),
        root=f"{root} (a git repository)" if git else f"{root} (not a git repository)",
        os=f"{platform.system()} {platform.release()}",
        date=(now or datetime.now(UTC)).strftime("%Y-%m-%d"),
    )


def refresh(session: Session, facts: PermissionFacts) -> bool:
    """Record a new environment-and-permissions item when the permissions changed since the
    last one (or none was sent yet). True when one was added."""
    text = permissions_text(facts)
    last = latest(session.context_items, "session_context")
    if last is not None and last.key == text:
        return False
    body = render("session_context", environment=environment_text(session.cwd), permissions=text)
    record(session, session_context_entry(session.history, text, body))
    return True
