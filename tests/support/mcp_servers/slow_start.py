"""`python slow_start.py SECONDS`: the demo MCP server, after sleeping SECONDS before it serves."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root

from tests.support.mcp_servers.demo_tools import build_server  # noqa: E402

if __name__ == "__main__":
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
    build_server().run("stdio")
