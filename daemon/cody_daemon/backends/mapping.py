"""Cody's settings -> each CLI's own settings: the one mapping table (docs/backends.md).

| Cody (approval policy / sandbox) | Codex `approvalPolicy` / sandbox      | Claude Code `--permission-mode` |
|----------------------------------|---------------------------------------|---------------------------------|
| `untrusted`                      | `untrusted`                           | `default`                       |
| `on-request`                     | `untrusted` (Codex's `on-request` asks only to leave its sandbox) | `default` |
| `on-failure`                     | `on-request` (asks to leave its sandbox) | `default`                    |
| `never`                          | `never`                               | `acceptEdits`                   |
| sandbox `read-only`              | `read-only` (profile `cody-read-only`) | `plan` (whatever the policy)   |
| sandbox `workspace-write`        | `workspace-write` (`cody-workspace`)  | not enforced (no sandbox)       |
| sandbox `danger-full-access`     | `danger-full-access`, approval `untrusted` | not enforced (no sandbox)  |

The Codex sandbox modes are Cody's own rules as Codex permission profiles (codex_sandbox.py).
Claude Code asks Cody about every tool call whatever its mode (backends/claude_code.py); its
mode still tells its model what is expected (plan mode: do not edit). With sandbox
`danger-full-access` Codex has no sandbox to keep, so it runs with approval `untrusted`
whatever Cody's policy: every command and edit then comes to Cody, which applies the policy
itself (`never` allows at once), refuses login files and records the decision.

Allowlists (`allowedTools`, or a phase's list) are Cody tool names:
- Claude Code: `--tools` lists the built-in tools that map to allowed Cody tools (the others
  do not exist for the model), `--disallowedTools` denies the mapped tools outside the list
  as well, and the daemon rejects any `can_use_tool` for a tool outside the list (MCP tools
  included). `--allowedTools` is never used: it would skip *our* client's approval.
- Codex cannot withhold its tools. When the list leaves out `exec` or `applyPatch` (the
  Cody tools Codex's command and edit requests are decided as: `CODEX_TOOLS`), the session
  runs with approval policy `untrusted`, so every command and edit comes to the daemon,
  which declines those outside the list; when the list has no tool that writes files or
  runs programs (by the tools' own facts, `ToolFacts.writes_or_runs`: the `research` and
  `plan` phases), the sandbox is `read-only` too. Commands Codex itself knows to be
  read-only (`ls`, `cat`, `rg`, ...) still run in that read-only sandbox without asking.

Cody's sandbox where the CLI would not keep it (`sandbox_violation`, applied by the daemon to
each approval the CLI asks for, before the client is asked): an edit outside the writable
roots of the sandbox mode (every edit under `read-only`) is refused, and under `read-only` so
is a command that is not known to be read-only, because Codex runs an approved command
outside its sandbox and Claude Code has none.

`codex_policy` and `claude_flags` are pure functions of `BackendSettings`; tests check every
row of the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cody_protocol.settings import ApprovalPolicy, SandboxMode

from ..policy.sandbox import SandboxPolicy
from .base import BackendSettings
from .codex_protocol import AskForApproval
from .info import BackendKind, backend_info

__all__ = [
    "CLAUDE_TOOLS",
    "CODEX_TOOLS",
    "ClaudeFlags",
    "CodexPolicy",
    "claude_flags",
    "claude_tool_to_cody",
    "codex_policy",
    "sandbox_violation",
]

CODEX_TOOLS: Final = frozenset({"exec", "applyPatch"})
"""The Cody tools Codex's own command and edit requests are decided as (codex_tools.py):
Codex's vocabulary, not facts of Cody's tools."""

CLAUDE_TOOLS: Final[dict[str, tuple[str, ...]]] = {
    "exec": ("Bash", "BashOutput", "KillShell"),
    "readFile": ("Read",),
    "listDir": ("LS",),
    "grepFiles": ("Grep",),
    "fileSearch": ("Glob",),
    "writeFile": ("Write",),
    "applyPatch": ("Edit", "MultiEdit", "NotebookEdit"),
    "updatePlan": ("TodoWrite", "TaskCreate", "TaskUpdate", "TaskGet", "TaskList"),
    "webSearch": ("WebSearch",),
    "fetchUrl": ("WebFetch",),
    "listMcpResources": ("ListMcpResourcesTool",),
    "readMcpResource": ("ReadMcpResourceTool",),
}
"""Cody tool -> the Claude Code built-in tools that do the same job."""

_CLAUDE_TO_CODY: Final[dict[str, str]] = {
    claude: cody for cody, names in CLAUDE_TOOLS.items() for claude in names
}


def claude_tool_to_cody(name: str) -> str | None:
    """The Cody tool a Claude Code tool corresponds to (`mcp__*` names are shared)."""
    if name.startswith("mcp__"):
        return name
    return _CLAUDE_TO_CODY.get(name)


@dataclass(frozen=True, slots=True, kw_only=True)
class CodexPolicy:
    approval_policy: AskForApproval
    sandbox: SandboxMode
    notes: list[str] = field(default_factory=list)


_CODEX_APPROVAL: Final[dict[ApprovalPolicy, AskForApproval]] = {
    "untrusted": "untrusted",
    "on-request": "untrusted",
    "on-failure": "on-request",
    "never": "never",
}


def codex_policy(settings: BackendSettings) -> CodexPolicy:
    approval = _CODEX_APPROVAL[settings.approval_policy]
    sandbox: SandboxMode = settings.sandbox_mode
    notes: list[str] = []
    if sandbox == "danger-full-access" and approval != "untrusted":
        approval = "untrusted"
        notes.append(
            "approval policy `untrusted` for Codex: without a sandbox every command and edit "
            f"comes to Cody, which applies `{settings.approval_policy}` itself"
        )
    allowed = settings.allowed_tools
    if allowed is not None:
        if not allowed >= CODEX_TOOLS and approval != "untrusted":
            approval = "untrusted"
            notes.append(
                "approval policy raised to `untrusted`: Codex cannot withhold its command and "
                "edit tools, so Cody declines the ones outside the allowlist when asked"
            )
        if not _writes_or_runs(allowed, settings) and sandbox != "read-only":
            sandbox = "read-only"
            notes.append("sandbox `read-only`: the allowlist has no tool that writes")
    return CodexPolicy(approval_policy=approval, sandbox=sandbox, notes=notes)


def _writes_or_runs(allowed: frozenset[str], settings: BackendSettings) -> bool:
    """Some allowed tool changes files or runs programs, by its facts (a name Cody does not
    know counts as one that does not: the sandbox only gets narrower)."""
    facts = settings.tool_facts
    return any(name in facts and facts[name].writes_or_runs for name in allowed)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaudeFlags:
    permission_mode: str
    tools: list[str] | None
    """`--tools` (None: the default set)."""
    disallowed: list[str]
    """`--disallowedTools`."""
    setting_sources: str | None
    """`--setting-sources` (None: Claude Code's default, project settings included)."""
    notes: list[str] = field(default_factory=list)

    def argv(self) -> list[str]:
        args = ["--permission-mode", self.permission_mode]
        if self.tools is not None:
            args += ["--tools", ",".join(self.tools)]
        if self.disallowed:
            args += ["--disallowedTools", ",".join(self.disallowed)]
        if self.setting_sources is not None:
            args += ["--setting-sources", self.setting_sources, "--strict-mcp-config"]
        return args


def claude_flags(settings: BackendSettings) -> ClaudeFlags:
    notes: list[str] = []
    if settings.sandbox_mode == "read-only":
        mode = "plan"
    elif settings.approval_policy == "never":
        mode = "acceptEdits"
    else:
        mode = "default"
    if settings.sandbox_mode != "read-only":
        notes.append(f"sandbox `{settings.sandbox_mode}` is not enforced: Claude Code has none")
    tools: list[str] | None = None
    disallowed: list[str] = []
    allowed = settings.allowed_tools
    if allowed is not None:
        tools = [name for cody in sorted(allowed) for name in CLAUDE_TOOLS.get(cody, ())]
        disallowed = [
            name
            for cody, names in sorted(CLAUDE_TOOLS.items())
            if cody not in allowed
            for name in names
        ]
    sources = None
    if not settings.project_trusted:
        sources = "user"
        notes.append(
            "project settings (.claude/settings*.json, .mcp.json) are ignored: the workspace "
            "is not in trusted_projects"
        )
    return ClaudeFlags(
        permission_mode=mode,
        tools=tools,
        disallowed=disallowed,
        setting_sources=sources,
        notes=notes,
    )


def sandbox_violation(
    backend: BackendKind,
    settings: BackendSettings,
    cwd: Path,
    *,
    cody_tool: str | None,
    known_safe: bool,
    paths: tuple[str, ...] = (),
) -> str | None:
    """Why Cody's sandbox mode forbids this call of the CLI, or None (see the module docstring)."""
    if cody_tool in ("applyPatch", "writeFile"):
        sandbox = SandboxPolicy.create(
            settings.sandbox_mode, cwd, "allow", protected=settings.protected
        )
        for path in paths:
            violation = sandbox.check_write(path)
            if violation is not None:
                return violation
        return None
    if cody_tool == "exec" and settings.sandbox_mode == "read-only" and not known_safe:
        return (
            "the sandbox is read-only and this command is not known to be read-only: "
            f"{backend_info(backend).subject} would run it outside any sandbox once approved"
        )
    return None
