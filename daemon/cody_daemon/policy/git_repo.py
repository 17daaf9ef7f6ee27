"""Can a read-only git command run a program in this directory? (for the known-safe list)

A repository's own files can make `git status`, `git diff` or `git log` run programs:
`core.fsmonitor` (run by every command that reads the index), `diff.external`,
`diff.<driver>.textconv` / `.command` and `filter.<driver>.clean` (selected by a committed
`.gitattributes`), `core.pager`, `log.showSignature` with `gpg.program`, `include.path`
pulling in any other file, the `post-index-change` hook (run when `git status` refreshes the
index), and submodules (git runs itself inside each one, with *that* repository's
configuration). A cloned or downloaded repository is hostile, so `is_inert_for_git(cwd)` is
True only when every repository git could use from `cwd` is free of all of that:

- every directory from `cwd` up to `/` is looked at, as git's discovery does (`<dir>/.git`
  as a directory, a `gitdir:` file or a symlink; `<dir>` itself when it holds `HEAD`, i.e. a
  bare repository, including one embedded in a work tree). Git uses the nearest valid one;
  all of them are checked, so a decoy that git would skip cannot hide the real one;
- each repository's `config` (and `config.worktree`, and the common directory's for a linked
  work tree) may hold only keys from `_INERT_KEYS`, a list of settings that are data
  (repository format, remotes, branches, user name, colours, diff and status display...).
  Anything else, including every `include`, `filter`, driver, pager, hook or program
  setting, and anything the conservative parser does not fully understand (continuation
  lines, a key on a section line, config files over 64 KiB), makes the answer False;
- no `hooks/post-index-change`, no `modules/` directory, no `.gitmodules` in the work tree and
  no gitlink (submodule) entry in the index (the index is parsed; a split index, an unknown
  version, a damaged file or one over 64 MiB makes the answer False);
- `GIT_DIR`, `GIT_WORK_TREE` or `GIT_COMMON_DIR` in the environment: False (not followed).

`guarded_status_hazard(cwd)` answers a narrower question for agent CLIs that run git
themselves: what could make `git -c core.hooksPath=/dev/null -c core.fsmonitor=false status
--porcelain --ignore-submodules=dirty` (the Codex CLI's own command at every turn) run a
program here. With hooks and fsmonitor overridden and dirty submodules ignored (git then does
not run itself inside them), only filter drivers (`filter.<driver>.clean` / `.process`,
selected by `.gitattributes`) remain, or an `include` that could bring one in; a config file
the parser does not fully understand counts too.

System and global git configuration (`/etc/gitconfig`, `~/.gitconfig`) belong to the user
and are trusted. Known limit: the files are read when the call is decided; a process that
rewrites `.git/config` between that check and the command (none can under the sandbox,
which keeps `.git` read-only) is not seen.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..core.safe_read import FileTooLarge, read_regular

__all__ = ["git_may_run_programs", "guarded_status_hazard", "is_inert_for_git"]

_MAX_CONFIG_BYTES: Final = 64 * 1024
_MAX_GITFILE_BYTES: Final = 4096
_MAX_INDEX_BYTES: Final = 64 * 1024 * 1024
_REDIRECTING_ENV: Final = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")


def is_inert_for_git(cwd: Path, env: Mapping[str, str]) -> bool:
    """True when no repository git could use from `cwd` can make it run a program."""
    if any(env.get(name) for name in _REDIRECTING_ENV):
        return False
    try:
        start = Path(os.path.realpath(cwd))
        return all(_repository_inert(repo) for repo in _candidates(start))
    except (OSError, ValueError):
        return False


def git_may_run_programs(
    commands: Iterable[Sequence[str]], cwd: Path, env: Mapping[str, str]
) -> bool:
    """Whether one of `commands` (simple commands, as words) runs git where a repository's
    own configuration could make it run a program (in `cwd`, or a `-C` directory). A
    permission rule's allow does not apply to such a command (docs/protocol.md, "Permission
    rules"): the user allowed a read of the repository, not what the repository runs."""
    for words in commands:
        if not words or os.path.basename(words[0]) != "git":
            continue
        places = [cwd] + [
            cwd / value for flag, value in zip(words[1:], words[2:], strict=False) if flag == "-C"
        ]
        if not all(is_inert_for_git(place, env) for place in places):
            return True
    return False


def guarded_status_hazard(cwd: Path, env: Mapping[str, str]) -> str | None:
    """Why the guarded `git status` of the module docstring could run a program in `cwd`
    (naming the setting and its file), or None when it cannot."""
    for name in _REDIRECTING_ENV:
        if env.get(name):
            return f"{name} is set in the environment"
    try:
        start = Path(os.path.realpath(cwd))
        for repo in _candidates(start):
            hazard = _status_hazard(repo)
            if hazard is not None:
                return hazard
    except (OSError, ValueError) as exc:
        return f"a git repository here cannot be checked ({exc})"
    return None


def _status_hazard(repo: _Repo) -> str | None:
    for config in _config_files(repo):
        entries = _config_entries(config)
        if entries is None:
            return f"{config} cannot be fully parsed"
        for key, _value in entries:
            if key.startswith(("filter.", "include.", "includeif.")):
                return f"{key} in {config}"
    return None


# --- discovery -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Repo:
    git_dir: Path
    work_tree: Path | None


def _candidates(start: Path) -> Iterator[_Repo]:
    """Every repository git's discovery could pick from `start` (nearest first).

    Raises ValueError for a `.git` entry that cannot be understood.
    """
    directory = start
    while True:
        dot_git = directory / ".git"
        if os.path.lexists(dot_git):
            yield _Repo(_resolve_dot_git(dot_git), directory)
        if os.path.lexists(directory / "HEAD"):
            yield _Repo(directory, None)
        if directory.parent == directory:
            return
        directory = directory.parent


def _resolve_dot_git(dot_git: Path) -> Path:
    if dot_git.is_dir():
        return Path(os.path.realpath(dot_git))
    if not dot_git.is_file():
        raise ValueError(f"{dot_git} is neither a directory nor a file")
    target = _read_small(dot_git, _MAX_GITFILE_BYTES).decode("utf-8").strip()
    if not target.startswith("gitdir:"):
        raise ValueError(f"{dot_git} is not a gitdir: file")
    return Path(os.path.realpath(dot_git.parent / target.removeprefix("gitdir:").strip()))


def _read_small(path: Path, limit: int) -> bytes:
    """A regular file's bytes (a FIFO or a device is an OSError, never a hang)."""
    try:
        return read_regular(path, limit)
    except FileTooLarge:
        raise ValueError(f"{path} is larger than {limit} bytes") from None


# --- one repository ----------------------------------------------------------------------------


def _common_dir(git_dir: Path) -> Path:
    commondir_file = git_dir / "commondir"
    if not os.path.lexists(commondir_file):
        return git_dir
    target = _read_small(commondir_file, _MAX_GITFILE_BYTES).decode("utf-8").strip()
    return Path(os.path.realpath(git_dir / target))


def _config_files(repo: _Repo) -> list[Path]:
    """The repository's own config files git reads (shared, and per work tree)."""
    common = _common_dir(repo.git_dir)
    return list(
        dict.fromkeys(
            [common / "config", common / "config.worktree", repo.git_dir / "config.worktree"]
        )
    )


def _repository_inert(repo: _Repo) -> bool:
    git_dir = repo.git_dir
    common = _common_dir(git_dir)
    hash_size = 20
    for config in _config_files(repo):
        entries = _config_entries(config)
        if entries is None:
            return False
        for key, value in entries:
            if not _inert_key(key):
                return False
            if key == "extensions.objectformat":
                hash_size = 32 if value.lower() == "sha256" else 20
    for directory in dict.fromkeys([common, git_dir]):
        if os.path.lexists(directory / "hooks" / "post-index-change"):
            return False
        if os.path.lexists(directory / "modules"):
            return False
    if repo.work_tree is not None and os.path.lexists(repo.work_tree / ".gitmodules"):
        return False
    index = git_dir / "index"
    return not os.path.lexists(index) or _index_has_no_gitlinks(index, hash_size)


# --- configuration files -----------------------------------------------------------------------

_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]\s*(?:[#;].*)?$')
_ENTRY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$")


def _config_entries(path: Path) -> list[tuple[str, str]] | None:
    """`(section[.subsection].name, raw value)` of every entry; [] when the file is absent;
    None when the file cannot be read or holds anything this parser does not fully understand.

    Section and key names are lower-cased (git compares them case-insensitively), the
    subsection of `[section "sub"]` is kept as written.
    """
    if not os.path.lexists(path):
        return []
    try:
        if not path.is_file():
            return None
        text = _read_small(path, _MAX_CONFIG_BYTES).decode("utf-8")
    except (OSError, ValueError):
        return None
    text = text.removeprefix("\ufeff")
    section: str | None = None
    entries: list[tuple[str, str]] = []
    for raw in text.split("\n"):
        line = raw.removesuffix("\r").strip(" \t")
        if not line or line[0] in "#;":
            continue
        if line.endswith("\\") or "\r" in line or "\0" in line:
            return None  # continuation lines (and stray control characters) are not parsed
        if line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                return None
            name, sub = match.group(1).lower(), match.group(2)
            section = name if sub is None else f"{name}.{sub}"
            continue
        match = _ENTRY.match(line)
        if match is None or section is None:
            return None
        value = (match.group(2) or "").split("#", 1)[0].split(";", 1)[0].strip().strip('"')
        entries.append((f"{section}.{match.group(1).lower()}", value))
    return entries


_PLAIN: Final[dict[str, frozenset[str]]] = {
    "core": frozenset(
        {
            "repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
            "precomposeunicode", "symlinks", "autocrlf", "eol", "safecrlf", "checkstat",
            "trustctime", "quotepath", "abbrev", "compression", "loosecompression",
            "bigfilethreshold", "untrackedcache", "commentchar", "commentstring", "whitespace",
            "preloadindex", "multipackindex", "commitgraph", "warnambiguousrefs",
            "sharedrepository", "sparsecheckout", "sparsecheckoutcone", "fsync",
            "fsyncmethod", "protecthfs", "protectntfs", "longpaths",
        }
    ),
    "extensions": frozenset({"objectformat", "worktreeconfig", "noop", "refstorage"}),
    "user": frozenset({"name", "email"}),
    "init": frozenset({"defaultbranch"}),
    "pull": frozenset({"rebase", "ff"}),
    "push": frozenset({"default", "autosetupremote", "followtags"}),
    "fetch": frozenset({"prune", "prunetags", "writecommitgraph"}),
    "diff": frozenset(
        {
            "renames", "algorithm", "mnemonicprefix", "noprefix", "indentheuristic", "context",
            "interhunkcontext", "relative", "colormoved", "colormovedws", "wserrorhighlight",
            "statgraphwidth", "statnamewidth", "dirstat", "renamelimit",
            "suppressblankempty",
        }
    ),
    "status": frozenset(
        {
            "showuntrackedfiles", "short", "branch", "relativepaths", "aheadbehind", "renames",
            "renamelimit", "showstash", "displaycommentprefix",
        }
    ),
    "log": frozenset(
        {
            "date", "decorate", "abbrevcommit", "follow", "graphcolors", "showroot",
            "initialdecorationset", "excludedecoration", "mailmap", "diffmerges",
        }
    ),
    "merge": frozenset({"ff", "conflictstyle", "renames", "log", "summary"}),
    "rebase": frozenset({"autosquash", "autostash", "updaterefs"}),
    "index": frozenset({"version", "skiphash", "sparse"}),
    "feature": frozenset({"manyfiles", "experimental"}),
    "blame": frozenset(
        {"coloring", "date", "showemail", "showroot", "blankboundary", "ignorerevsfile"}
    ),
    "rerere": frozenset({"enabled", "autoupdate"}),
    "tag": frozenset({"sort"}),
    "versionsort": frozenset({"suffix"}),
    "i18n": frozenset({"commitencoding", "logoutputencoding"}),
    "column": frozenset({"ui", "branch", "status", "tag", "clean"}),
}  # fmt: skip
"""`section.name` keys without a subsection whose values are data, never a program."""

_WITH_SUBSECTION: Final[dict[str, frozenset[str] | None]] = {
    "remote": frozenset(
        {
            "url", "pushurl", "fetch", "push", "tagopt", "prune", "prunetags", "mirror",
            "skipdefaultupdate", "skipfetchall", "promisor", "partialclonefilter",
        }
    ),
    "branch": frozenset({"remote", "pushremote", "merge", "rebase", "description"}),
    "submodule": frozenset({"url", "active", "branch", "ignore", "fetchrecursesubmodules"}),
    "color": None,
}  # fmt: skip
"""`section.<sub>.name` keys that are data (None: every name)."""

_WHOLE_SECTIONS: Final = frozenset({"alias", "advice", "color", "lfs", "pretty"})
"""Sections whose every key is data for the read-only git commands. (`alias`: git never
lets an alias replace a built-in command such as `status`, so aliases cannot reach them.)"""


def _inert_key(key: str) -> bool:
    section, _, rest = key.partition(".")
    if section in _WHOLE_SECTIONS:
        return True
    if "." not in rest:
        return rest in _PLAIN.get(section, frozenset())
    if section not in _WITH_SUBSECTION:
        return False
    names = _WITH_SUBSECTION[section]
    name = rest.rsplit(".", 1)[1]
    return names is None or name in names


# --- the index -----------------------------------------------------------------------------------

_GITLINK: Final = 0o160000
_MODE_TYPE: Final = 0o170000
_EXTENDED: Final = 0x4000


def _index_has_no_gitlinks(path: Path, hash_size: int) -> bool:
    """True when the index parses and lists no gitlink (submodule) entry.

    Format: https://git-scm.com/docs/index-format (versions 2, 3 and 4). A split index
    (`link` extension) keeps entries in another file: False.
    """
    try:
        data = _read_small(path, _MAX_INDEX_BYTES)
    except (OSError, ValueError):
        return False
    if len(data) < 12 + hash_size or data[:4] != b"DIRC":
        return False
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        return False
    end = len(data) - hash_size
    pos = 12
    fixed = 40 + hash_size + 2  # stat data, mode ... size, object name, flags
    for _ in range(count):
        if pos + fixed > end:
            return False
        (mode,) = struct.unpack_from(">I", data, pos + 24)
        if mode & _MODE_TYPE == _GITLINK:
            return False
        (flags,) = struct.unpack_from(">H", data, pos + 40 + hash_size)
        name = pos + fixed
        if flags & _EXTENDED:
            if version < 3:
                return False
            name += 2
        if version == 4:
            while name < end and data[name] & 0x80:  # the prefix-strip varint
                name += 1
            terminator = data.find(b"\0", name + 1, end)
            if terminator < 0:
                return False
            pos = terminator + 1
        else:
            terminator = data.find(b"\0", name, end)
            if terminator < 0:
                return False
            pos += (terminator - pos + 8) & ~7  # 1-8 NULs pad the entry to a multiple of 8
    while pos + 8 <= end:
        signature = data[pos : pos + 4]
        (size,) = struct.unpack_from(">I", data, pos + 4)
        if signature == b"link":
            return False
        pos += 8 + size
    return pos == end
