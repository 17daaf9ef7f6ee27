"""The known-safe command list: what approval policy `untrusted` runs without asking.

Invariant: `is_known_safe` returns True only for commands that can neither write anything nor
run a program other than themselves, whatever the files, configuration and environment they
meet; anything it cannot fully understand is unsafe (the user is asked). So:

- Shell strings are parsed by a small lexer that keeps track of quoting, so every operator,
  redirection, substitution and expansion is seen as the shell would see it; any
  redirection, substitution, subshell, background job or assignment makes a string unsafe.
- `VAR=value` prefixes and `env` with arguments are never safe (`PATH`, `GIT_*`, `PAGER`,
  `LD_PRELOAD`, `BASH_ENV` ... change what runs); a program given by a path outside the
  system bin directories is the workspace's own and never safe. (The exec tool also refuses
  to call anything known-safe while `PATH` holds a relative directory.)
- Options that write or run programs are refused per command: `find -exec/-ok/-delete/
  -fprint*/-fls`, `rg --pre/--search-zip/-z/--hostname-bin`, `sort -o/--compress-program`,
  `tree -o/-R`, `file -C`, `date -s`, `uniq IN OUT`, `sed` beyond `sed -n <N>p FILE`, git's
  `-c`/`--exec-path`/`--git-dir`/`--output`/`--ext-diff`. Commands whose job is to run or
  page other programs (`xargs`, `env CMD`, `awk`, `less`, `man`, `tar`, ...) are not listed.
- git reads a repository's own configuration, hooks and submodules, which a cloned
  repository controls (`core.fsmonitor` runs on `git status`, `diff.external` on
  `git diff`, textconv drivers, pagers, `include.path` ...). A git command is known-safe
  only when `git_repo.is_inert_for_git` finds every repository git could use from the
  command's directory (after `-C`) free of anything that runs a program; otherwise the user
  is asked. Without a directory to check, git is never known-safe.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .commands import (
    _ASSIGNMENT,
    _SHELL_FLAG,
    _SHELLS,
    _commands,
    _Unsafe,
    _Word,
    system_program,
)
from .git_repo import is_inert_for_git

__all__ = ["is_known_safe"]


# --- the known-safe list -------------------------------------------------------------------


def is_known_safe(
    command: list[str] | str, *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """True only for commands that are read-only (policy `untrusted` runs them unasked).

    An argv list runs without a shell, so its words are taken literally (a `bash -c` argv is
    judged by its script). A shell string is safe only when every command joined by `&&`,
    `||`, `;` or `|` is safe and it uses no redirection, substitution, subshell, background
    job or variable assignment. `cwd` is where the command runs and `env` its environment:
    git commands are checked against the repositories found from there.
    """
    where = _Where(cwd, os.environ if env is None else env)
    if isinstance(command, str):
        return _script_safe(command, 0, where)
    return _argv_safe([_Word(word) for word in command], 0, where)


@dataclass(frozen=True, slots=True)
class _Where:
    cwd: Path | None
    env: Mapping[str, str]


_MAX_DEPTH = 4
"""How many nested `bash -c` levels are considered before giving up."""


def _script_safe(script: str, depth: int, where: _Where) -> bool:
    if depth > _MAX_DEPTH:
        return False
    try:
        commands = _commands(script)
    except _Unsafe:
        return False
    return bool(commands) and all(_argv_safe(words, depth, where) for words in commands)


def _argv_safe(words: list[_Word], depth: int, where: _Where) -> bool:
    if not words or words[0].dynamic:
        return False
    if _ASSIGNMENT.match(words[0].text):
        return False  # `VAR=value cmd`: the variable may change what cmd runs (PAGER, ...)
    name = system_program(words[0].text)
    if name is None:
        return False
    args = words[1:]
    if name in _SHELLS:
        if len(args) == 2 and not args[1].dynamic and _SHELL_FLAG.match(args[0].text):
            return _script_safe(args[1].text, depth + 1, where)
        return False
    if name in _ALWAYS_SAFE:
        return True
    if any(arg.dynamic for arg in args):
        return False  # an expansion could turn into an option (`-delete`, `-o`, ...)
    texts = [arg.text for arg in args]
    if name == "git":
        return _git_safe(texts, where)
    check = _CHECKED.get(name)
    return check is not None and check(texts)


_ALWAYS_SAFE = frozenset(
    {
        "ls", "cat", "pwd", "echo", "head", "tail", "wc", "nl", "grep", "which", "whoami",
        "id", "uname", "stat", "true", "false", "tr", "cut", "diff", "du", "df", "basename",
        "dirname", "realpath", "readlink", "printenv",
    }
)  # fmt: skip
"""Commands with no option that writes files or runs programs."""


def _short_flags(arg: str, takes_value: str) -> str:
    """The flag letters of a short-option cluster (`-rn` -> "rn"), up to a value-taking one."""
    if not arg.startswith("-") or arg.startswith("--") or arg == "-":
        return ""
    letters = []
    for letter in arg[1:]:
        letters.append(letter)
        if letter in takes_value:
            break
    return "".join(letters)


def _no_long(args: list[str], *unsafe: str, abbreviations: bool = True) -> bool:
    """True when no argument is one of the `unsafe` long options.

    With `abbreviations` (getopt_long, git), any unambiguous-looking prefix such as `--out`
    for `--output` counts too, and so does an option that merely starts with an unsafe name.
    """
    for arg in args:
        if not arg.startswith("--") or arg == "--":
            continue
        name = arg.split("=", 1)[0]
        if name in unsafe:
            return False
        if abbreviations and any(
            name.startswith(opt) or (len(name) > 2 and opt.startswith(name)) for opt in unsafe
        ):
            return False
    return True


def _env_safe(args: list[str]) -> bool:
    return not args  # `env` alone prints the environment


_FIND_UNSAFE = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls")


def _find_safe(args: list[str]) -> bool:
    return not any(arg.startswith(_FIND_UNSAFE) for arg in args)


def _rg_safe(args: list[str]) -> bool:
    # --pre runs a preprocessor, -z/--search-zip decompression programs, --hostname-bin a
    # program that prints the host name (for hyperlinks). ripgrep takes no abbreviations.
    unsafe = ("--pre", "--pre-glob", "--search-zip", "--hostname-bin")
    if not _no_long(args, *unsafe, abbreviations=False):
        return False
    return not any("z" in _short_flags(arg, "ABCEMdefgjmrtT") for arg in args)


def _sort_safe(args: list[str]) -> bool:
    if not _no_long(args, "--output", "--compress-program"):
        return False
    return not any("o" in _short_flags(arg, "kStTo") for arg in args)


def _tree_safe(args: list[str]) -> bool:
    # -o FILE writes the listing; -R reruns tree with `-o 00Tree.html` in every directory.
    if not _no_long(args, "--output"):
        return False
    # tree reads option values from the next words, so every letter of a cluster is a flag.
    return not any(set(_short_flags(arg, "")) & {"o", "R"} for arg in args)


def _file_safe(args: list[str]) -> bool:
    if not _no_long(args, "--compile"):
        return False  # -C / --compile writes a compiled magic file
    return not any("C" in _short_flags(arg, "efFmP") for arg in args)


_DATE_FLAGS = frozenset({"-u", "--utc", "--universal", "-R", "--rfc-email", "-I"})


def _date_safe(args: list[str]) -> bool:
    """Printing only: `-s`/`--set` and a bare `MMDDhhmm` operand set the clock."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-d", "--date", "-r", "--reference"):
            i += 2
            continue
        ok = (
            arg.startswith("+")
            or arg in _DATE_FLAGS
            or arg.startswith(("--date=", "--reference=", "--iso-8601", "--rfc-3339=", "-I"))
        )
        if not ok:
            return False
        i += 1
    return True


def _uniq_safe(args: list[str]) -> bool:
    """`uniq IN OUT` writes OUT: at most one operand."""
    operands = 0
    i = 0
    only_operands = False
    while i < len(args):
        arg = args[i]
        if only_operands or arg == "-" or not arg.startswith("-"):
            operands += 1
        elif arg == "--":
            only_operands = True
        elif arg in ("-f", "-s", "-w"):
            i += 1
        i += 1
    return operands <= 1


_SED_PRINT = re.compile(r"^[0-9]+(,[0-9]+)?p$")


def _sed_safe(args: list[str]) -> bool:
    """Only `sed -n <N>p FILE` / `sed -n <N,M>p FILE`."""
    return (
        len(args) == 3
        and args[0] == "-n"
        and _SED_PRINT.match(args[1]) is not None
        and not args[2].startswith("-")
    )


_GIT_READ_ONLY = frozenset(
    {"status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe"}
)
_GIT_UNSAFE_LONG = ("--output", "--ext-diff")


def _git_safe(args: list[str], where: _Where) -> bool:
    directory = where.cwd
    i = 0
    while i < len(args) and args[i].startswith("-"):  # global options before the subcommand
        if args[i] == "-C" and i + 1 < len(args):
            directory = None if directory is None else directory / args[i + 1]
            i += 2
        elif args[i] in ("--no-pager", "-P", "--no-optional-locks"):
            i += 1
        else:
            return False  # -c, --exec-path, --git-dir, ... can run or redirect anything
    if i >= len(args):
        return False
    sub, rest = args[i], args[i + 1 :]
    if not _no_long(rest, *_GIT_UNSAFE_LONG):
        return False
    if sub in _GIT_READ_ONLY:
        read_only = True
    elif sub == "branch":
        read_only = _git_branch_safe(rest)
    elif sub == "tag":
        read_only = _git_tag_safe(rest)
    elif sub == "remote":
        read_only = rest in ([], ["-v"], ["--verbose"])
    else:
        read_only = False
    # Last, as it reads files: the repository must not be able to make git run a program.
    return read_only and directory is not None and is_inert_for_git(directory, where.env)


_BRANCH_FLAGS = frozenset(
    {
        "-a", "--all", "-r", "--remotes", "-l", "--list", "-v", "-vv", "--verbose",
        "--show-current", "--color", "--no-color", "--column", "--no-column", "-i",
        "--ignore-case", "--omit-empty",
    }
)  # fmt: skip
_BRANCH_VALUE_FLAGS = ("--contains", "--no-contains", "--merged", "--no-merged", "--points-at")
_LISTING_VALUE_FLAGS = (*_BRANCH_VALUE_FLAGS, "--sort", "--format", "--color", "--column")


def _git_branch_safe(args: list[str]) -> bool:
    """Listing only: no -d/-D/-m/-M/-c/-C/-u/-f, and no bare name (which creates a branch)."""
    listing = any(arg in ("-l", "--list") for arg in args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _BRANCH_VALUE_FLAGS:
            i += 2
            continue
        if arg in _BRANCH_FLAGS or arg.startswith(tuple(f"{f}=" for f in _LISTING_VALUE_FLAGS)):
            i += 1
            continue
        if arg.startswith("-") or not listing:
            return False
        i += 1  # a pattern for --list
    return True


def _git_tag_safe(args: list[str]) -> bool:
    """Listing only: `git tag` alone, or `git tag -l|--list [options] [patterns]`."""
    if not args:
        return True
    if args[0] not in ("-l", "--list"):
        return False
    i = 1
    while i < len(args):
        arg = args[i]
        if arg in _BRANCH_VALUE_FLAGS:
            i += 2
            continue
        if (
            arg in ("-i", "--ignore-case", "--color", "--no-color", "--column", "--no-column")
            or re.fullmatch(r"-n[0-9]*", arg)
            or arg.startswith(tuple(f"{f}=" for f in _LISTING_VALUE_FLAGS))
            or not arg.startswith("-")
        ):
            i += 1
            continue
        return False
    return True


_CHECKED: dict[str, Callable[[list[str]], bool]] = {
    "env": _env_safe,
    "find": _find_safe,
    "rg": _rg_safe,
    "sort": _sort_safe,
    "tree": _tree_safe,
    "file": _file_safe,
    "date": _date_safe,
    "uniq": _uniq_safe,
    "sed": _sed_safe,
}
"""Commands that are read-only unless given particular options (checked per command; git,
which also depends on the repository, is checked by `_git_safe`)."""
