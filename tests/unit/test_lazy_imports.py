"""Heavy modules load only when first used (lazy imports keep startup low: bench/README.md)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("httpx", "trafilatura", "mcp", "prompt_toolkit", "rich", "lxml")


def loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    modules = set(result.stdout.split())
    return {name for name in HEAVY if name in modules}


def test_starting_the_daemon_loads_no_heavy_module() -> None:
    assert loaded_after("import cody_daemon.app, cody_daemon.cli") == set()


def test_the_client_library_loads_no_terminal_ui() -> None:
    assert loaded_after("import cody_client.client, cody_client.cli") == set()
