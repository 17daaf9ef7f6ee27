"""`grepFiles`: search file contents with a regular expression, ripgrep or pure Python.

Invariants (both engines; `CODY_GREP=python` forces the fallback, `CODY_GREP=rg` requires
ripgrep, anything else uses ripgrep when it is on PATH):
- Same files: those `ignore.walk_files` yields (gitignore-aware, hidden and symlinked
  entries skipped, `include` as ripgrep's `--glob`), minus binary files (any NUL byte)
  and files over `MAX_FILE_BYTES`. A file given as `path` is searched whatever the ignore
  rules and `include` say, unless it is binary or too large (the output says so).
- Same pattern meaning: `grep_regex.translate` defines the accepted subset and rebuilds
  the pattern for each engine; lines are split on `\\n` and a trailing `\\r` is dropped.
- Same output: `path:line:text`, paths relative to the searched directory (the file name
  when `path` is a file), sorted by path (bytewise, component by component, as
  `rg --sort path`) then line number; at most `MAX_MATCHES` lines, each cut after
  `MAX_LINE_CHARS` characters, with a note when either cap applied; "No matches." if none.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import signal
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..policy.sandbox import resolve_path
from .base import PathRead, Tool, ToolContext, ToolError, ToolResult
from .grep_regex import PatternError, TranslatedPattern, translate
from .ignore import GlobError, Override, walk_files

__all__ = ["ENGINE_ENV", "GrepFilesArgs", "GrepFilesTool"]

MAX_MATCHES = 200
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 10 * 1024 * 1024
ENGINE_ENV = "CODY_GREP"
_RG_LINE_LIMIT = 64 * 1024 * 1024
"""Longest JSON line read from ripgrep (a matching line of a file at the size limit)."""


class GrepFilesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    pattern: str = Field(
        min_length=1,
        description="Regular expression to search for, matched against each line (Rust "
        "regex syntax: no look-around or backreferences; (?i) for case-insensitive).",
    )
    path: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None,
        description="File or directory to search; relative paths are resolved against the "
        "session's working directory (the default).",
    )
    include: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.py`, `*.{ts,tsx}` or "
        "`src/**/*.ts` (a glob without `/` matches file names at any depth).",
    )


@dataclass
class _Hit:
    path: bytes
    line: int
    text: str


@dataclass
class _Outcome:
    hits: list[_Hit] = field(default_factory=list)
    truncated: bool = False
    binary: bool = False
    """A file searched was binary (reported only when `path` names that file)."""


class GrepFilesTool(Tool[GrepFilesArgs]):
    name = "grepFiles"
    description = (
        "Search file contents for a regular expression, line by line. Returns matching "
        "lines as `path:line:text` (paths relative to the searched directory), sorted by "
        "path and line, at most "
        f"{MAX_MATCHES}. Respects .gitignore/.ignore files and skips hidden, binary and "
        "very large files. Use `include` to limit the search to files matching a glob."
    )
    kind = "search"
    requires_approval = False
    args_model = GrepFilesArgs

    def title(self, args: GrepFilesArgs) -> str:
        return f"Grep {args.pattern} in {args.path or '.'}"

    def path_reads(self, args: GrepFilesArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        root = resolve_path(os.path.expanduser(args.path or "."), ctx.cwd)
        return (PathRead(root, contents_below=True),)

    async def run(self, args: GrepFilesArgs, ctx: ToolContext) -> ToolResult:
        try:
            pattern = translate(args.pattern)
        except PatternError as exc:
            raise ToolError(f"invalid pattern {args.pattern!r}: {exc}") from None
        override = None
        if args.include is not None:
            try:
                override = Override(args.include)
            except GlobError as exc:
                raise ToolError(f"invalid include glob: {exc}") from None
        target, is_dir, size = await asyncio.to_thread(_locate, args.path, ctx.cwd)
        rg = _ripgrep()
        engine = "python" if rg is None else "ripgrep"
        if not is_dir and size > MAX_FILE_BYTES:
            large = f"{target.name} is larger than {MAX_FILE_BYTES} bytes; not searched"
            return _result(target, _Outcome(), engine, note=large)
        if rg is not None:
            outcome = await _run_rg(rg, pattern.rust, target, is_dir, args.include)
        else:
            _python_regex(pattern)  # refuse before starting a thread
            outcome = await asyncio.to_thread(_search_python, pattern, target, is_dir, override)
        note = None
        if outcome.binary and not is_dir:
            note = f"{target.name} is a binary file; not searched"
        return _result(target, outcome, engine, note=note)


def _locate(path: str | None, cwd: Path) -> tuple[Path, bool, int]:
    """The resolved search target, whether it is a directory, and its size."""
    target = resolve_path(os.path.expanduser(path or "."), cwd)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise ToolError(f"path not found: {path} ({target})") from None
    except OSError as exc:
        raise ToolError(f"cannot search {target}: {exc.strerror or exc}") from None
    return target, stat.S_ISDIR(info.st_mode), info.st_size


def _ripgrep() -> str | None:
    """The ripgrep binary to use, or None for the Python fallback (see `ENGINE_ENV`)."""
    choice = os.environ.get(ENGINE_ENV, "").strip().lower()
    if choice == "python":
        return None
    found = shutil.which("rg")
    if found is None and choice in ("rg", "ripgrep"):
        raise ToolError(f"{ENGINE_ENV}={choice} but ripgrep (rg) is not on PATH")
    return found


def _python_regex(pattern: TranslatedPattern) -> re.Pattern[str]:
    if pattern.python is None:
        raise ToolError(
            f"{pattern.python_problem} (grepFiles is using its Python fallback: ripgrep is "
            f"not installed or {ENGINE_ENV}=python). Rewrite the pattern without it."
        )
    return re.compile(pattern.python, re.MULTILINE)


def _clip(line: str) -> str:
    line = line.removesuffix("\n").removesuffix("\r")
    if len(line) > MAX_LINE_CHARS:
        cut = len(line) - MAX_LINE_CHARS
        return f"{line[:MAX_LINE_CHARS]}... [line cut: {cut} more characters]"
    return line


def _sort_key(hit: _Hit) -> tuple[list[bytes], int]:
    return hit.path.split(b"/"), hit.line


def _result(target: Path, outcome: _Outcome, engine: str, *, note: str | None) -> ToolResult:
    hits = sorted(outcome.hits, key=_sort_key)
    truncated = outcome.truncated or len(hits) > MAX_MATCHES
    hits = hits[:MAX_MATCHES]
    lines = [f"{h.path.decode('utf-8', 'replace')}:{h.line}:{h.text}" for h in hits]
    if not lines:
        lines.append("No matches.")
    if note:
        lines.append(f"({note}.)")
    if truncated:
        lines.append(
            f"\n[Showing the first {MAX_MATCHES} matching lines; there are more. Narrow the "
            "pattern, path or include to see the rest.]"
        )
    return ToolResult(
        output="\n".join(lines),
        raw_output={
            "path": str(target),
            "matches": len(hits),
            "truncated": truncated,
            "engine": engine,
        },
    )


# --- the Python fallback ---------------------------------------------------------------


def _search_python(
    pattern: TranslatedPattern, target: Path, is_dir: bool, override: Override | None
) -> _Outcome:
    regex = _python_regex(pattern)
    single_line = pattern.single_line
    if is_dir:
        files: Any = (
            (rel, os.path.join(target, rel))
            for rel in walk_files(target, override=override, max_filesize=MAX_FILE_BYTES)
        )
    else:
        files = [(target.name, str(target))]
    outcome = _Outcome()
    for rel, full in files:
        try:
            with open(full, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError:
            continue
        if b"\0" in data:
            outcome.binary = True
            continue
        text = data.decode("utf-8", errors="replace")
        # A line that matches alone also matches inside the whole text (MULTILINE, no
        # whole-text anchors), so this pre-check is sound; it is only used when the pattern
        # cannot match `\n`, so it cannot backtrack across lines either.
        if single_line and regex.search(text) is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        path = os.fsencode(rel)
        for number, line in enumerate(lines, 1):
            if regex.search(line) is not None:
                outcome.hits.append(_Hit(path, number, _clip(line)))
        if len(outcome.hits) > MAX_MATCHES:
            outcome.truncated = True
            break
    return outcome


# --- ripgrep ---------------------------------------------------------------------------


async def _read_line(stream: asyncio.StreamReader) -> bytes:
    try:
        return await stream.readline()
    except ValueError:  # longer than _RG_LINE_LIMIT (LimitOverrunError is a ValueError)
        raise ToolError("ripgrep printed a line too long to read; narrow the search") from None


def _rg_bytes(value: dict[str, Any]) -> bytes:
    """Decode ripgrep's JSON `{"text": ...}` / `{"bytes": base64}` value."""
    if "bytes" in value:
        return base64.b64decode(value["bytes"])
    return str(value.get("text", "")).encode("utf-8", errors="surrogateescape")


async def _run_rg(
    rg: str, pattern: str, target: Path, is_dir: bool, include: str | None
) -> _Outcome:
    cwd, operand = (target, ".") if is_dir else (target.parent, target.name)
    argv = [
        rg,
        "--json",
        "--no-config",
        "--no-require-git",
        "--no-ignore-global",
        "--no-messages",
        "--sort=path",
        "--encoding=none",
        f"--max-filesize={MAX_FILE_BYTES}",
    ]
    if include is not None:
        argv.append(f"--glob={include}")
    argv += ["--regexp", pattern, "--", operand]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=_RG_LINE_LIMIT,
        )
    except OSError as exc:
        raise ToolError(f"cannot run ripgrep ({rg}): {exc}") from None
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.create_task(proc.stderr.read())
    outcome = _Outcome()
    pending: list[_Hit] = []
    finished = False
    try:
        while line := await _read_line(proc.stdout):
            event = json.loads(line)
            data = event.get("data", {})
            kind = event.get("type")
            if kind == "match":
                path = _rg_bytes(data["path"]).removeprefix(b"./")
                text = _rg_bytes(data["lines"]).decode("utf-8", errors="replace")
                pending.append(_Hit(path, int(data["line_number"]), _clip(text)))
            elif kind == "end":
                if data.get("binary_offset") is None:
                    outcome.hits += pending
                else:
                    outcome.binary = True
                pending = []
                if len(outcome.hits) > MAX_MATCHES:
                    outcome.truncated = True
                    break
            elif kind == "summary":
                finished = True
    finally:
        if proc.returncode is None:
            # os.kill, not proc.kill(): Popen.kill() polls first, which can reap the child
            # behind asyncio's child watcher. Until it is reaped the pid cannot be reused.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
        stderr = (await errors).decode("utf-8", errors="replace").strip()
    if not finished and not outcome.truncated:
        raise ToolError(f"ripgrep failed: {stderr or f'exit status {proc.returncode}'}")
    return outcome
