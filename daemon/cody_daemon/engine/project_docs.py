"""Project instructions: the `AGENTS.md` files a session's model reads (README "Project
instructions").

What is read, in this order:
1. one global file, the first that exists of: `<Cody's config dir>/AGENTS.override.md`,
   `<Cody's config dir>/AGENTS.md` (`$CODY_HOME` when set), `$CODEX_HOME/AGENTS.override.md`,
   `$CODEX_HOME/AGENTS.md` (default `~/.codex`), `$CLAUDE_CONFIG_DIR/CLAUDE.md` (default
   `~/.claude`);
2. one file per directory from the project root (the nearest ancestor of the working
   directory, itself included, that holds a `.git`; else the working directory) down to the
   working directory: the first that exists of `AGENTS.override.md`, `AGENTS.md`, then the
   `project_doc_fallback_filenames` (default `CLAUDE.md`).
An empty or blank file counts as there (it reads as nothing: an empty `AGENTS.override.md`
silences the directory's `AGENTS.md`, as in Codex).

Invariants:
- the text is model input only: nothing here changes settings, tools or the sandbox;
- only regular files are read. A path is `lstat`ed first and opened with `O_NONBLOCK`, then
  checked again with `fstat`, so a FIFO, device or socket (or a symlink to one, such as
  `/dev/zero`) is never read from and never blocks;
- a project file that is a symlink is followed only when its target lies inside the project
  root; otherwise it is skipped with a note and its target is never opened (the resolved
  path is opened with `O_NOFOLLOW`, so a symlink swapped in after the check is refused).
  Global files are the user's own and may be symlinks anywhere (still regular files only);
- `max_bytes` caps the joined file text (headings and notes are not counted): each read asks
  for at most the remaining budget plus one byte; a file that does not fit is cut at a
  character boundary with a note saying where; the files after it are listed as left out.
  `max_bytes = 0` reads nothing at all (the global file included);
- a binary file (a NUL byte, or not UTF-8) or an unreadable one is skipped with a note.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from .prompt_files import render

__all__ = [
    "DEFAULT_FALLBACKS",
    "DEFAULT_MAX_BYTES",
    "DocFile",
    "ProjectDocs",
    "global_candidates",
    "project_root",
    "read_project_docs",
]

DEFAULT_MAX_BYTES: Final = 32 * 1024
"""Codex's `project_doc_max_bytes` default."""
DEFAULT_FALLBACKS: Final[tuple[str, ...]] = ("CLAUDE.md",)
OVERRIDE_NAME: Final = "AGENTS.override.md"
AGENTS_NAME: Final = "AGENTS.md"
_OPEN_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

Scope = Literal["global", "project"]


@dataclass(frozen=True, slots=True)
class DocFile:
    """One instructions file that was found (`_meta.cody.projectDocs` entry)."""

    path: str
    bytes: int
    """Bytes of the file the model receives (0 when skipped or left out by the cap)."""
    truncated: bool = False
    """Cut by `project_doc_max_bytes` (or left out entirely when `bytes` is 0)."""
    skipped: str | None = None
    """Why the file was not read (not text, a symlink out of the project, unreadable)."""
    scope: Scope = "project"

    def wire(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "bytes": self.bytes}
        out["truncated"] = self.truncated
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out


@dataclass(frozen=True, slots=True)
class ProjectDocs:
    """What was found for one session: the files, and the text the model receives ("" when
    there is nothing to send)."""

    files: tuple[DocFile, ...] = ()
    text: str = ""


@dataclass(slots=True)
class _Budget:
    remaining: int
    sections: list[str] = field(default_factory=list)
    files: list[DocFile] = field(default_factory=list)


def project_root(cwd: Path) -> Path:
    """The nearest ancestor of `cwd` (itself included) holding a `.git`; else `cwd`. A
    directory other users may write (`/tmp`) is never a project root: anyone could have put a
    `.git` there (the Codex CLI's sandbox leaves empty `.git` mount points in `/tmp`), which
    would make that shared directory's instruction files the project's."""
    probe = cwd
    while True:
        if os.path.lexists(probe / ".git") and not _shared(probe):
            return probe
        if probe.parent == probe:
            return cwd
        probe = probe.parent


def _shared(directory: Path) -> bool:
    """Other users may create files in `directory` (world-writable, like `/tmp`)."""
    try:
        return bool(os.stat(directory).st_mode & stat.S_IWOTH)
    except OSError:
        return False


def global_candidates(cody_config_dir: Path, codex_home: Path, claude_dir: Path) -> list[Path]:
    """Where the global file may be, in order (the first that exists is read)."""
    return [
        cody_config_dir / OVERRIDE_NAME,
        cody_config_dir / AGENTS_NAME,
        codex_home / OVERRIDE_NAME,
        codex_home / AGENTS_NAME,
        claude_dir / "CLAUDE.md",
    ]


def read_project_docs(
    cwd: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    fallbacks: Sequence[str] = DEFAULT_FALLBACKS,
    global_paths: Sequence[Path] = (),
) -> ProjectDocs:
    """The instructions for a session in `cwd` (blocking file I/O: a few `lstat`s per
    directory; run it off the event loop)."""
    if max_bytes <= 0:
        return ProjectDocs()
    real_cwd = Path(os.path.realpath(cwd))
    root = project_root(real_cwd)
    budget = _Budget(max_bytes)
    first = next((path for path in global_paths if os.path.lexists(path)), None)
    if first is not None:
        _read_one(first, budget, scope="global", root=None)
    names = _names(fallbacks)
    for directory in _chain(root, real_cwd):
        found = next((directory / n for n in names if os.path.lexists(directory / n)), None)
        if found is not None and _shared(directory):
            _skip(budget, str(found), "project", "in a directory other users can write")
        elif found is not None:
            _read_one(found, budget, scope="project", root=root)
    if not budget.files:
        return ProjectDocs()
    text = render("project_docs", cwd=str(real_cwd), files="\n\n".join(budget.sections))
    return ProjectDocs(files=tuple(budget.files), text=text)


def _names(fallbacks: Sequence[str]) -> list[str]:
    names = [OVERRIDE_NAME, AGENTS_NAME]
    for name in fallbacks:
        if name and name not in names:
            names.append(name)
    return names


def _chain(root: Path, cwd: Path) -> list[Path]:
    """The directories from `root` down to `cwd`, both included."""
    chain = [cwd]
    probe = cwd
    while probe not in (root, probe.parent):
        probe = probe.parent
        chain.append(probe)
    return list(reversed(chain))


def _read_one(path: Path, budget: _Budget, *, scope: Scope, root: Path | None) -> None:
    shown = str(path)
    target, problem = _target(path, root)
    if problem is not None:
        _skip(budget, shown, scope, problem)
        return
    if budget.remaining <= 0:
        budget.files.append(DocFile(shown, 0, truncated=True, scope=scope))
        budget.sections.append(_note(f"{shown} left out: project_doc_max_bytes was reached"))
        return
    try:
        data = _read_regular(target, budget.remaining + 1, follow=root is None)
    except _NotRegular:
        _skip(budget, shown, scope, "not a regular file")
        return
    except OSError as exc:
        _skip(budget, shown, scope, f"cannot be read: {exc.strerror or type(exc).__name__}")
        return
    truncated = len(data) > budget.remaining
    if truncated:
        data = data[: budget.remaining]
    if b"\0" in data:
        _skip(budget, shown, scope, "not text (binary)")
        return
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=not truncated)
    except UnicodeDecodeError:
        _skip(budget, shown, scope, "not UTF-8 text")
        return
    if not text.strip():
        return
    used = len(text.encode("utf-8"))
    budget.remaining -= used
    budget.files.append(DocFile(shown, used, truncated=truncated, scope=scope))
    body = text.rstrip("\n")
    if truncated:
        body += "\n" + _note(
            f"cut here: project instructions are limited to project_doc_max_bytes; the rest "
            f"of {shown} was not included (read the file if you need it)"
        )
    label = ' scope="global"' if scope == "global" else ""
    budget.sections.append(f'<instructions path="{shown}"{label}>\n{body}\n</instructions>')


def _target(path: Path, root: Path | None) -> tuple[Path, str | None]:
    """The path to open, or why the file is not read (a project symlink out of `root`)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return path, f"cannot be read: {exc.strerror or type(exc).__name__}"
    if not stat.S_ISLNK(info.st_mode):
        return path, None if stat.S_ISREG(info.st_mode) else "not a regular file"
    real = Path(os.path.realpath(path))
    if root is not None and real != root and root not in real.parents:
        return path, "a symlink to a file outside the project (not followed)"
    return real, None


class _NotRegular(Exception):
    pass


def _read_regular(path: Path, limit: int, *, follow: bool) -> bytes:
    """At most `limit` bytes of `path`, which must be a regular file (see the invariants).
    Without `follow`, a symlink swapped in since the `lstat` is refused (`O_NOFOLLOW`)."""
    fd = os.open(path, _OPEN_FLAGS | (0 if follow else os.O_NOFOLLOW))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular()
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _skip(budget: _Budget, shown: str, scope: Scope, why: str) -> None:
    budget.files.append(DocFile(shown, 0, skipped=why, scope=scope))
    budget.sections.append(_note(f"{shown} skipped: {why}"))


def _note(text: str) -> str:
    return f"[Cody: {text}.]"
