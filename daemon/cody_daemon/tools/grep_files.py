"""`grepFiles`: search file contents with a regular expression, using ripgrep.

Invariants:
- ripgrep is the only engine (see tools/ripgrep.py: where the binary comes from, and why
  no pattern can block the daemon or outlive its call). The pattern is Rust regex syntax,
  handed to ripgrep as given; a pattern ripgrep refuses is a ToolError quoting its reason.
- Files: those ripgrep searches with `--no-require-git --no-ignore-global` (gitignore-aware,
  `.ignore`/`.rgignore` too; hidden and symlinked entries skipped; `include` as `--glob`),
  minus binary files and files over `MAX_FILE_BYTES`. A file given as `path` is searched
  whatever the ignore rules and `include` say, unless it is binary, too large or a device
  (the output says so).
- Lines are split on `\\n`; a trailing `\\r` is not shown (and `$` does not match before it).
- Output: `path:line:text`, paths relative to the searched directory (the file name when
  `path` is a file), sorted by path (`rg --sort path`: bytewise, component by component)
  then line number; at most `MAX_MATCHES` lines, each cut after `MAX_LINE_CHARS`
  characters, with a note when either cap applied; "No matches." if none.
- Time: the engine's per-tool limit (`[tools.grepFiles] timeout_s`) bounds a search; a
  cancelled or timed-out search's ripgrep process group is killed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from cody_protocol.updates import ToolCallLocation
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..policy.sandbox import resolve_path
from .base import PathRead, Tool, ToolContext, ToolError, ToolFacts, ToolResult, location
from .ripgrep import read_line, rg_error, running_rg

__all__ = ["GrepFilesArgs", "GrepFilesTool"]

MAX_MATCHES = 200
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 10 * 1024 * 1024


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
    is_dir: bool = True
    """The search ran over a directory (hit paths are relative to it)."""


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
    facts = ToolFacts(changes="nothing", files="read")
    args_model = GrepFilesArgs

    def title(self, args: GrepFilesArgs) -> str:
        return f"Grep {args.pattern} in {args.path or '.'}"

    def path_reads(self, args: GrepFilesArgs, ctx: ToolContext) -> tuple[PathRead, ...]:
        root = resolve_path(os.path.expanduser(args.path or "."), ctx.cwd)
        return (PathRead(root, contents_below=True),)

    def locations(self, args: GrepFilesArgs, cwd: Path) -> list[ToolCallLocation]:
        return [location(resolve_path(os.path.expanduser(args.path or "."), cwd))]

    async def run(self, args: GrepFilesArgs, ctx: ToolContext) -> ToolResult:
        target, kind, size = await asyncio.to_thread(_locate, args.path, ctx.cwd)
        if kind == "device":
            raise ToolError(f"{target} is a device, not a file; not searched")
        if kind == "file" and size > MAX_FILE_BYTES:
            large = f"{target.name} is larger than {MAX_FILE_BYTES} bytes; not searched"
            return _result(target, _Outcome(), note=large)
        outcome = await _run_rg(args.pattern, target, kind == "dir", args.include)
        note = None
        if outcome.binary and kind != "dir":
            note = f"{target.name} is a binary file; not searched"
        return _result(target, outcome, note=note)


def _locate(path: str | None, cwd: Path) -> tuple[Path, str, int]:
    """The resolved search target, its kind (`dir`, `file` or `device`) and its size.

    `file` includes pipes: ripgrep reads them as a stream (the time limit still applies).
    """
    target = resolve_path(os.path.expanduser(path or "."), cwd)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise ToolError(f"path not found: {path} ({target})") from None
    except OSError as exc:
        raise ToolError(f"cannot search {target}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        return target, "dir", info.st_size
    if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) or stat.S_ISSOCK(info.st_mode):
        return target, "device", 0
    return target, "file", info.st_size


def _clip(line: str) -> str:
    line = line.removesuffix("\n").removesuffix("\r")
    if len(line) > MAX_LINE_CHARS:
        cut = len(line) - MAX_LINE_CHARS
        return f"{line[:MAX_LINE_CHARS]}... [line cut: {cut} more characters]"
    return line


def _sort_key(hit: _Hit) -> tuple[list[bytes], int]:
    return hit.path.split(b"/"), hit.line


def _result(target: Path, outcome: _Outcome, *, note: str | None) -> ToolResult:
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
    # Every hit shown, as an absolute path and its line (ripgrep ran in `target` for a
    # directory, in its parent for a file, and printed the path relative to there).
    base = target if outcome.is_dir else target.parent
    return ToolResult(
        output="\n".join(lines),
        raw_output={
            "path": str(target),
            "matches": len(hits),
            "truncated": truncated,
        },
        locations=[location(base / hit.path.decode("utf-8", "replace"), hit.line) for hit in hits],
    )


# --- ripgrep ---------------------------------------------------------------------------


def _rg_bytes(value: dict[str, Any]) -> bytes:
    """Decode ripgrep's JSON `{"text": ...}` / `{"bytes": base64}` value."""
    if "bytes" in value:
        return base64.b64decode(value["bytes"])
    return str(value.get("text", "")).encode("utf-8", errors="surrogateescape")


async def _run_rg(pattern: str, target: Path, is_dir: bool, include: str | None) -> _Outcome:
    cwd, operand = (target, ".") if is_dir else (target.parent, target.name)
    argv = [
        "--json",
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
    outcome = _Outcome(is_dir=is_dir)
    pending: list[_Hit] = []
    finished = False
    async with running_rg(argv, cwd) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.ensure_future(proc.stderr.read())
        try:
            while line := await read_line(proc.stdout):
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
            if not finished and not outcome.truncated:
                await proc.wait()
                stderr = await errors
                raise ToolError(_explain(pattern, include, rg_error(stderr, proc.returncode)))
        finally:
            errors.cancel()
    return outcome


def _explain(pattern: str, include: str | None, message: str) -> str:
    if "regex parse error" in message or "not allowed in a regex" in message:
        return f"invalid pattern {pattern!r}: {message}"
    if include is not None and "glob" in message:
        return f"invalid include glob {include!r}: {message}"
    return f"ripgrep failed: {message}"
