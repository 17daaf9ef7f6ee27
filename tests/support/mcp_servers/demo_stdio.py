"""`python demo_stdio.py`: the demo MCP server over stdio (see demo_tools.py).

Writes one line to stderr on start, as real servers often do, to show that the
client keeps stderr off its own channels.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root

from tests.support.mcp_servers.demo_tools import build_server  # noqa: E402

if __name__ == "__main__":
    print("demo server starting", file=sys.stderr, flush=True)
    build_server().run("stdio")
