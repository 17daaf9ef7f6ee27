"""What cody-client shows of a session's custom commands, skills and hooks
(`_meta.cody.commands`, `skills`, `hooks`), of its MCP servers and their prompts (`doctor`)
and of a hook's report (`_cody/hook/status`): in the chat's `/help`, its completion, `doctor`
and on stderr.

Invariant: names, descriptions, commands and paths come from files a repository may have
written; each goes through `one_line` (inert.py, the one gate) and is cut to a length, so
none can move the cursor, fake another line or flood the screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from cody_protocol.commands import AvailableCommand
from cody_protocol.extensions import HookStatusNotification, McpServerStatus
from cody_protocol.session import CustomCommandInfo, HookInfo, SkillInfo

from .inert import one_line
from .project_docs import shown_path

__all__ = [
    "command_help_rows",
    "extension_lines",
    "hook_status_line",
    "mcp_lines",
    "mcp_prompt_help_rows",
    "short",
    "skill_command",
]

_WIDTH = 100


def short(text: str, width: int = _WIDTH) -> str:
    """`text` on one line (inert), cut to `width` characters."""
    line = " ".join(text.split())
    if len(line) > width:
        line = line[: width - 1] + "…"
    return one_line(line)


def skill_command(skill: SkillInfo) -> CustomCommandInfo:
    """A skill a user may run, as the command `/<name>` it is."""
    return CustomCommandInfo(
        name=skill.name,
        description=skill.description,
        source=skill.path,
        scope=skill.scope,
        origin=skill.origin,
        kind="skill",
    )


def command_help_rows(commands: Sequence[CustomCommandInfo]) -> list[tuple[str, str]]:
    """`/help` rows for the session's own commands: usage, then what it does and whence."""
    rows = []
    for command in commands:
        usage = f"/{command.name}" + (f" {command.hint}" if command.hint else "")
        kind = "skill" if command.kind == "skill" else command.origin
        rows.append((short(usage, 40), short(f"{command.description} ({command.scope} {kind})")))
    return rows


def mcp_prompt_help_rows(advertised: Sequence[AvailableCommand]) -> list[tuple[str, str]]:
    """`/help` rows for the MCP servers' prompts the daemon advertises (`/mcp:...`)."""
    rows = []
    for command in advertised:
        if not command.name.startswith("mcp:"):
            continue
        hint = command.input.hint if command.input is not None else None
        usage = f"/{command.name}" + (f" {hint}" if hint else "")
        rows.append((short(usage, 40), short(command.description)))
    return rows


def hook_status_line(status: HookStatusNotification) -> str:
    """One line about a hook's failure, timeout or message."""
    what = f"{status.event} hook `{short(status.command, 60)}`"
    if status.status == "message":
        return f"{what}: {short(status.message, 200)}"
    return f"{what} ({short(status.source, 80)}): {short(status.message, 200)}"


def extension_lines(
    commands: Sequence[CustomCommandInfo],
    skills: Sequence[SkillInfo],
    hooks: Sequence[HookInfo],
    cwd: str,
    *,
    disabled_skills: Sequence[SkillInfo] = (),
) -> list[str]:
    """`doctor`'s lines: how many of each were loaded, and from where (and the skills the
    configuration switched off, marked so)."""
    lines = [f"Commands      {_count(len(commands), 'custom command')}"]
    lines += [f"  /{short(c.name, 40):<24} {shown_path(c.source, cwd)}" for c in commands[:50]]
    if len(commands) > 50:
        lines.append(f"  ... and {len(commands) - 50} more")
    lines.append(f"Skills        {_count(len(skills), 'skill')}")
    lines += [f"  {short(s.name, 40):<25} {shown_path(s.path, cwd)}" for s in skills[:50]]
    if len(skills) > 50:
        lines.append(f"  ... and {len(skills) - 50} more")
    if disabled_skills:
        lines.append(
            f"  {_count(len(disabled_skills), 'skill')} off by [[skills.config]] in the config:"
        )
        lines += [
            f"  {short(s.name, 40):<25} {shown_path(s.path, cwd)} (disabled)"
            for s in disabled_skills[:50]
        ]
    lines.append(f"Hooks         {_count(len(hooks), 'hook')}")
    for hook in hooks:
        matcher = f" [{short(hook.matcher, 30)}]" if hook.matcher else ""
        lines.append(
            f"  {hook.event}{matcher}: {short(hook.command, 60)}  ({shown_path(hook.source, cwd)})"
        )
    return lines


def mcp_lines(servers: Sequence[McpServerStatus], prompts: Sequence[str]) -> list[str]:
    """`doctor`'s lines about the session's MCP servers: each one ready (its tools, and the
    prompts it gives as `/mcp:<server>:<prompt>` commands), failed (why) or still starting."""
    lines = [f"MCP servers   {_count(len(servers), 'server')}"]
    for server in servers:
        name = short(server.server, 40)
        if server.state == "ready":
            own = [p for p in prompts if p.startswith(f"mcp:{server.server}:")]
            shown = ", ".join(f"/{short(p, 60)}" for p in own[:5])
            more = f", ... {len(own) - 5} more" if len(own) > 5 else ""
            listed = f": {shown}{more}" if own else ""
            lines.append(
                f"  ok  {name:<16} {_count(server.tools, 'tool')}, "
                f"{_count(len(own), 'prompt')}{listed}"
            )
        elif server.state == "failed":
            lines.append(f"  !!  {name:<16} {short(server.reason or 'failed', 200)}")
        else:
            lines.append(f"  ..  {name:<16} {short(server.reason or 'still starting', 200)}")
    return lines


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}" if count else "none"
