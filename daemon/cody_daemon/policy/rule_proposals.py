"""The allow rules an approval's `allow_project` option would save (docs/protocol.md "Approvals").

- `exec`: one rule per part of the command: its program and up to two subcommand words
  (`exec(npm run test:*)`, `exec(cargo test:*)`, `exec(make:*)`). A prefix that would cover
  a whole interpreter, shell or other runner of arbitrary code (`python3`, `bash`, `env`,
  `sudo`, `git`, `rm`, `xargs` ... as Codex refuses to suggest them) is replaced by the exact
  command, and so is a command led by a `VAR=value` assignment or given by a path. A command
  that cannot be split safely gets no proposal (no rule could allow it).
- file tools: the directory of each file, relative to the project (`writeFile(src/**)`),
  or absolute outside it (`writeFile(//tmp/out/**)`).
- `fetchUrl`: the host (`fetchUrl(domain:docs.rs)`); other tools: the tool's name.
Every proposal parses back (`rules.parse_rule`) into a rule that matches the call.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from ..core.tooling import ToolFacts
from .command_parts import CommandPart
from .commands import _ASSIGNMENT, system_program
from .rules import CommandSubject, PathSubject, RuleSubject, UrlSubject

__all__ = ["propose_rules"]

_SUBCOMMAND = re.compile(r"^[A-Za-z][A-Za-z0-9_:+-]*$")
_MAX_SUBCOMMANDS = 2
_TOO_BROAD = frozenset(
    {
        "python", "python3", "py", "pypy", "pypy3", "node", "deno", "bun", "perl", "ruby",
        "php", "lua", "osascript", "bash", "sh", "zsh", "dash", "fish", "ksh", "env", "sudo",
        "su", "doas", "git", "rm", "dd", "chmod", "chown", "xargs", "find", "nohup", "timeout",
        "nice", "time", "watch", "exec", "eval", "source", "npx", "bunx", "uvx", "pnpx",
        "ssh", "scp", "rsync", "curl", "wget", "docker", "kubectl", "awk", "sed", "make",
        "command", "builtin",
    }
)  # fmt: skip
"""Programs whose one-word prefix would allow running nearly anything (Codex's
BANNED_PREFIX_SUGGESTIONS, plus runners and file destroyers): proposed with a subcommand or
as the exact command only."""


def propose_rules(
    tool: str, subject: RuleSubject, project_root: Path, facts: ToolFacts | None
) -> list[str] | None:
    """The rules (text) `allow_project` would add for this call, or None: none can be made.
    `facts`: what the tool declares (a tool that writes files gets `writeFile(dir/**)`
    rules, which cover every such tool); None: a tool Cody does not know."""
    if tool == "exec":
        if not isinstance(subject, CommandSubject) or subject.parts is None:
            return None
        proposed = [_command_rule(part) for part in subject.parts]
        if any(rule is None for rule in proposed):
            return None
        return list(dict.fromkeys(rule for rule in proposed if rule is not None))
    if facts is not None and facts.files == "write":
        if not isinstance(subject, PathSubject) or not subject.paths:
            return None
        rules = [_directory_rule(path.parent, project_root) for path in subject.paths]
        if any(rule is None for rule in rules):
            return None
        return list(dict.fromkeys(rule for rule in rules if rule is not None))
    if tool == "fetchUrl":
        if not isinstance(subject, UrlSubject) or not subject.host:
            return None
        return [f"fetchUrl(domain:{subject.host.lower()})"]
    return [tool]


def _command_rule(part: CommandPart) -> str | None:
    if not part.words or part.dynamic[0]:
        return None
    program = system_program(part.words[0])
    if program is None or program != part.words[0] or _ASSIGNMENT.match(program):
        return _exact(part)  # a path or an environment change: only this very command
    prefix = [program]
    for word, dynamic in zip(part.words[1:], part.dynamic[1:], strict=True):
        if dynamic or len(prefix) > _MAX_SUBCOMMANDS or not _SUBCOMMAND.match(word):
            break
        prefix.append(word)
    if len(prefix) == 1 and program in _TOO_BROAD:
        return _exact(part)
    return f"exec({shlex.join(prefix)}:*)"


def _exact(part: CommandPart) -> str | None:
    if any(part.dynamic) or any("*" in word for word in part.words):
        return None
    return f"exec({shlex.join(part.words)})"


def _directory_rule(directory: Path, project_root: Path) -> str | None:
    real = os.path.realpath(directory)
    root = os.path.realpath(project_root)
    if any(char in real for char in "*?()\n"):
        return None
    if real == root:
        return "writeFile(./**)"
    if real.startswith(root.rstrip("/") + "/"):
        return f"writeFile(./{os.path.relpath(real, root)}/**)"
    return f"writeFile(/{real}/**)"
