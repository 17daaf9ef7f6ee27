"""Which language servers a project gets: the built-ins whose program is installed, plus
`[lsp.<name>]` from the configuration (README "Language servers").

Invariants:
- No pygls here: deciding whether a file has a server is cheap (an extension lookup), so
  the pool (lsp/pool.py, which imports pygls) loads only on the first edit of such a file.
- A built-in server is offered only when its program is found (PATH, else next to the
  daemon's own interpreter: a virtualenv's `bin`); `pyright` only when `basedpyright` is not
  (one type checker per file). A configured table changes only the keys it sets.
- Only a trusted project's configuration can set a command (config/loader.py drops it
  otherwise), so `command` here is the user's or a trusted project's choice.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config.model import BUILTIN_LSP_SERVERS, LspConfig, LspServerConfig

__all__ = ["BUILTINS", "ServerSpec", "find_root", "language_id", "locate", "server_specs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSpec:
    name: str
    command: tuple[str, ...]
    """The argv as configured; `program` is where its first word was found."""
    extensions: tuple[str, ...]
    root_markers: tuple[str, ...] = ()
    init_options: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    builtin: bool = True
    program: str | None = None
    """The resolved path of `command[0]` (None: not found)."""

    @property
    def found(self) -> bool:
        return self.program is not None

    def argv(self) -> list[str]:
        assert self.program is not None
        return [self.program, *self.command[1:]]

    def handles(self, path: Path) -> bool:
        return path.name.endswith(self.extensions)


_PY = (".py", ".pyi")
_PY_ROOTS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")
_TS = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")

BUILTINS: dict[str, ServerSpec] = {
    "ruff": ServerSpec(
        name="ruff",
        command=("ruff", "server"),
        extensions=_PY,
        root_markers=("pyproject.toml", "ruff.toml", ".ruff.toml"),
    ),
    "basedpyright": ServerSpec(
        name="basedpyright",
        command=("basedpyright-langserver", "--stdio"),
        extensions=_PY,
        root_markers=("pyrightconfig.json", *_PY_ROOTS),
        # basedpyright's own default ("recommended") reports every unknown type; a
        # project's pyproject.toml / pyrightconfig.json still wins over this.
        settings={"basedpyright": {"analysis": {"typeCheckingMode": "standard"}}},
    ),
    "pyright": ServerSpec(
        name="pyright",
        command=("pyright-langserver", "--stdio"),
        extensions=_PY,
        root_markers=("pyrightconfig.json", *_PY_ROOTS),
    ),
    "typescript": ServerSpec(
        name="typescript",
        command=("typescript-language-server", "--stdio"),
        extensions=_TS,
        root_markers=("tsconfig.json", "jsconfig.json", "package.json"),
    ),
    "gopls": ServerSpec(
        name="gopls", command=("gopls",), extensions=(".go",), root_markers=("go.work", "go.mod")
    ),
    "rust-analyzer": ServerSpec(
        name="rust-analyzer",
        command=("rust-analyzer",),
        extensions=(".rs",),
        root_markers=("Cargo.toml",),
    ),
}
assert tuple(BUILTINS) == BUILTIN_LSP_SERVERS

_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".rb": "ruby",
    ".lua": "lua",
}


def language_id(path: Path) -> str:
    """The LSP language id of a file (its extension without the dot when not known)."""
    return _LANGUAGES.get(path.suffix, path.suffix.lstrip(".") or "plaintext")


def locate(program: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """Where `program` is: a path (relative to `cwd`) when it has a slash, else on PATH,
    else next to the daemon's interpreter (the virtualenv Cody runs from)."""
    if "/" in program:
        path = Path(os.path.expanduser(program))
        path = path if path.is_absolute() else cwd / path
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is not None:
        return found
    beside = Path(sys.executable).parent / program
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def server_specs(config: LspConfig, env: Mapping[str, str], cwd: Path) -> list[ServerSpec]:
    """The enabled servers for a project, built-ins first; an entry's `program` is None when
    its program was not found (it is listed, for `cody-client doctor`, but never started).
    Reads the file system (PATH lookups): call it off the event loop."""
    if not config.enabled:
        return []
    tables = config.servers()
    specs: list[ServerSpec] = []
    for name, builtin in BUILTINS.items():
        table = tables.get(name)
        if table is not None and not table.enabled:
            continue
        specs.append(_merged(builtin, table))
    for name, table in tables.items():
        if name in BUILTINS or not table.enabled:
            continue
        if table.command is None or table.extensions is None:
            continue  # the loader reports it
        specs.append(
            _merged(ServerSpec(name=name, command=(), extensions=(), builtin=False), table)
        )
    resolved = [
        replace(spec, program=locate(spec.command[0], env, cwd) if spec.command else None)
        for spec in specs
    ]
    if any(spec.name == "basedpyright" and spec.found for spec in resolved):
        resolved = [spec for spec in resolved if spec.name != "pyright"]
    return resolved


def _merged(base: ServerSpec, table: LspServerConfig | None) -> ServerSpec:
    if table is None:
        return base
    return ServerSpec(
        name=base.name,
        command=tuple(table.command) if table.command is not None else base.command,
        extensions=tuple(table.extensions) if table.extensions is not None else base.extensions,
        root_markers=(
            tuple(table.root_markers) if table.root_markers is not None else base.root_markers
        ),
        init_options=table.init_options if table.init_options is not None else base.init_options,
        settings=table.settings if table.settings is not None else base.settings,
        env={**base.env, **table.env},
        builtin=base.builtin and table.command is None,
    )


def find_root(path: Path, cwd: Path, markers: tuple[str, ...]) -> Path:
    """The project root of `path` for a server: the nearest directory from the file's up to
    the session's `cwd` holding one of `markers`, else `cwd` itself."""
    directory = path.parent
    while directory == cwd or cwd in directory.parents:
        if any((directory / marker).exists() for marker in markers):
            return directory
        if directory == cwd:
            break
        directory = directory.parent
    return cwd
