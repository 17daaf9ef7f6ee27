"""Permission rules: `allow` / `ask` / `deny`, in Claude Code's syntax with Cody's tool names.

    exec(npm run test:*)   writeFile(src/**)   readFile(./.env)   fetchUrl(domain:docs.rs)
    mcp__github__delete_repo   mcp__github (every tool of that server)   webSearch

`Bash(...)`, `Edit(...)`, `Write(...)`, `Read(...)`, `WebFetch(...)` and the other Claude Code
names are aliases, so a user can paste theirs. Invariants:

- deny > ask > allow: any matching deny rule refuses, else any matching ask rule asks, else
  allow rules allow; the order of the rules and their specificity do not matter.
- Commands match the same normalised argv as grant keys (command_parts.py): `exec(git
  diff:*)` matches `git diff` and `git diff HEAD`, never `gitx`, `FOO=1 git diff`,
  `./git diff` or `git diff; rm x`. A compound command is allowed only when every part is
  allowed; a command that cannot be split safely is never allowed by a rule (a bare `exec`
  included). Deny and ask rules are matched against every part and every loose part
  (`loose_parts`: after assignments and wrappers, inside substitutions).
- A command rule ends with `:*` (or ` *`) for a prefix; otherwise it is the exact command.
  A `*` elsewhere is a glob over the command text, for deny and ask rules only: in an
  allow rule it would allow far more than it reads (`git * main` allows `git push`).
- Path rules follow gitignore: `//abs`, `~/home`, `/from-the-project-root`, `./rel` or
  `rel` (a pattern without a `/` matches at any depth); `*` within a name, `**` across
  directories; a pattern that names a directory covers everything below it. Paths are
  compared as real paths. `readFile` / `Read` rules apply to every tool that reads files
  (by its facts, `ToolFacts.files == "read"`: readFile, listDir, grepFiles, fileSearch,
  symbols; the paths each says it reads, not every file a search passes); `writeFile`,
  `applyPatch` and `Edit` rules to every tool that writes files (`files == "write"`). A
  tool's own name still matches its rules (`listDir(...)` covers listDir only).
- A rule limited to a project (`project`) applies only to commands run inside it; its
  relative paths start at the project root.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.tooling import FileAccess, ToolFacts
from .command_parts import CommandPart
from .commands import system_program

__all__ = [
    "CommandSubject",
    "PathSubject",
    "Rule",
    "RuleDecision",
    "RuleError",
    "RuleSet",
    "RuleSubject",
    "RuleVerdict",
    "UrlSubject",
    "allow_rule_void",
    "parse_rule",
    "subject_from_grant_key",
]

RuleDecision = Literal["allow", "ask", "deny"]
_Kind = Literal["bare", "command", "path", "domain", "mcp"]

_EDITS: dict[str, str] = {
    "writeFile": "writeFile",
    "Write": "writeFile",
    "applyPatch": "applyPatch",
    "Edit": "applyPatch",
    "MultiEdit": "applyPatch",
    "NotebookEdit": "applyPatch",
}
_TOOLS: dict[str, tuple[frozenset[str], _Kind, FileAccess | None]] = {
    "exec": (frozenset({"exec"}), "command", None),
    "Bash": (frozenset({"exec"}), "command", None),
    **{name: (frozenset({cody}), "path", "write") for name, cody in _EDITS.items()},
    "readFile": (frozenset({"readFile"}), "path", "read"),
    "Read": (frozenset({"readFile"}), "path", "read"),
    "listDir": (frozenset({"listDir"}), "path", None),
    "LS": (frozenset({"listDir"}), "path", None),
    "grepFiles": (frozenset({"grepFiles"}), "path", None),
    "Grep": (frozenset({"grepFiles"}), "path", None),
    "fileSearch": (frozenset({"fileSearch"}), "path", None),
    "Glob": (frozenset({"fileSearch"}), "path", None),
    "fetchUrl": (frozenset({"fetchUrl"}), "domain", None),
    "WebFetch": (frozenset({"fetchUrl"}), "domain", None),
    "webSearch": (frozenset({"webSearch"}), "bare", None),
    "WebSearch": (frozenset({"webSearch"}), "bare", None),
    "perplexitySearch": (frozenset({"perplexitySearch"}), "bare", None),
    "updatePlan": (frozenset({"updatePlan"}), "bare", None),
    "readMcpResource": (frozenset({"readMcpResource"}), "bare", None),
}
"""Rule tool name (Cody's, or Claude Code's alias) -> the Cody tools it names, how its
specifier matches, and which tools it covers by their facts (`read`: every tool that reads
files; `write`: every tool that writes them). The names are the rules' vocabulary (what a
user writes, and Claude Code's spellings of it: `Edit` is applyPatch), not lists of what
tools can do."""

_RULE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)(?:\((.*)\))?$", re.DOTALL)
MAX_RULE_CHARS = 4096


class RuleError(ValueError):
    """The rule text is not understood; the message says why."""


@dataclass(frozen=True, slots=True)
class CommandSubject:
    parts: tuple[CommandPart, ...] | None
    """The exact parts (None: cannot be split safely, so no allow rule matches)."""
    loose: tuple[tuple[str, ...], ...]
    """Every run of words that might be a command (for deny and ask rules)."""
    cwd: Path


@dataclass(frozen=True, slots=True)
class PathSubject:
    paths: tuple[Path, ...]
    """Real paths."""


@dataclass(frozen=True, slots=True)
class UrlSubject:
    host: str


RuleSubject = CommandSubject | PathSubject | UrlSubject | None


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    decision: RuleDecision
    source: str
    """The file it comes from."""
    tools: frozenset[str]
    kind: _Kind
    files: FileAccess | None = None
    """It also covers every tool whose facts say it reads (`read`) or writes (`write`)
    files."""
    project: str | None = None
    """The real path of the project it is limited to, if any."""
    read_only: bool = False
    """From a file Cody never writes (Codex rules, Claude Code settings, a project's config)."""
    words: tuple[str, ...] = ()
    prefix: bool = False
    any_command: bool = False
    glob: re.Pattern[str] | None = None
    path: re.Pattern[str] | None = None
    domain: str | None = None
    mcp: str | None = None
    """`mcp__server__` (a prefix, for a whole server) or a tool's full name."""

    def describe(self) -> str:
        """`exec(git diff:*)` (deny) from /home/u/.config/cody/config.toml [project /p]."""
        scope = f" [project {self.project}]" if self.project else ""
        return f"`{self.text}` ({self.decision}) from {self.source}{scope}"


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    decision: RuleDecision
    rules: tuple[Rule, ...]
    """The rule that decided (for an allowed compound command: one per part)."""

    def describe(self) -> str:
        return "; ".join(rule.describe() for rule in dict.fromkeys(self.rules))


def parse_rule(
    text: str,
    decision: RuleDecision,
    *,
    source: str,
    base: Path,
    home: Path,
    project: str | None = None,
    read_only: bool = False,
) -> Rule:
    """One rule; raises RuleError. `base`: where relative paths start (the project root, or
    the session's workspace); `home`: what `~` means."""
    if len(text) > MAX_RULE_CHARS:
        raise RuleError(f"longer than {MAX_RULE_CHARS} characters")
    match = _RULE.match(text.strip())
    if match is None:
        raise RuleError("not `Tool` or `Tool(specifier)`")
    name, spec = match.group(1), match.group(2)
    common: dict[str, Any] = {"text": text.strip(), "decision": decision, "source": source}
    common |= {"project": project, "read_only": read_only}
    if name.startswith("mcp__"):
        if spec is not None:
            raise RuleError("an MCP rule names a server or a tool, without parentheses")
        server_only = name.count("__") == 1 or name.endswith("__*")
        target = name.removesuffix("*") if name.endswith("__*") else name
        mcp = target if not server_only or target.endswith("__") else target + "__"
        return Rule(tools=frozenset(), kind="mcp", mcp=mcp, **common)
    known = _TOOLS.get(name)
    if known is None:
        raise RuleError(f"unknown tool {name!r} (Cody's tools, their Claude Code names, mcp__*)")
    tools, kind, files = known
    common["files"] = files
    if spec is None or (spec.strip() in ("", "*") and kind != "path"):
        return Rule(tools=tools, kind="bare", any_command=True, **common)
    spec = spec.strip()
    if kind == "bare":
        raise RuleError(f"{name} takes no specifier")
    if kind == "domain":
        if not spec.startswith("domain:") or not spec[7:].strip():
            raise RuleError("a fetch rule's specifier is `domain:<host>`")
        return Rule(tools=tools, kind=kind, domain=spec[7:].strip().lower(), **common)
    if kind == "path":
        return Rule(tools=tools, kind=kind, path=_path_pattern(spec, base, home), **common)
    return _command_rule(spec, tools, common)


def _command_rule(spec: str, tools: frozenset[str], common: dict[str, Any]) -> Rule:
    prefix = False
    body = spec
    if body.endswith(":*") or body.endswith(" *") and "*" not in body[:-2]:
        prefix, body = True, body[:-2]
    if "*" in body:
        if common["decision"] == "allow":
            raise RuleError(
                "a `*` before the end of an allow rule would allow much more than it reads; "
                "write the command's prefix with `:*` at the end"
            )
        pattern = ".*".join(re.escape(piece) for piece in spec.split("*"))
        return Rule(tools=tools, kind="command", glob=re.compile(pattern, re.DOTALL), **common)
    try:
        words = tuple(shlex.split(body))
    except ValueError as exc:
        raise RuleError(f"cannot split the command: {exc}") from None
    if not words:
        raise RuleError("the command is empty")
    return Rule(tools=tools, kind="command", words=words, prefix=prefix, **common)


def _path_pattern(spec: str, base: Path, home: Path) -> re.Pattern[str]:
    anywhere = False
    if spec.startswith("//"):
        root, rel = "/", spec[2:]
    elif spec == "~" or spec.startswith("~/"):
        root, rel = str(home), spec[2:]
    elif spec.startswith("/"):
        root, rel = str(base), spec[1:]
    elif spec.startswith("./"):
        root, rel = str(base), spec[2:]
    else:
        root, rel = str(base), spec
        anywhere = "/" not in spec.rstrip("/")
    rel = rel.strip("/")
    if ".." in rel.split("/"):
        joined = posixpath.normpath(posixpath.join(os.path.realpath(root), rel))
        root, rel = "/", joined.lstrip("/")
    real_root = os.path.realpath(root).rstrip("/")
    body = _glob_regex(rel) if rel else ""
    if anywhere:
        body = "(?:.*/)?" + body
    sep = "/" if body else ""
    return re.compile(re.escape(real_root) + sep + body + r"(?:/.*)?\Z", re.DOTALL)


def _glob_regex(glob: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(glob):
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif glob.startswith("**", index):
            out.append(".*")
            index += 2
        elif glob[index] == "*":
            out.append("[^/]*")
            index += 1
        elif glob[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(glob[index]))
            index += 1
    return "".join(out)


# -- matching ---------------------------------------------------------------------------------


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _program_matches(word: str, wanted: str, *, loose: bool) -> bool:
    if loose:
        return os.path.basename(word) == os.path.basename(wanted)
    if "/" in wanted:
        return word == wanted
    return system_program(word) == wanted


def _words_match(
    rule: Rule, words: tuple[str, ...], dynamic: tuple[bool, ...], loose: bool
) -> bool:
    if rule.any_command:
        return True
    if rule.glob is not None:
        return bool(rule.glob.fullmatch(shlex.join(words)))
    want = rule.words
    if len(words) < len(want) or (not rule.prefix and len(words) != len(want)):
        return False
    checked = len(want) if rule.prefix else len(words)
    if any(dynamic[:checked]):
        return False
    if not _program_matches(words[0], want[0], loose=loose):
        return False
    return words[1 : len(want)] == want[1:]


@dataclass(slots=True)
class RuleSet:
    rules: list[Rule] = field(default_factory=list)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def evaluate(
        self, tool: str, subject: RuleSubject, facts: ToolFacts | None
    ) -> RuleVerdict | None:
        """What the rules say about one call of `tool` (None: no rule matches). `facts`: what
        the tool declares (None: a tool Cody does not know, matched by its name only)."""
        relevant = [rule for rule in self.rules if _covers(rule, tool, facts)]
        if not relevant:
            return None
        for decision in ("deny", "ask"):
            for rule in relevant:
                if rule.decision == decision and _matches_any(rule, subject):
                    return RuleVerdict(decision, (rule,))
        allows = [rule for rule in relevant if rule.decision == "allow"]
        deciding = _allowed_by(allows, subject)
        return RuleVerdict("allow", deciding) if deciding else None


def _covers(rule: Rule, tool: str, facts: ToolFacts | None) -> bool:
    if rule.kind == "mcp":
        assert rule.mcp is not None
        return tool.startswith(rule.mcp) if rule.mcp.endswith("__") else tool == rule.mcp
    by_facts = rule.files is not None and facts is not None and facts.files == rule.files
    return tool in rule.tools or by_facts


def _in_scope(rule: Rule, subject: RuleSubject) -> bool:
    if rule.project is None or not isinstance(subject, CommandSubject):
        return True
    return _within(os.path.realpath(subject.cwd), rule.project)


def _matches_any(rule: Rule, subject: RuleSubject) -> bool:
    """Deny and ask rules: some part, loose part, path or host matches."""
    if not _in_scope(rule, subject):
        return False
    if rule.kind in ("bare", "mcp") or subject is None:
        return rule.kind in ("bare", "mcp")
    if isinstance(subject, CommandSubject):
        exact = [(p.words, p.dynamic) for p in subject.parts or ()]
        loose = [(words, (False,) * len(words)) for words in subject.loose]
        return any(_words_match(rule, w, d, loose=True) for w, d in [*exact, *loose])
    if isinstance(subject, PathSubject):
        assert rule.path is not None
        return any(rule.path.match(str(path)) for path in subject.paths)
    return _host_matches(rule, subject.host)


def _allowed_by(rules: list[Rule], subject: RuleSubject) -> tuple[Rule, ...]:
    """The allow rules that cover the whole call (one per part or path); empty: not allowed."""
    scoped = [rule for rule in rules if _in_scope(rule, subject)]
    if isinstance(subject, CommandSubject):
        if subject.parts is None:
            return ()
        deciding: list[Rule] = []
        for part in subject.parts:
            rule = next(
                (r for r in scoped if _words_match(r, part.words, part.dynamic, loose=False)),
                None,
            )
            if rule is None:
                return ()
            deciding.append(rule)
        return tuple(deciding)
    if isinstance(subject, PathSubject):
        chosen: list[Rule] = []
        for path in subject.paths:
            rule = next(
                (r for r in scoped if r.kind == "bare" or (r.path and r.path.match(str(path)))),
                None,
            )
            if rule is None:
                return ()
            chosen.append(rule)
        return tuple(chosen)
    for rule in scoped:
        if rule.kind in ("bare", "mcp") or (
            isinstance(subject, UrlSubject) and _host_matches(rule, subject.host)
        ):
            return (rule,)
    return ()


def _host_matches(rule: Rule, host: str) -> bool:
    if rule.domain is None:
        return rule.kind == "bare"
    host = host.lower().rstrip(".")
    if rule.domain.startswith("*."):
        return host.endswith(rule.domain[1:])
    return host == rule.domain


def subject_from_grant_key(key: tuple[str, ...], cwd: Path) -> RuleSubject:
    """The rule subject of a call known only by its grant key (an agent CLI's request):
    `exec` keys give the command (a redirection never counts as writable: Cody cannot tell
    which sandbox the CLI runs it in), `paths` keys the paths, `fetch` keys the host."""
    from .command_parts import loose_parts, split_command

    kind, rest = (key[0], key[1:]) if key else ("", ())
    if kind == "exec" and rest:
        if len(rest) > 3 and rest[0] == "cd" and rest[2] == "&&":
            cwd, rest = Path(rest[1]), rest[3:]
        parts = split_command(list(rest), cwd=cwd, may_write=lambda _path: False)
        return CommandSubject(parts, tuple(loose_parts(list(rest))), cwd)
    if kind == "paths" and rest:
        return PathSubject(tuple(Path(path) for path in rest))
    if kind == "fetch" and rest:
        import urllib.parse

        host = urllib.parse.urlsplit(rest[0]).hostname
        return UrlSubject(host) if host else None
    return None


def allow_rule_void(
    verdict: RuleVerdict | None, subject: RuleSubject, env: Mapping[str, str]
) -> str | None:
    """Why an allow `verdict` cannot allow this call (None: it can): a git command where the
    repository's own configuration could make git run a program, as for known-safe commands
    (policy/git_repo.py). Reads files: call it off the event loop."""
    if verdict is None or verdict.decision != "allow" or not isinstance(subject, CommandSubject):
        return None
    from .git_repo import git_may_run_programs

    commands = [part.words for part in subject.parts or ()]
    if git_may_run_programs(commands, subject.cwd, env):
        return "this repository's git configuration could make git run a program"
    return None
