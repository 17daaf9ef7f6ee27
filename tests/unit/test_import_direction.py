"""The layers of docs/architecture.md hold: each package imports only the ones below it.

Read from the source (AST), so a lazy import inside a function counts as much as one at the
top of a module: a layer that needs another only "sometimes" still depends on it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAEMON = REPO / "daemon" / "cody_daemon"
PROTOCOL = REPO / "protocol" / "cody_protocol"
CLIENT = REPO / "clients" / "cody_client"

ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "errors": set(),
    "ids": set(),
    "validation": {"errors"},
    "config": {"errors", "validation", "core"},
    "policy": {"core", "errors", "config"},
    "store": {"core", "errors", "ids"},
    "providers": {"core", "config", "errors", "ids", "__init__"},
    "tools": {"core", "config", "policy", "errors", "ids", "__init__"},
    "history": {"core", "errors", "ids", "store"},
    "backends": {"core", "config", "errors", "ids", "policy"},
    # Language servers: pygls' LSP client; launched in the exec sandbox (policy). The engine
    # reaches it only through its CodeServers port, which app.py fills (docs/architecture.md).
    "lsp": {"core", "config", "errors", "policy"},
    "engine": {
        "core",
        "config",
        "errors",
        "ids",
        "policy",
        "providers",
        "store",
        "tools",
        "backends",
        "history",
    },
    "rpc": {"engine", "errors", "validation", "config", "core", "ids", "app", "__init__"},
}
"""Which top-level parts of cody_daemon each part may import (the layer diagram)."""

PYGLS = {"pygls", "lsprotocol"}
PYGLS_USERS = {"rpc", "cli", "lsp"}
"""rpc/ serves JSON-RPC with pygls; lsp/ drives language servers with pygls' LSP client."""


def _part_of(path: Path) -> str:
    relative = path.relative_to(DAEMON)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _imports(path: Path) -> list[tuple[str, int]]:
    """(absolute dotted module, line) for every import in `path`, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(REPO / path.relative_to(REPO).parts[0]).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((module, node.lineno))
    return found


def _daemon_violations() -> list[str]:
    problems: list[str] = []
    for path in sorted(DAEMON.rglob("*.py")):
        part = _part_of(path)
        for module, line in _imports(path):
            top = module.split(".")[0]
            where = f"{path.relative_to(REPO)}:{line} imports {module}"
            if top in PYGLS and part not in PYGLS_USERS:
                problems.append(f"{where} (only rpc/ and cli.py may use pygls)")
            if top in {"cody_client"}:
                problems.append(f"{where} (the daemon never imports the client)")
            if top != "cody_daemon" or part not in ALLOWED:
                continue
            pieces = module.split(".")
            target = pieces[1] if len(pieces) > 1 else "__init__"
            if target != part and target not in ALLOWED[part]:
                problems.append(f"{where} ({part} may import only {sorted(ALLOWED[part])})")
    return problems


def test_daemon_layers_import_only_downwards() -> None:
    assert _daemon_violations() == []


@pytest.mark.parametrize("root", [PROTOCOL], ids=["cody_protocol"])
def test_protocol_models_import_neither_daemon_nor_client(root: Path) -> None:
    bad = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in sorted(root.rglob("*.py"))
        for module, line in _imports(path)
        if module.split(".")[0] in {"cody_daemon", "cody_client", "pygls", "lsprotocol"}
    ]
    assert bad == []


def test_the_checker_resolves_relative_imports() -> None:
    """The rule is not vacuous: relative imports resolve to the layer they name."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in DAEMON.rglob("*.py"):
        for module, _line in _imports(path):
            if module.startswith("cody_daemon."):
                edges[_part_of(path)].add(module.split(".")[1])
    assert "providers" in edges["engine"]  # resolution of relative imports works
    assert "engine" not in edges["providers"]


def test_the_engine_reaches_language_servers_only_through_its_port() -> None:
    """No engine module imports lsp/ (or pygls): app.py passes `CodeServers` in EngineDeps."""
    assert "lsp" not in ALLOWED["engine"] and "lsp" not in ALLOWED["tools"]
    engine = [
        module
        for path in (DAEMON / "engine").rglob("*.py")
        for module, _line in _imports(path)
        if ".lsp" in module or module.split(".")[0] in PYGLS
    ]
    assert engine == []
