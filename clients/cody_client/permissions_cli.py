"""`cody-client permissions`: the permission rules, listed, and removed from Cody's config.

    cody-client permissions [list] [--cwd DIR] [--json]
    cody-client permissions remove RULE [--decision allow|ask|deny] [--project DIR]

`list` shows every rule of the user config (all projects) and of the Codex and Claude Code
files Cody reads; with `--cwd`, the rules that apply there (a trusted project's own rules
too). `remove` takes a rule as listed; only the user config's rules can be removed (the
others are marked read-only). Exit codes: 0 done, 1 error, 2 no such rule or bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from cody_protocol.extensions import PermissionRuleInfo

from .inert import json_document, one_line

__all__ = ["build_permissions_parser", "run_permissions"]


def build_permissions_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cody-client permissions",
        description="Permission rules: allow, ask and deny (docs/protocol.md, Approvals).",
    )
    parser.add_argument("action", nargs="?", default="list", choices=("list", "remove"))
    parser.add_argument("rule", nargs="?", help="the rule to remove, as listed")
    parser.add_argument("--cwd", default=None, help="list: only the rules that apply there")
    parser.add_argument("--decision", choices=("allow", "ask", "deny"), help="remove: which list")
    parser.add_argument("--project", default=None, help="remove: the rule's project")
    parser.add_argument("--json", action="store_true", help="list: one JSON object per line")
    return parser


def _line(info: PermissionRuleInfo) -> str:
    scope = f"  in {info.project}" if info.project else ""
    mark = "  (read-only)" if info.read_only else ""
    return one_line(f"{info.decision:5}  {info.rule}{scope}  [{info.source}]{mark}")


async def run_permissions(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    on_stderr: Callable[[str], None],
) -> int:
    from .client import RemoteError
    from .warm import open_daemon

    if args.action == "remove" and not args.rule:
        parser.error("permissions remove needs the rule, as listed")
    cwd = _absolute(args.cwd)
    try:
        async with open_daemon(on_stderr=on_stderr) as client:
            listed = await client.permissions(cwd)
            if args.action == "list":
                for warning in listed.warnings:
                    sys.stderr.write("cody-client: " + one_line(warning) + "\n")
                if args.json:
                    for info in listed.rules:
                        document = json.dumps(info.wire(), ensure_ascii=False)
                        sys.stdout.write(json_document(document) + "\n")
                elif not listed.rules:
                    sys.stdout.write("No permission rules.\n")
                else:
                    for info in listed.rules:
                        sys.stdout.write(_line(info) + "\n")
                return 0
            return await _remove(client, listed.rules, args)
    except RemoteError as exc:
        sys.stderr.write("cody-client: " + one_line(exc.message) + "\n")
        return 2 if exc.code == -32602 else 1


def _absolute(path: str | None) -> str | None:
    return os.path.abspath(path) if path else None


def _matching(
    rules: list[PermissionRuleInfo], rule: str, decision: str | None, project: str | None
) -> list[PermissionRuleInfo]:
    wanted = os.path.realpath(project) if project else None
    return [
        info
        for info in rules
        if info.rule == rule
        and (decision is None or info.decision == decision)
        and (wanted is None or os.path.realpath(info.project or "") == wanted)
    ]


async def _remove(client: object, rules: list[PermissionRuleInfo], args: argparse.Namespace) -> int:
    from .client import CodyClient

    assert isinstance(client, CodyClient)
    matches = _matching(rules, args.rule, args.decision, args.project)
    writable = [info for info in matches if not info.read_only]
    if not writable:
        where = f" ({_line(matches[0])})" if matches else ""
        sys.stderr.write(
            f"cody-client: no rule {one_line(args.rule)!r} in Cody's config to remove{where}\n"
        )
        return 2
    if len(writable) > 1:
        sys.stderr.write("cody-client: several rules match; add --decision or --project:\n")
        for info in writable:
            sys.stderr.write(f"  {_line(info)}\n")
        return 2
    [info] = writable
    if not await client.remove_permission(info):
        sys.stderr.write("cody-client: the rule was not found in the file any more\n")
        return 2
    sys.stdout.write(f"Removed {_line(info)}\n")
    return 0
