"""Real MCP servers nobody here wrote, pinned, for the MCP e2e tests.

- `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`
  (npm), pinned in tests/mcp-servers/package-lock.json: `everything()` / `filesystem()`
  return the argv that starts one over stdio, running `npm ci` in tests/mcp-servers first
  when it is missing or at another version;
- `mcp-server-git` (PyPI), pinned in the dev group of pyproject.toml (uv.lock): `git_server()`.

Without node/npm (or the git server) a test skips on a developer's machine and fails under
`CI=true` (CI installs them). Nothing here needs the network once installed: the servers run
offline on stdio.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["SERVERS_DIR", "everything", "filesystem", "git_server"]

SERVERS_DIR = Path(__file__).resolve().parents[1] / "mcp-servers"
_EVERYTHING = "@modelcontextprotocol/server-everything"
_FILESYSTEM = "@modelcontextprotocol/server-filesystem"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def _pinned(package: str) -> str:
    manifest = json.loads((SERVERS_DIR / "package.json").read_text(encoding="utf-8"))
    version: str = manifest["dependencies"][package]
    return version


def _installed(package: str) -> str | None:
    manifest = SERVERS_DIR / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return None
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def _node() -> str:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        _unavailable("node and npm are not on PATH (needed for the real npm MCP servers)")
        raise AssertionError("unreachable")
    if all(_installed(p) == _pinned(p) for p in (_EVERYTHING, _FILESYSTEM)):
        return node
    install = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=SERVERS_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if install.returncode != 0:
        pytest.fail(f"npm ci failed in {SERVERS_DIR}:\n{install.stdout}\n{install.stderr}")
    return node


def everything() -> list[str]:
    """`node .../server-everything/dist/index.js stdio`."""
    node = _node()
    return [node, str(SERVERS_DIR / "node_modules" / _EVERYTHING / "dist" / "index.js"), "stdio"]


def filesystem(*directories: Path) -> list[str]:
    """`node .../server-filesystem/dist/index.js [dirs]` (without dirs it takes the roots)."""
    node = _node()
    script = SERVERS_DIR / "node_modules" / _FILESYSTEM / "dist" / "index.js"
    return [node, str(script), *(str(d) for d in directories)]


def git_server(repository: Path | None = None) -> list[str]:
    """`mcp-server-git [--repository DIR]` from the dev group (the venv's own script)."""
    script = Path(sys.executable).parent / "mcp-server-git"
    if not script.exists():
        _unavailable("mcp-server-git is not installed (uv sync installs the dev group)")
    return [str(script), *(["--repository", str(repository)] if repository else [])]
